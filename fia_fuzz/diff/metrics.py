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
from typing import Any

import numpy as np

from fia_fuzz.diff import scratch
from fia_fuzz.spec.tensors import NUMPY_DTYPES

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
    """Round fp64 values to `dtype` (bfloat16 through ml_dtypes) and back to fp64."""
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16).astype(np.float64)
    if dtype in ("float16", "float32"):
        return x.astype(dtype).astype(np.float64)
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
    g = np.asarray(golden, np.float64)
    if g.size == 0 or dtype not in FLOAT_FORMAT:
        return 0.0
    if dtype in ("float16", "bfloat16"):
        with np.errstate(over="ignore"):
            codes = g.astype(NUMPY_DTYPES[dtype]).reshape(-1).view(np.uint16)
        seen = np.zeros(1 << 16, bool)
        seen[codes] = True
        g = np.flatnonzero(seen).astype(np.uint16).view(NUMPY_DTYPES[dtype]).astype(np.float64)
    return float(2 * _fa_noise(g, dtype).max())


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
    """The golden side of `compare`, computed once and shared by every output judged against it.

    `judge` compares the device output and the same-dtype baseline with one
    truth; everything that depends on the truth alone (fp64 copy, non-finite
    and invalid elements, relative-error denominators, small values, ULP
    sizes, vendor tolerances, FA3's noise, RMS and norm) is computed here once.
    Arguments as `compare`'s. Its per-element arrays are lent by
    `diff.scratch`; `release` (or leaving its `with` block) gives them back.
    """

    def __init__(self, golden: np.ndarray, dtype: str, tol_dtype: str | None = None,
                 invalid: np.ndarray | None = None, log_scale: bool = False):
        tol = tol_dtype or dtype
        self.dtype, self.tol, self.log_scale = dtype, tol, log_scale
        g = np.asarray(golden, np.float64, order="C")  # read only: no copy of an fp64 truth
        self.g = g
        # a finite sum proves every element finite in one pass (values stay far below overflow)
        self.all_finite = bool(np.isfinite(np.sum(g)))
        if not self.all_finite:
            self.nan, self.inf = np.isnan(g), np.isinf(g)
            self.finite = ~(self.nan | self.inf)
            self.all_finite = bool(self.finite.all())
        inv = (_default_invalid(g) if invalid is None
               else np.broadcast_to(np.asarray(invalid, bool), g.shape))
        self.invalid = np.ascontiguousarray(inv).reshape(-1)
        self.invalid_count = int(np.count_nonzero(self.invalid))
        self._parts: dict[bool, dict[str, Any]] = {}
        self._lent: list[np.ndarray] = []

    def __enter__(self) -> Reference:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Give the truth-only arrays back to `diff.scratch`; the next `part` recomputes them."""
        scratch.give(*self._lent)
        self._lent, self._parts = [], {}

    def _take(self, n: int) -> np.ndarray:
        a = scratch.take(n)
        self._lent.append(a)
        return a

    def part(self, both: np.ndarray | None) -> dict[str, Any]:
        """Truth-only arrays over the elements finite on both sides (`both`, None: all)."""
        key = both is None
        if key and key in self._parts:
            return self._parts[key]
        gf = self.g.reshape(-1) if both is None else self.g.reshape(-1)[both]
        tol, log_scale = self.tol, self.log_scale
        n = gf.size
        absg = np.abs(gf, out=self._take(n))
        small = absg < (0.0 if log_scale else SMALL_VALUE.get(tol, 2.0 ** -10))
        square = np.square(gf, out=scratch.take(n))
        sum_sq = float(np.sum(square))
        scratch.give(square)
        part: dict[str, Any] = {
            "g": gf,
            "absg": absg,
            "small_idx": np.flatnonzero(small),
            "normal": ~small if small.any() else None,
            "rms": float(np.sqrt(sum_sq / n)) if n else 0.0,
            "norm": float(np.sqrt(sum_sq)),
            "fa_noise": fa_noise_floor(gf, tol),
        }
        if self.dtype in INT_RANGE:
            lo, hi = INT_RANGE[self.dtype]
            part["clipped"] = np.clip(gf, lo, hi, out=self._take(n))
        elif self.dtype in FLOAT_FORMAT:
            exponent = _biased_exponent(absg, scratch.take(n).view(np.int64))
            part["inv_ulp"] = np.take(_spacings(self.dtype)[1], exponent, out=self._take(n),
                                      mode="clip")  # unbuffered; exponents are 0..2047
            scratch.give(exponent)
        if self.dtype not in INT_RANGE and tol in VENDOR_TOL:
            rtol, atol = VENDOR_TOL[tol]
            part["close_bound"] = np.multiply(absg, rtol, out=self._take(n))
            part["close_bound"] += atol
        denom = np.add(absg, EPS, out=self._take(n))
        part["denom"] = np.maximum(denom, 1.0, out=denom) if log_scale else denom
        if key:
            self._parts[key] = part
        return part


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
    `Reference` built with the same arguments, shared by several calls.
    """
    if not isinstance(golden, Reference):
        with Reference(golden, dtype, tol_dtype, invalid, log_scale) as ref:
            return compare(actual, ref, dtype)
    ref = golden
    actual = np.asarray(actual)
    if actual.shape != ref.g.shape:
        return {"shape_mismatch": True, "actual_shape": str(actual.shape),
                "golden_shape": str(ref.g.shape)}
    if actual.dtype == np.float64 and actual.flags.c_contiguous:
        return _compare(actual, ref)
    a = scratch.take(actual.size).reshape(actual.shape)
    try:
        a[...] = actual
        return _compare(a, ref)
    finally:
        scratch.give(a)


