"""Golden outputs compared across machine kinds: the bound they keep, and the summary a
stored reference keeps of them.

On the machine kind that recorded them (environment.machine_kind), golden outputs are
compared bit for bit. On another kind the BLAS kernels, NumPy's SIMD target and numba's
vector width order sums differently, so bits move, by as much as the case's own
conditioning lets them. That is measured by the case itself: its gap, the largest
|device-precision golden - fp64 golden| over finite elements, is how far rounding at the
device's precision moves it (the smaller of the two kinds' gaps: a moved golden does not
widen its own bound). With s the largest |fp64 golden| over finite elements, an output
keeps, element by element:

- device-precision golden: |here - reference| <= 4 ulp of its dtype at s (int8: 4 steps)
  + 2 gap;
- fp64 golden: |here - reference| <= 64 ulp of float64 at s + 2^-25 gap (16 times
  float64's epsilon over float32's, the device golden's working type);

and the same NaN and infinity positions. Measured on the pinned cases
(tests/golden/test_golden_pinned.py), each output of OpenBLAS's Sandybridge, Nehalem and
Katmai kernels against its Haswell kernels' element by element: at most 0.45 of its
bound (Katmai, the float16 overflow case's device golden: 16 ulp at s, its gap 15.8);
the fp64 golden moved up to 13 ulp of float64 at s, 3.9e5 on the overflow case.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: Elementwise bound terms (see the module docstring).
DEVICE_ULPS, DEVICE_GAPS = 4, 2.0
FP64_ULPS, FP64_GAP = 64, 2.0 ** -25
#: A summary's chunks and sampled elements per array.
CHUNKS, SAMPLES = 16, 48


def scale_and_gap(truth: np.ndarray, device: np.ndarray) -> tuple[float, float]:
    """(s, gap) of one output: the largest |fp64 golden| and |device - fp64 golden| over
    the elements finite in both (0 where none is)."""
    t, d = np.asarray(truth, np.float64), np.asarray(device).astype(np.float64)
    fin = np.isfinite(t) & np.isfinite(d)
    if not fin.any():
        return 0.0, 0.0
    return float(np.abs(t[fin]).max()), float(np.abs(d[fin] - t[fin]).max())


def bound(dtype: np.dtype | None, scale: float, gap: float) -> float:
    """The largest |difference| an element may show between two machine kinds: `dtype`
    the device-precision golden's output dtype, None for the fp64 golden."""
    if dtype is None:
        return FP64_ULPS * float(np.finfo(np.float64).eps) * scale + FP64_GAP * gap
    dtype = np.dtype(dtype)
    ulp = 1.0 if dtype.kind in "iu" else float(ml_dtypes.finfo(dtype).eps) * scale
    return DEVICE_ULPS * ulp + DEVICE_GAPS * gap


def excess(here: np.ndarray, reference: np.ndarray, limit: float) -> str | None:
    """Why `here` is not within `limit` of `reference` element by element (shape, NaN or
    infinity positions, or the largest difference), or None when it is."""
    a, b = np.asarray(here).astype(np.float64), np.asarray(reference).astype(np.float64)
    if a.shape != b.shape:
        return f"shape {a.shape} against {b.shape}"
    for what, mask in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        if not np.array_equal(mask(a), mask(b)):
            return f"{what} at other positions ({int(mask(a).sum())} against {int(mask(b).sum())})"
    fin = np.isfinite(b)
    worst = float(np.abs(a[fin] - b[fin]).max()) if fin.any() else 0.0
    return None if worst <= limit else f"differs by up to {worst:.6g} (bound {limit:.6g})"


def summary(x: np.ndarray) -> dict[str, np.ndarray]:
    """What a stored reference keeps of an output, enough to bound-check another kind's:
    per chunk of its flat elements (CHUNKS of them) the NaN, +inf and -inf counts and the
    min, max and sum of its finite elements, and SAMPLES elements at fixed positions."""
    flat = np.asarray(x).astype(np.float64).reshape(-1)
    edges = np.linspace(0, flat.size, CHUNKS + 1).astype(np.int64)
    counts, stats = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        c = flat[lo:hi]
        fin = c[np.isfinite(c)]
        counts.append([np.isnan(c).sum(), np.isposinf(c).sum(), np.isneginf(c).sum()])
        stats.append([fin.min(), fin.max(), fin.sum()] if fin.size else [0.0, 0.0, 0.0])
    at = np.unique(np.linspace(0, max(flat.size - 1, 0), SAMPLES).astype(np.int64))
    return {"size": np.array([flat.size, *np.diff(edges)], np.int64),
            "counts": np.array(counts, np.int64).reshape(-1, 3),
            "stats": np.array(stats, np.float64).reshape(-1, 3),
            "samples": flat[at] if flat.size else np.zeros(0)}


def summary_excess(here: np.ndarray, reference: dict[str, np.ndarray], limit: float
                   ) -> str | None:
    """Why `here` cannot be within `limit` of the output `reference` summarises
    (`summary`), element by element, or None: the same size and non-finite counts per
    chunk, each chunk's min and max within `limit`, its sum within its element count
    times `limit`, and each sampled element within `limit`."""
    got = summary(here)
    if not np.array_equal(got["size"], reference["size"]):
        return f"{got['size'][0]} elements against {reference['size'][0]}"
    if not np.array_equal(got["counts"], reference["counts"]):
        return "NaN or infinity counts differ"
    a, b = got["samples"], reference["samples"]
    odd = ~np.isfinite(a) | ~np.isfinite(b)
    if not np.array_equal(a[odd], b[odd], equal_nan=True):
        return "sampled non-finite elements differ"
    fin = np.isfinite(a) & np.isfinite(b)
    per_element = [np.abs(got["stats"][:, :2] - reference["stats"][:, :2]).reshape(-1),
                   np.abs(got["stats"][:, 2] - reference["stats"][:, 2])
                   / np.maximum(reference["size"][1:], 1),
                   np.abs(a[fin] - b[fin])]
    worst = max((float(d.max()) for d in per_element if d.size), default=0.0)
    return None if worst <= limit else f"differs by up to {worst:.6g} (bound {limit:.6g})"
