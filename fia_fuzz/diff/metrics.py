"""Element-wise precision metrics of one output tensor against the fp64 golden.

Definitions follow ../shared/precision-standards.md "Metrics"; the policies in
`policies.py` only read these numbers, and every number is stored raw next to
the verdicts so a reader can re-judge. The golden is the unrounded fp64 truth
(`precision="fp64"`), so errors include the output dtype's own rounding.

Invalid rows (fia-semantics.md §3, §4: rows outside the valid length, fully
masked rows, S2 == 0) are 0 in attention_out and +inf in softmax_lse; they are
compared exactly, never by tolerance (standards "Notes"). They are rows, not
elements: a valid row can hold exact zeros (a one-hot softmax, logits ~1e13,
picking a value element that is 0), and an ulp there is a precision matter.
`invalid_rows` marks an attention_out row (last axis; one head's D for BSH)
invalid when the golden has it exactly 0 throughout and, when the golden's
softmax_lse is at hand, +inf for that row too: the golden's own marking.

Int8 outputs and float conditioning (`lsb_conditioning`). An int8 output is
the rounded post-quant of a float output; where the float attention is
ill-conditioned (a near-zero output from cancelling terms of ~1e36, a value
beyond the int8 range), the float result in the op's precision is itself
undetermined beyond 1 LSB of the output, and a sign flip takes it to the other
saturation end (255 LSB). The float dtype's own precision does the same on a
smaller scale: bf16 keeps 8 significant bits, as many as int8, so with
quant_scale2 spreading the output over the int8 range its rounding and the
bf16 flow's error reach 1 LSB. The differ cannot see the float noise floor of each
element directly (it depends on sum |p_j v_j|, inside the golden), but the
same-dtype golden realises it: it is the golden run in the device's precision
flow (standards §3 "same-dtype emulation", §4 "same-dtype reference"), so its
miss |b - g| at an element is that element's float noise floor in LSB. An
int8 element missing the fp64 truth by more than the threshold t (1 LSB;
vendor-fia's exactness 0.5; each 0.5 more when quant_offset2 makes the op
round twice) is *explained by float-level error* when the
same-dtype golden misses it by more than correct rounding alone would (0.5
LSB, 1 with quant_offset2), so it carries a float-level error itself, and the
device misses by no more than the same-dtype golden plus 1 LSB (the
rounding-tie allowance between two goldens of the same rounding order,
standards "Notes"). Such
elements make a verdict inconclusive instead of failing; any unexplained
element still fails. Without a same-dtype golden nothing is explained.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from fia_fuzz.diff.chunks import CHUNK, split, total
from fia_fuzz.numerics.blas import single_threaded_blas
from fia_fuzz.numerics.casts import cast_into
from fia_fuzz.numerics.narrow import nearest
from fia_fuzz.op.tensors import NUMPY_DTYPES

EPS = 1e-12
#: |g| below this is judged by absolute error in the thousandth rule (standards §1).
SMALL_VALUE = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -10, "float32": 2.0 ** -20}
SMALL_VALUE_ATOL = {"float16": 2.0 ** -16, "bfloat16": 2.0 ** -16, "float32": 2.0 ** -30}
#: The thousandth rule's t per output dtype (standards §1; fp32 uses ten-thousandth).
THOUSANDTH = {"float16": 1e-3, "bfloat16": 1e-3, "float32": 1e-4}
#: (rtol, atol) of the vendor FIA tests (standards §5); fp32 from the older torch_npu helper.
VENDOR_TOL = {"float16": (0.005, 2.5e-5), "bfloat16": (2.0 ** -7, 1e-4),
              "float32": (1e-4, 1e-4)}
#: (explicit mantissa bits, minimum normal exponent) for ULP sizes.
FLOAT_FORMAT = {"float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126)}
INT_RANGE = {"int8": (-128, 127)}
#: FA3's rounding-noise probe: 2 * max|(ref + 0.3 - 0.3) - ref| in the output dtype (standards §4).
FA_NOISE_SHIFT = 0.3


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round fp64 values to their nearest in `dtype` (numerics/narrow.py) and back to fp64."""
    if dtype in FLOAT_FORMAT:
        return nearest(x, NUMPY_DTYPES[dtype]).astype(np.float64)
    return x