def _compare(a: np.ndarray, ref: Reference) -> dict[str, Any]:
    """`compare` of float64 `a`, of the golden's shape."""
    tol, log_scale, g = ref.tol, ref.log_scale, ref.g
    flat = a.reshape(-1)
    # sum of squares: finite exactly when every element is (it is the norm, too)
    a_sq = _dot(flat, flat)
    if np.isfinite(a_sq) and ref.all_finite:  # nothing non-finite on either side
        counts = dict.fromkeys(("nan_actual_only", "nan_golden_only", "inf_actual_only",
                                "inf_golden_only", "nonfinite_mismatch"), 0)
        counts["nonfinite_index"] = ""
        both = None
    else:
        if ref.all_finite:
            ref.nan, ref.inf = np.zeros(g.shape, bool), np.zeros(g.shape, bool)
            ref.finite = np.ones(g.shape, bool)
        a_nan, a_inf = np.isnan(a), np.isinf(a)
        a_finite = ~(a_nan | a_inf)
        g_nan, g_inf = ref.nan, ref.inf
        one_sided = (a_nan != g_nan) | (a_inf != g_inf) | (a_inf & g_inf & (a != g))
        counts = {"nan_actual_only": int(np.count_nonzero(a_nan & ~g_nan)),
                  "nan_golden_only": int(np.count_nonzero(g_nan & ~a_nan)),
                  "inf_actual_only": int(np.count_nonzero(a_inf & ~g_inf)),
                  "inf_golden_only": int(np.count_nonzero(g_inf & ~a_inf)),
                  "nonfinite_mismatch": int(np.count_nonzero(one_sided)),
                  "nonfinite_index": _index(np.flatnonzero(one_sided), a.shape)}
        both = (a_finite & ref.finite).reshape(-1)
    out: dict[str, Any] = {"shape_mismatch": False, "numel": int(a.size), **counts}
    out.update(_invalid_mismatch(flat, g.reshape(-1), ref.invalid, ref.invalid_count, a.shape))
    if a.size == 0 or (both is not None and not both.any()):
        out.update(max_abs=0.0, mean_abs=0.0, max_rel=0.0, mere=0.0, mare=0.0, mere_normal=0.0,
                   mare_normal=0.0, rmse=0.0,
                   cosine=1.0, golden_rms=0.0, error_scale=1.0 if log_scale else 0.0,
                   thousandth_share=0.0, hundredth_share=0.0,
                   small_count=0, small_err_share=0.0, worst_index="", worst_actual=0.0,
                   worst_golden=0.0, fa_noise=0.0)
        out.update(_dtype_metrics(np.zeros(0), np.zeros(0), {}, ref.dtype, tol))
        return out
    part = ref.part(both)
    gf = part["g"]
    af = flat if both is None else flat[both]
    err, rel = scratch.take(gf.size), scratch.take(gf.size)
    try:
        out.update(_errors(af, part, ref, err, rel, both, a_sq, a.shape))
    finally:
        scratch.give(err, rel)
    return out


def _errors(af: np.ndarray, part: dict[str, Any], ref: Reference, err: np.ndarray,
            rel: np.ndarray, both: np.ndarray | None, a_sq: float, shape: tuple[int, ...]
            ) -> dict[str, Any]:
    """The error metrics of `compare` over the finite elements `af` (of `both`, None: all;
    `a_sq`: the sum of squares of all) into work arrays `err` and `rel`."""
    tol, log_scale, gf = ref.tol, ref.log_scale, part["g"]
    np.subtract(af, gf, out=err)
    np.abs(err, out=err)
    rmse = float(np.sqrt(_dot(err, err, rel) / err.size))
    worst = int(np.argmax(err))
    norm = float(np.sqrt(a_sq if both is None else _dot(af, af, rel))) * part["norm"]
    max_abs = float(err[worst])
    cos = _dot(af, gf, rel) / norm if norm > 0 else (1.0 if max_abs == 0 else 0.0)
    np.divide(err, part["denom"], out=rel)
    t = THOUSANDTH.get(tol, 1e-3)
    small_idx, normal = part["small_idx"], part["normal"]
    small_bad = err[small_idx] > SMALL_VALUE_ATOL.get(tol, 2.0 ** -16)
    max_rel = float(rel.max())
    if normal is None:
        mere_normal, mare_normal = float(rel.mean()), max_rel
    elif small_idx.size == rel.size:
        mere_normal = mare_normal = 0.0
    else:
        mere_normal = float(np.mean(rel, where=normal))
        mare_normal = float(np.max(rel, where=normal, initial=0.0))

    def share_over(bound: float) -> float:
        """Share of elements failing the thousandth rule at `bound` (small ones by abs err)."""
        over = 0 if mare_normal <= bound else \
            np.count_nonzero(rel > bound) - np.count_nonzero(rel[small_idx] > bound)
        return float((over + np.count_nonzero(small_bad)) / rel.size)

    out = dict(
        max_abs=max_abs,
        mean_abs=float(err.mean()),
        max_rel=max_rel,
        mere=float(rel.mean()),
        mare=max_rel,
        mere_normal=mere_normal,
        mare_normal=mare_normal,
        rmse=rmse,
        cosine=cos,
        golden_rms=part["rms"],
        error_scale=max(part["rms"], 1.0 if log_scale else 0.0),
        thousandth_share=share_over(t),
        hundredth_share=share_over(10 * t),
        small_count=int(small_idx.size),
        small_err_share=float(np.count_nonzero(small_bad) / rel.size),
        worst_index=_index(np.flatnonzero(both)[worst:worst + 1] if both is not None
                           else np.array([worst]), shape),
        worst_actual=float(af[worst]),
        worst_golden=float(gf[worst]),
        fa_noise=part["fa_noise"],
    )
    out.update(_dtype_metrics(af, err, part, ref.dtype, tol, rel))
    return out


def _dot(x: np.ndarray, y: np.ndarray, work: np.ndarray | None = None) -> float:
    """sum(x * y) by NumPy's pairwise sum (`work`: an array of x's size to overwrite).

    Not BLAS: its dot splits the sum among its threads, so the last bits
    depend on the thread count of the machine.
    """
    if not x.size:
        return 0.0
    if work is None:
        work = scratch.take(x.size)
        try:
            return _dot(x, y, work)
        finally:
            scratch.give(work)
    return float(np.sum(np.multiply(x, y, out=work[:x.size])))


def _share(mask: np.ndarray) -> float:
    return float(np.count_nonzero(mask) / mask.size) if mask.size else 0.0


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