@functools.cache
def _spacings(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(spacing, 1 / spacing) of `dtype` per fp64 biased exponent 0..2047 (powers of two).

    Biased exponent k holds |x| in [2^(k-1023), 2^(k-1022)) (k = 0: zero and fp64
    subnormals); the spacing is 2^(max(k - 1023, emin) - bits), the subnormal spacing
    below the normal range, and non-finite x (k = 2047) take that too. Both columns
    are exact, so x / spacing == x * (1 / spacing) bit for bit.
    """
    bits, emin = FLOAT_FORMAT[dtype]
    k = np.arange(2048)
    e = np.where(k == 2047, emin, np.maximum(k - 1023, emin)) - bits
    return np.ldexp(1.0, e), np.ldexp(1.0, -e)


def _biased_exponent(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The fp64 biased exponent (0..2047) of each element of contiguous float64 `x`
    (into int64 `out` when given)."""
    k = np.right_shift(x.view(np.int64), 52, out=out)
    return np.bitwise_and(k, 0x7FF, out=k)


def ulp(x: np.ndarray, dtype: str) -> np.ndarray:
    """Spacing of `dtype` at |x| (subnormal spacing below the normal range).

    The exponent comes from the fp64 bits, exact (log2 rounds up to the next
    integer just below a power of two, doubling the spacing there).
    """
    x = np.asarray(x, np.float64)
    return _spacings(dtype)[0][_biased_exponent(np.ascontiguousarray(x))].reshape(x.shape)


def _fa_noise(golden: np.ndarray, dtype: str) -> np.ndarray:
    """Per element FA3's rounding noise |round(round(g + 0.3) - 0.3) - round(g)| in `dtype`,
    0 where g or the noise is not finite (`fa_noise_floor` is twice its max)."""
    g = np.asarray(golden, np.float64)
    if dtype not in FLOAT_FORMAT or g.size == 0:
        return np.zeros(g.shape)
    # values beyond the dtype's range round to inf; they carry no rounding noise to measure
    with np.errstate(over="ignore", invalid="ignore"):
        r = _cast(g, dtype)
        noise = np.abs(_cast(_cast(r + FA_NOISE_SHIFT, dtype) - FA_NOISE_SHIFT, dtype) - r)
    noise[~np.isfinite(noise)] = 0.0
    return noise


def fa_noise_floor(golden: np.ndarray, dtype: str) -> float:
    """FA3's forward atol: twice the rounding noise of adding and removing 0.3 in `dtype`.

    The noise is a function of round(g) alone; a 16-bit dtype has at most 65536
    of those, so each distinct rounded value is probed once (the same numbers,
    far fewer casts than one probe per element).
    """
    noise = _FaNoise(dtype)
    noise.add(np.asarray(golden, np.float64))
    return noise.floor()


def _zero_rows(golden: np.ndarray, out_layout: str | None, num_heads: int | None
               ) -> np.ndarray:
    """Rows of the golden exactly 0 throughout: (..., rows) booleans, one per head for BSH."""
    g = np.asarray(golden)
    if out_layout == "BSH" and num_heads and g.ndim == 3 and g.shape[-1] % num_heads == 0:
        g = g.reshape(*g.shape[:-1], num_heads, -1)
    return np.all(g == 0, axis=-1)


#: Per output layout, the permutation taking softmax_lse's row axes ((B, N, S1) or
#: (T, N) for TND/NTD; fia-semantics.md §5) to attention_out's row axes.
LSE_ROW_ORDER = {"BNSD": (0, 1, 2), "BSND": (0, 2, 1), "BSH": (0, 2, 1), "NBSD": (1, 0, 2),
                 "TND": (0, 1), "NTD": (1, 0)}


def invalid_rows(golden_out: np.ndarray, golden_lse: np.ndarray | None = None,
                 out_layout: str | None = None, num_heads: int | None = None) -> np.ndarray:
    """Elements of attention_out in the rows the golden marks invalid (bool, out's shape).

    A row is the last axis (one head's D of BSH when `out_layout` and
    `num_heads` say so); it is invalid when the golden row is exactly 0 and,
    when `golden_lse` (B,N,S1,1 or T,N,1) maps onto the rows, its lse is +inf.
    Without lse an all-zero fp64 row is taken as invalid: a valid row is 0
    throughout only if every attended value row is, where a correct kernel is
    exact too.
    """
    g = np.asarray(golden_out)
    if g.ndim == 0 or g.size == 0:
        return np.zeros(g.shape, bool)
    dead = _zero_rows(g, out_layout, num_heads)
    order = LSE_ROW_ORDER.get(out_layout or "")
    if golden_lse is not None and order is not None:
        lse = np.asarray(golden_lse)
        if lse.ndim == len(order) + 1:
            inf_rows = np.transpose(lse[..., 0] == np.inf, order)
            if inf_rows.shape == dead.shape:
                dead = dead & inf_rows
    blocks = np.broadcast_to(dead[..., None], (*dead.shape, g.size // max(dead.size, 1)))
    return blocks.reshape(g.shape)


def _default_invalid(g: np.ndarray) -> np.ndarray:
    """+inf elements (lse) and all-zero rows of more than one element (attention_out)."""
    invalid = g == np.inf
    if g.ndim and g.shape[-1] > 1:
        invalid |= invalid_rows(g)
    return invalid


class Reference:
    """The golden side of `compare`: the truth and what depends on it alone.

    `judge` compares the device output and the same-dtype baseline with one
    truth (`compare_all`), which derives the truth-only per-element quantities
    (relative-error denominators, small values, ULP sizes, vendor tolerances,
    FA3's noise, RMS and norm) once per chunk for both. Arguments as `compare`'s.
    """

    def __init__(self, golden: np.ndarray, dtype: str, tol_dtype: str | None = None,
                 invalid: np.ndarray | None = None, log_scale: bool = False):
        tol = tol_dtype or dtype
        self.dtype, self.tol, self.log_scale = dtype, tol, log_scale
        g = np.asarray(golden, np.float64, order="C")  # read only: no copy of an fp64 truth
        self.g = g
        # a finite sum proves every element finite in one pass (values stay far below overflow)
        self.all_finite = bool(np.isfinite(np.sum(g))) or bool(self.finite.all())
        inv = (_default_invalid(g) if invalid is None
               else np.broadcast_to(np.asarray(invalid, bool), g.shape))
        self.invalid = np.ascontiguousarray(inv).reshape(-1)
        self.invalid_count = int(np.count_nonzero(self.invalid))

    @functools.cached_property
    def nan(self) -> np.ndarray:
        return np.isnan(self.g)

    @functools.cached_property
    def inf(self) -> np.ndarray:
        return np.isinf(self.g)

    @functools.cached_property
    def finite(self) -> np.ndarray:
        """The truth's finite elements (computed only when some element or actual is not)."""
        return ~(self.nan | self.inf)


def compare(actual: np.ndarray, golden: np.ndarray | Reference, dtype: str,
            tol_dtype: str | None = None, invalid: np.ndarray | None = None,
            log_scale: bool = False) -> dict[str, Any]:
    """Metrics of `actual` (stored as `dtype`) against `golden` (fp64 truth).

    `dtype` sets the ULP/LSB units; `tol_dtype` (default `dtype`) the dtype
    whose tolerances apply: thousandth t, small-value thresholds, vendor
    rtol/atol and FA3's rounding-noise floor. `invalid` marks the elements of
    invalid rows, compared exactly (`judge` passes `invalid_rows` for
    attention_out and lse == +inf for softmax_lse); by default +inf elements
    and all-zero rows of the golden. `log_scale` (softmax_lse) takes relative
    errors against max(|g|, 1) and has no small values: an lse is a log, its
    absolute error is the relative error of the softmax weights, and an lse
    near 0 (a row sum near 1) does not make that error relatively larger.
    `error_scale` is the golden's RMS (at least 1 for `log_scale`), the scale
    the policies' absolute-error floors are relative to. `golden` may be a
    `Reference` built with the same arguments.
    """
    ref = golden if isinstance(golden, Reference) else \
        Reference(golden, dtype, tol_dtype, invalid, log_scale)
    return compare_all([actual], ref)[0]


_FINITE_COUNTS: dict[str, Any] = {
    "nan_actual_only": 0, "nan_golden_only": 0, "inf_actual_only": 0, "inf_golden_only": 0,
    "nonfinite_mismatch": 0, "nonfinite_index": ""}


def compare_all(actuals: Sequence[np.ndarray], ref: Reference) -> list[dict[str, Any]]:
    """`compare` of each of `actuals` against `ref`, with one pass over the truth for all
    of them where both sides are finite."""
    g = ref.g.reshape(-1)
    outs: list[dict[str, Any]] = []
    flats: dict[int, np.ndarray] = {}
    for k, actual in enumerate(actuals):
        actual = np.asarray(actual)
        if actual.shape != ref.g.shape:
            outs.append({"shape_mismatch": True, "actual_shape": str(actual.shape),
                         "golden_shape": str(ref.g.shape)})
            continue
        flats[k] = actual.reshape(-1)
        out = {"shape_mismatch": False, "numel": int(actual.size), **_FINITE_COUNTS}
        out.update(_invalid_mismatch(flats[k], g, ref.invalid, ref.invalid_count,
                                     ref.g.shape))
        outs.append(out)
    if not g.size:
        for k in flats:
            outs[k].update(_nothing_finite(ref))
        return outs
    masked = list(flats)
    if ref.all_finite:  # assume the actuals finite too; their sums of squares tell
        with np.errstate(invalid="ignore", over="ignore"):
            errors = _errors(ref, g, [flats[k] for k in flats], None)
        masked = []
        for k, m in zip(flats, errors, strict=True):
            if np.isfinite(m.pop("a_sq")):
                outs[k].update(m)
            else:
                masked.append(k)
    for k in masked:
        outs[k].update(_masked(flats[k], ref))
    return outs


def _masked(flat: np.ndarray, ref: Reference) -> dict[str, Any]:
    """The metrics of an actual with non-finite elements on either side: the non-finite
    counts, and the errors over the elements finite on both."""
    a = flat.astype(np.float64)
    g_nan, g_inf = ref.nan.reshape(-1), ref.inf.reshape(-1)
    a_nan, a_inf = np.isnan(a), np.isinf(a)
    one_sided = (a_nan != g_nan) | (a_inf != g_inf) | (a_inf & g_inf & (a != ref.g.reshape(-1)))
    out: dict[str, Any] = {
        "nan_actual_only": int(np.count_nonzero(a_nan & ~g_nan)),
        "nan_golden_only": int(np.count_nonzero(g_nan & ~a_nan)),
        "inf_actual_only": int(np.count_nonzero(a_inf & ~g_inf)),
        "inf_golden_only": int(np.count_nonzero(g_inf & ~a_inf)),
        "nonfinite_mismatch": int(np.count_nonzero(one_sided)),
        "nonfinite_index": _index(np.flatnonzero(one_sided), ref.g.shape)}
    if out["nonfinite_mismatch"]:
        out.update(_nonfinite_classes(a, a_nan, a_inf, ref))
    both = ~(a_nan | a_inf) & ref.finite.reshape(-1)
    if not both.any():
        out.update(_nothing_finite(ref))
        return out
    m = _errors(ref, ref.g.reshape(-1)[both], [a[both]], both)[0]
    del m["a_sq"]
    out.update(m)
    return out


#: The ways an element's finiteness can differ from the truth's, in the order a signature
#: names the first present (a kernel swallowing the truth's NaN/Inf first).
NONFINITE_CLASSES = ("nan_to_finite", "inf_to_finite", "inf_sign", "inf_to_nan",
                     "nan_to_inf", "finite_to_nan", "finite_to_inf")


def _nonfinite_classes(a: np.ndarray, a_nan: np.ndarray, a_inf: np.ndarray, ref: Reference
                       ) -> dict[str, Any]:
    """Counts per NONFINITE_CLASSES (`nonfinite_<class>`) and `nonfinite_class`, the first
    present ('' for none): NaN must be NaN, Inf the same-signed Inf, finite finite (truth ->
    actual). Invalid rows are left out: their +inf lse marks the row, it is no arithmetic
    result (`invalid_mismatch` judges them)."""
    g = ref.g.reshape(-1)
    valid = ~ref.invalid
    g_nan, g_inf = ref.nan.reshape(-1) & valid, ref.inf.reshape(-1) & valid
    g_fin, a_fin = ~(g_nan | g_inf) & valid, ~(a_nan | a_inf)
    counts = {
        "nan_to_finite": g_nan & a_fin, "inf_to_finite": g_inf & a_fin,
        "inf_sign": g_inf & a_inf & (a != g), "inf_to_nan": g_inf & a_nan,
        "nan_to_inf": g_nan & a_inf, "finite_to_nan": g_fin & a_nan,
        "finite_to_inf": g_fin & a_inf}
    out: dict[str, Any] = {f"nonfinite_{k}": int(np.count_nonzero(counts[k]))
                           for k in NONFINITE_CLASSES}
    out["nonfinite_class"] = next((k for k in NONFINITE_CLASSES if out[f"nonfinite_{k}"]), "")
    return out


def _nothing_finite(ref: Reference) -> dict[str, Any]:
    """The error metrics when no element is finite on both sides (or there is none)."""
    out: dict[str, Any] = dict(
        max_abs=0.0, mean_abs=0.0, max_rel=0.0, mere=0.0, mare=0.0, mere_normal=0.0,
        mare_normal=0.0, rmse=0.0, cosine=1.0, golden_rms=0.0,
        error_scale=1.0 if ref.log_scale else 0.0, thousandth_share=0.0, hundredth_share=0.0,
        small_count=0, small_err_share=0.0, worst_index="", worst_actual=0.0,
        worst_golden=0.0, fa_noise=0.0)
    if ref.dtype in INT_RANGE:
        out.update(lsb_max=0.0, lsb_share_gt1=0.0)
        return out
    if ref.dtype in FLOAT_FORMAT:
        out.update(ulp_max=0.0, ulp_mean=0.0, ulp_share_gt1=0.0)
    if ref.tol in VENDOR_TOL:
        out.update(close_share=1.0, vendor_worst_ratio=0.0)
    return out


#: ndarray.max of a 1-D float64 array and np.dot without their Python wrappers (called per chunk)
_max, _dot = np.maximum.reduce, np.dot


class _Truth:
    """The truth-only quantities of one chunk of `gf` (work arrays reused chunk to chunk)."""

    def __init__(self, ref: Reference, size: int):
        self.log_scale = ref.log_scale
        #: |g| below this is a small value (none for log_scale: no |g| is below 0)
        self.small_limit = 0.0 if ref.log_scale else SMALL_VALUE.get(ref.tol, 2.0 ** -10)
        self.small, self.small_count = np.empty(size, bool), 0
        self.int_range = INT_RANGE.get(ref.dtype)
        self.inv_ulps = _spacings(ref.dtype)[1] if ref.dtype in FLOAT_FORMAT else None
        self.vendor = VENDOR_TOL.get(ref.tol) if self.int_range is None else None
        self.absg, self.denom, self.clipped, self.inv_ulp, self.close_bound = (
            np.empty(size) for _ in range(5))
        self.exponent = np.empty(size, np.int64)

    def load(self, gc: np.ndarray) -> float:
        """Derive the quantities of chunk `gc`; its sum of squares. `small_c`: its small
        values, None where it has none."""
        m = gc.size
        self.absg_c = np.abs(gc, out=self.absg[:m])
        self.small_c = None
        if self.small_limit:
            small = np.less(self.absg_c, self.small_limit, out=self.small[:m])
            count = int(np.count_nonzero(small))
            self.small_count += count
            self.small_c = small if count else None
        if self.int_range is not None:
            self.clipped_c = np.clip(gc, *self.int_range, out=self.clipped[:m])
        elif self.inv_ulps is not None:
            exponent = _biased_exponent(self.absg_c, self.exponent[:m])
            self.inv_ulp_c = np.take(self.inv_ulps, exponent, out=self.inv_ulp[:m],
                                     mode="clip")  # unbuffered; exponents are 0..2047
        if self.vendor is not None:
            self.close_c = np.multiply(self.absg_c, self.vendor[0], out=self.close_bound[:m])
            self.close_c += self.vendor[1]
        denom = np.add(self.absg_c, EPS, out=self.denom[:m])
        self.denom_c = np.maximum(denom, 1.0, out=denom) if self.log_scale else denom
        return float(_dot(gc, gc))


class _Errors:
    """One actual's running error metrics over the chunks (partial sums, maxima, counts)."""

    def __init__(self, size: int):
        self.a, self.err, self.rel, self.work = (np.empty(size) for _ in range(4))
        self.over_mask = np.empty(size, bool)
        self.sums: dict[str, list[float]] = {k: [] for k in ("a_sq", "e_sq", "ag", "err", "rel",
                                                             "rel_normal", "ulp")}
        self.best, self.worst, self.max_rel, self.mare_normal = -1.0, 0, 0.0, 0.0
        self.over, self.small_bad, self.lsb_max, self.lsb_gt1 = [0, 0], 0, 0.0, 0
        self.ulp_max, self.ulp_gt1, self.far, self.vendor_worst = 0.0, 0, 0, 0.0


def _errors(ref: Reference, gf: np.ndarray, afs: Sequence[np.ndarray],
            both: np.ndarray | None) -> list[dict[str, Any]]:
    """The error metrics of `compare` of each of `afs` (flat, all finite) against `gf` (the
    flat truth, of the elements `both` of the golden, None: all) chunk by chunk, plus
    `a_sq`, the sum of squares of the actual (finite exactly when every element is)."""
    tol, n = ref.tol, gf.size
    chunks = split(n)
    size = max(e - s for s, e in chunks)
    truth = _Truth(ref, size)
    runs = [_Errors(size) for _ in afs]
    ones = np.ones(size)
    g_sq: list[float] = []
    noise = _FaNoise(tol)
    bounds = (THOUSANDTH.get(tol, 1e-3), 10 * THOUSANDTH.get(tol, 1e-3))
    small_atol = SMALL_VALUE_ATOL.get(tol, 2.0 ** -16)
    with single_threaded_blas():  # OpenBLAS splits a long dot over threads: other bits
        for s, e in chunks:
            gc = gf[s:e]
            g_sq.append(truth.load(gc))
            noise.add(gc)
            for af, run in zip(afs, runs, strict=True):
                _chunk(af[s:e], gc, s, truth, run, truth.small_c, ones[:e - s], bounds,
                       small_atol)
    small_count = truth.small_count
    sum_sq = total(g_sq)
    rms, norm_g = float(np.sqrt(sum_sq / n)), float(np.sqrt(sum_sq))
    fa_noise = noise.floor()
    return [_finish(ref, run, af, gf, both, small_count, n, rms, norm_g, fa_noise)
            for af, run in zip(afs, runs, strict=True)]


def _chunk(ac: np.ndarray, gc: np.ndarray, start: int, truth: _Truth, run: _Errors,
           small_c: np.ndarray | None, ones: np.ndarray, bounds: tuple[float, float],
           small_atol: float) -> None:
    """Add one chunk of one actual to its running metrics. Sums are dot products (one
    fused pass each; a plain sum is a dot with `ones`)."""
    m = gc.size
    a, work, sums = run.a[:m], run.work[:m], run.sums
    cast_into(a, ac)  # exact; fast for float16
    sums["a_sq"].append(_dot(a, a))
    sums["ag"].append(_dot(a, gc))
    err = np.abs(np.subtract(a, gc, out=run.err[:m]), out=run.err[:m])
    sums["e_sq"].append(_dot(err, err))
    sums["err"].append(_dot(err, ones))
    i = int(err.argmax())
    if err[i] > run.best:
        run.best, run.worst = float(err[i]), start + i
    rel = np.divide(err, truth.denom_c, out=run.rel[:m])
    sums["rel"].append(_dot(rel, ones))
    normal_max = float(_max(rel))
    run.max_rel = max(run.max_rel, normal_max)
    normal = rel
    if small_c is not None:  # the normal elements' rel: the small ones zeroed (rel >= 0)
        normal = work
        np.copyto(normal, rel)
        np.putmask(normal, small_c, 0.0)
        normal_max = float(_max(normal))
        bad = np.greater(err, small_atol, out=run.over_mask[:m])
        run.small_bad += int(np.count_nonzero(np.logical_and(bad, small_c, out=bad)))
    sums["rel_normal"].append(_dot(normal, ones))
    run.mare_normal = max(run.mare_normal, normal_max)
    for j, bound in enumerate(bounds):
        if normal_max > bound:
            run.over[j] += int(np.count_nonzero(normal > bound))
    if truth.int_range is not None:
        lsb = np.abs(np.subtract(a, truth.clipped_c, out=work), out=work)
        run.lsb_max = max(run.lsb_max, float(_max(lsb)))
        run.lsb_gt1 += int(np.count_nonzero(lsb > 1))
        return
    if truth.inv_ulps is not None:
        u = np.multiply(err, truth.inv_ulp_c, out=work)
        u_max = float(_max(u))
        sums["ulp"].append(_dot(u, ones))
        if u_max > 1:
            run.ulp_gt1 += int(np.count_nonzero(u > 1))
        run.ulp_max = max(run.ulp_max, u_max)
    if truth.vendor is not None:
        over = np.greater(err, truth.close_c, out=run.over_mask[:m])
        if over.any():
            far = np.flatnonzero(over)
            rtol = truth.vendor[0]
            denom = rtol * np.maximum(np.maximum(np.abs(a[far]), truth.absg_c[far]),
                                      2.0 ** -14 / rtol)
            run.far += far.size
            run.vendor_worst = max(run.vendor_worst, float(_max(err[far] / denom)))


def _finish(ref: Reference, run: _Errors, af: np.ndarray, gf: np.ndarray,
            both: np.ndarray | None, small_count: int, n: int, rms: float,
            norm_g: float, fa_noise: float) -> dict[str, Any]:
    """The metrics of one actual from its running sums, maxima and counts."""
    sums = {key: total(parts) for key, parts in run.sums.items()}
    a_sq, max_abs, worst = sums["a_sq"], run.best, run.worst
    norm = float(np.sqrt(a_sq)) * norm_g
    cos = sums["ag"] / norm if norm > 0 else (1.0 if max_abs == 0 else 0.0)
    mere = sums["rel"] / n
    if not small_count:
        mere_normal, mare_normal = mere, run.max_rel
    elif small_count == n:
        mere_normal = mare_normal = 0.0
    else:
        mere_normal, mare_normal = sums["rel_normal"] / (n - small_count), run.mare_normal
    shares = [float((over + run.small_bad) / n) for over in run.over]
    out = dict(
        a_sq=a_sq,
        max_abs=max_abs,
        mean_abs=sums["err"] / n,
        max_rel=run.max_rel,
        mere=mere,
        mare=run.max_rel,
        mere_normal=mere_normal,
        mare_normal=mare_normal,
        rmse=float(np.sqrt(sums["e_sq"] / n)),
        cosine=cos,
        golden_rms=rms,
        error_scale=max(rms, 1.0 if ref.log_scale else 0.0),
        thousandth_share=shares[0],
        hundredth_share=shares[1],
        small_count=small_count,
        small_err_share=float(run.small_bad / n),
        worst_index=_index(np.flatnonzero(both)[worst:worst + 1] if both is not None
                           else np.array([worst]), ref.g.shape),
        worst_actual=float(af[worst]),
        worst_golden=float(gf[worst]),
        fa_noise=fa_noise,
    )
    if ref.dtype in INT_RANGE:
        out.update(lsb_max=run.lsb_max, lsb_share_gt1=float(run.lsb_gt1 / n))
        return out
    if ref.dtype in FLOAT_FORMAT:
        out.update(ulp_max=run.ulp_max, ulp_mean=sums["ulp"] / n,
                   ulp_share_gt1=float(run.ulp_gt1 / n) if run.ulp_max > 1 else 0.0)
    if ref.tol in VENDOR_TOL:
        out.update(close_share=float((n - run.far) / n), vendor_worst_ratio=run.vendor_worst)
    return out


class _FaNoise:
    """`fa_noise_floor` of a truth given chunk by chunk: the 16-bit values seen so far, or
    the largest fp32 noise."""

    def __init__(self, dtype: str):
        self.dtype, self.noise = dtype, 0.0
        self.seen = np.zeros(1 << 16, bool) if dtype in ("float16", "bfloat16") else None

    def add(self, g: np.ndarray) -> None:
        if self.dtype not in FLOAT_FORMAT or not g.size:
            return
        if self.seen is None:
            self.noise = max(self.noise, float(_fa_noise(g, self.dtype).max()))
            return
        with np.errstate(over="ignore"):
            codes = nearest(g, NUMPY_DTYPES[self.dtype]).reshape(-1).view(np.uint16)
        self.seen[codes.astype(np.intp)] = True  # intp indices: no conversion per element

    def floor(self) -> float:
        if self.seen is not None and self.seen.any():
            values = np.flatnonzero(self.seen).astype(np.uint16).view(NUMPY_DTYPES[self.dtype])
            self.noise = float(_fa_noise(values.astype(np.float64), self.dtype).max())
        return 2 * self.noise


def _index(flat: np.ndarray, shape: tuple[int, ...]) -> str:
    if flat.size == 0:
        return ""
    return str(tuple(int(i) for i in np.unravel_index(int(flat[0]), shape)))


def _invalid_mismatch(a: np.ndarray, g: np.ndarray, invalid: np.ndarray, count: int,
                      shape: tuple[int, ...]) -> dict[str, Any]:
    """Exact comparison on the invalid rows (flat a, g, mask): 0 must be 0, +inf must be +inf."""
    if count == 0:
        return {"invalid_count": 0, "invalid_mismatch": 0, "invalid_index": ""}
    if count * 8 < invalid.size:  # few: compare them by index
        where = np.flatnonzero(invalid)
        bad = where[a[where] != g[where]]
    else:
        bad = np.flatnonzero(invalid & (a != g))
    return {"invalid_count": count, "invalid_mismatch": int(bad.size),
            "invalid_index": _index(bad, shape)}


def lsb_conditioning(actuals: Sequence[np.ndarray], baseline: np.ndarray, golden: np.ndarray,
                     dtype: str, slack: float = 0.0) -> list[dict[str, Any]]:
    """LSB misses of int outputs split into decisive and explained by float-level error.

    See the module docstring: an element missing the clipped fp64 truth by
    more than t is explained when the same-dtype golden `baseline` misses it
    by more than rounding alone does (0.5 LSB + `slack`) and the device
    misses by at most the baseline's miss + 1 LSB. `lsb_max_decisive` /
    `lsb_max_decisive_exact` are the largest misses left unexplained at t = 1
    / t = 0.5 (each + `slack`, the op's own extra rounding,
    policies.int_rounding_slack), `lsb_inconclusive(_exact)` the counts of
    explained elements. One dict per actual (the baseline may be one of them),
    the baseline's misses computed once for all.
    """
    lo, hi = INT_RANGE[dtype]
    b, g = np.asarray(baseline).reshape(-1), np.asarray(golden).reshape(-1)
    shaped = [np.shape(a) == np.shape(golden) == np.shape(baseline) for a in actuals]
    flats = [np.asarray(a).reshape(-1) for a in actuals]
    rounding = 0.5 + slack  # how far correct rounding alone sits from the ideal
    thresholds = (("", 1.0 + slack), ("_exact", 0.5 + slack))
    worst = [[0.0, 0.0] for _ in actuals]
    explained_count = [[0, 0] for _ in actuals]
    size = min(g.size, CHUNK)
    gc, err, base_err, base_plus = (np.empty(size) for _ in range(4))
    for s, e in split(g.size if np.shape(baseline) == np.shape(golden) else 0):
        m = e - s
        np.clip(g[s:e], lo, hi, out=gc[:m])
        np.abs(np.subtract(b[s:e], gc[:m], out=base_err[:m]), out=base_err[:m])
        base_over = base_err[:m] > rounding
        np.add(base_err[:m], 1, out=base_plus[:m])  # exact (LSB counts and halves)
        for k, a in enumerate(flats):
            if not shaped[k]:
                continue
            if actuals[k] is baseline:
                miss = base_err[:m]
            else:
                miss = np.abs(np.subtract(a[s:e], gc[:m], out=err[:m]), out=err[:m])
            # shared by both thresholds
            shared = base_over & (miss <= base_plus[:m])
            for j, (_, t) in enumerate(thresholds):
                explained = (miss > t) & shared
                n_explained = int(np.count_nonzero(explained))
                # errors are >= 0: leaving the explained out with 0 as the floor is the max
                rest = _max(miss, where=~explained, initial=0.0) if n_explained else _max(miss)
                explained_count[k][j] += n_explained
                worst[k][j] = max(worst[k][j], float(rest))
    out: list[dict[str, Any]] = []
    for k in range(len(actuals)):
        out.append({} if not shaped[k] else {
            f"{key}{suffix}": value
            for j, (suffix, _) in enumerate(thresholds)
            for key, value in (("lsb_max_decisive", worst[k][j]),
                               ("lsb_inconclusive", explained_count[k][j]))})
    return out