def lsb_conditioning(actual: np.ndarray, baseline: np.ndarray, golden: np.ndarray,
                     dtype: str, slack: float = 0.0) -> dict[str, Any]:
    """LSB misses of an int output split into decisive and explained by float-level error.

    See the module docstring: an element missing the clipped fp64 truth by
    more than t is explained when the same-dtype golden `baseline` misses it
    by more than rounding alone does (0.5 LSB + `slack`) and the device
    misses by at most the baseline's miss + 1 LSB. `lsb_max_decisive` /
    `lsb_max_decisive_exact` are the largest misses left unexplained at t = 1
    / t = 0.5 (each + `slack`, the op's own extra rounding,
    policies.int_rounding_slack), `lsb_inconclusive(_exact)` the counts of
    explained elements.
    """
    lo, hi = INT_RANGE[dtype]
    a, b, g = np.asarray(actual), np.asarray(baseline), np.asarray(golden)
    if a.shape != g.shape or b.shape != g.shape:
        return {}
    if not g.size:
        return {"lsb_max_decisive": 0.0, "lsb_inconclusive": 0,
                "lsb_max_decisive_exact": 0.0, "lsb_inconclusive_exact": 0}
    gc, err, base_err = (scratch.take(g.size) for _ in range(3))
    try:
        np.clip(g.reshape(-1), lo, hi, out=gc)
        np.abs(np.subtract(a.reshape(-1), gc, out=err), out=err)
        np.abs(np.subtract(b.reshape(-1), gc, out=base_err), out=base_err)
        rounding = 0.5 + slack  # how far correct rounding alone sits from the ideal
        # shared by both thresholds; base_err + 1 is exact (LSB counts and halves)
        shared = (base_err > rounding) & (err <= np.add(base_err, 1, out=gc))
        out: dict[str, Any] = {}
        for suffix, t in (("", 1.0 + slack), ("_exact", 0.5 + slack)):
            explained = (err > t) & shared
            rest = err
            if explained.any():  # errors are >= 0: zeroing the explained leaves the rest's max
                rest = base_err
                np.copyto(rest, err)
                rest[explained] = 0.0
            out[f"lsb_max_decisive{suffix}"] = float(rest.max())
            out[f"lsb_inconclusive{suffix}"] = int(np.count_nonzero(explained))
        return out
    finally:
        scratch.give(gc, err, base_err)


def _dtype_metrics(af: np.ndarray, err: np.ndarray, part: dict[str, Any], dtype: str,
                   tol: str, work: np.ndarray | None = None) -> dict[str, Any]:
    """ULPs in the output dtype (float outputs) or LSBs (int outputs), and vendor closeness.

    `err` is |af - g|, `part` the `Reference.part` of the same elements and
    `work` an array of err's size free to overwrite.
    """
    out: dict[str, Any] = {}
    if dtype in INT_RANGE:
        lsb = np.abs(np.subtract(af, part["clipped"], out=work), out=work) if af.size \
            else np.zeros(0)
        out.update(lsb_max=float(lsb.max()) if lsb.size else 0.0,
                   lsb_share_gt1=_share(lsb > 1))
        return out
    if dtype in FLOAT_FORMAT:
        u = np.multiply(err, part["inv_ulp"], out=work) if af.size else np.zeros(0)
        u_max = float(u.max()) if u.size else 0.0
        out.update(ulp_max=u_max, ulp_mean=float(u.mean()) if u.size else 0.0,
                   ulp_share_gt1=_share(u > 1) if u_max > 1 else 0.0)
    if tol in VENDOR_TOL:
        rtol, _ = VENDOR_TOL[tol]
        if not af.size:
            out.update(close_share=1.0, vendor_worst_ratio=0.0)
            return out
        far = np.flatnonzero(err > part["close_bound"])
        denom = rtol * np.maximum(np.maximum(np.abs(af[far]), part["absg"][far]),
                                  2.0 ** -14 / rtol)
        out.update(close_share=float((af.size - far.size) / af.size),
                   vendor_worst_ratio=float((err[far] / denom).max()) if far.size else 0.0)
    return out
