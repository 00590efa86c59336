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

from typing import Any

import numpy as np

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


def ulp(x: np.ndarray, dtype: str) -> np.ndarray:
    """Spacing of `dtype` at |x| (subnormal spacing below the normal range)."""
    bits, emin = FLOAT_FORMAT[dtype]
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.abs(x)))
    e = np.maximum(np.where(np.isfinite(e), e, emin), emin)
    return np.exp2(e - bits)


def fa_noise_floor(golden: np.ndarray, dtype: str) -> float:
    """FA3's forward atol: twice the rounding noise of adding and removing 0.3 in `dtype`."""
    finite = golden[np.isfinite(golden)]
    if dtype not in FLOAT_FORMAT or finite.size == 0:
        return 0.0
    # values beyond the dtype's range round to inf; they carry no rounding noise to measure
    with np.errstate(over="ignore", invalid="ignore"):
        g = _cast(finite, dtype)
        shifted = _cast(_cast(g + FA_NOISE_SHIFT, dtype) - FA_NOISE_SHIFT, dtype)
        noise = np.abs(shifted - g)
    noise = noise[np.isfinite(noise)]
    return float(2 * noise.max()) if noise.size else 0.0


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


def compare(actual: np.ndarray, golden: np.ndarray, dtype: str,
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
    the policies' absolute-error floors are relative to.
    """
    tol = tol_dtype or dtype
    a = np.asarray(actual).astype(np.float64)
    g = np.asarray(golden).astype(np.float64)
    if a.shape != g.shape:
        return {"shape_mismatch": True, "actual_shape": str(a.shape),
                "golden_shape": str(g.shape)}
    a_nan, g_nan = np.isnan(a), np.isnan(g)
    a_inf, g_inf = np.isinf(a), np.isinf(g)
    one_sided = (a_nan != g_nan) | (a_inf != g_inf) | (a_inf & g_inf & (a != g))
    out: dict[str, Any] = {
        "shape_mismatch": False,
        "numel": int(a.size),
        "nan_actual_only": int(np.count_nonzero(a_nan & ~g_nan)),
        "nan_golden_only": int(np.count_nonzero(g_nan & ~a_nan)),
        "inf_actual_only": int(np.count_nonzero(a_inf & ~g_inf)),
        "inf_golden_only": int(np.count_nonzero(g_inf & ~a_inf)),
        "nonfinite_mismatch": int(np.count_nonzero(one_sided)),
        "nonfinite_index": _index(np.flatnonzero(one_sided), a.shape),
    }
    out.update(_invalid_mismatch(a, g, _default_invalid(g) if invalid is None
                                 else np.broadcast_to(np.asarray(invalid, bool), g.shape)))
    both = np.isfinite(a) & np.isfinite(g)
    if not both.any():
        out.update(max_abs=0.0, mean_abs=0.0, max_rel=0.0, mere=0.0, mare=0.0, mere_normal=0.0,
                   mare_normal=0.0, rmse=0.0,
                   cosine=1.0, golden_rms=0.0, error_scale=1.0 if log_scale else 0.0,
                   thousandth_share=0.0, hundredth_share=0.0,
                   small_count=0, small_err_share=0.0, worst_index="", worst_actual=0.0,
                   worst_golden=0.0, fa_noise=0.0)
        out.update(_dtype_metrics(np.zeros(0), np.zeros(0), dtype, tol))
        return out
    af, gf = a[both], g[both]
    abs_err = np.abs(af - gf)
    rms = float(np.sqrt(np.mean(gf ** 2)))
    rel_err = abs_err / np.maximum(np.abs(gf) + EPS, 1.0 if log_scale else 0.0)
    worst = int(np.argmax(abs_err))
    norm = float(np.linalg.norm(af) * np.linalg.norm(gf))
    cos = float(np.dot(af, gf) / norm) if norm > 0 else (1.0 if abs_err.max() == 0 else 0.0)
    t = THOUSANDTH.get(tol, 1e-3)
    small = np.abs(gf) < (0.0 if log_scale else SMALL_VALUE.get(tol, 2.0 ** -10))
    small_bad = small & (abs_err > SMALL_VALUE_ATOL.get(tol, 2.0 ** -16))
    out.update(
        max_abs=float(abs_err.max()),
        mean_abs=float(abs_err.mean()),
        max_rel=float(rel_err.max()),
        mere=float(rel_err.mean()),
        mare=float(rel_err.max()),
        mere_normal=float(rel_err[~small].mean()) if (~small).any() else 0.0,
        mare_normal=float(rel_err[~small].max()) if (~small).any() else 0.0,
        rmse=float(np.sqrt(np.mean((af - gf) ** 2))),
        cosine=cos,
        golden_rms=rms,
        error_scale=max(rms, 1.0 if log_scale else 0.0),
        thousandth_share=_share(np.where(small, small_bad, rel_err > t)),
        hundredth_share=_share(np.where(small, small_bad, rel_err > 10 * t)),
        small_count=int(np.count_nonzero(small)),
        small_err_share=_share(small_bad),
        worst_index=_index(np.flatnonzero(both)[worst:worst + 1], a.shape),
        worst_actual=float(af[worst]),
        worst_golden=float(gf[worst]),
        fa_noise=fa_noise_floor(gf, tol),
    )
    out.update(_dtype_metrics(af, gf, dtype, tol))
    return out


def _share(mask: np.ndarray) -> float:
    return float(np.count_nonzero(mask) / mask.size) if mask.size else 0.0


def _index(flat: np.ndarray, shape: tuple[int, ...]) -> str:
    if flat.size == 0:
        return ""
    return str(tuple(int(i) for i in np.unravel_index(int(flat[0]), shape)))


def _invalid_mismatch(a: np.ndarray, g: np.ndarray, invalid: np.ndarray) -> dict[str, Any]:
    """Exact comparison on the invalid rows: 0 must be 0, +inf must be +inf."""
    bad = invalid & (a != g)
    return {"invalid_count": int(np.count_nonzero(invalid)),
            "invalid_mismatch": int(np.count_nonzero(bad)),
            "invalid_index": _index(np.flatnonzero(bad), a.shape)}


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
    a, b = np.asarray(actual).astype(np.float64), np.asarray(baseline).astype(np.float64)
    g = np.clip(np.asarray(golden).astype(np.float64), lo, hi)
    if a.shape != g.shape or b.shape != g.shape:
        return {}
    err, base_err = np.abs(a - g), np.abs(b - g)
    out: dict[str, Any] = {}
    rounding = 0.5 + slack  # how far correct rounding alone sits from the ideal
    for suffix, t in (("", 1.0 + slack), ("_exact", 0.5 + slack)):
        explained = (err > t) & (base_err > rounding) & (err <= base_err + 1)
        rest = err[~explained]
        out[f"lsb_max_decisive{suffix}"] = float(rest.max()) if rest.size else 0.0
        out[f"lsb_inconclusive{suffix}"] = int(np.count_nonzero(explained))
    return out


def _dtype_metrics(af: np.ndarray, gf: np.ndarray, dtype: str, tol: str) -> dict[str, Any]:
    """ULPs in the output dtype (float outputs) or LSBs (int outputs), and vendor closeness."""
    out: dict[str, Any] = {}
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        lsb = np.abs(af - np.clip(gf, lo, hi))
        out.update(lsb_max=float(lsb.max()) if lsb.size else 0.0,
                   lsb_share_gt1=_share(lsb > 1))
        return out
    if dtype in FLOAT_FORMAT:
        u = np.abs(af - gf) / ulp(gf, dtype) if af.size else np.zeros(0)
        out.update(ulp_max=float(u.max()) if u.size else 0.0,
                   ulp_mean=float(u.mean()) if u.size else 0.0,
                   ulp_share_gt1=_share(u > 1))
    if tol in VENDOR_TOL:
        rtol, atol = VENDOR_TOL[tol]
        err = np.abs(af - gf)
        close = err <= atol + rtol * np.abs(gf)
        denom = rtol * np.maximum(np.maximum(np.abs(af), np.abs(gf)), 2.0 ** -14 / rtol)
        ratio = np.where(close, 0.0, err / denom)
        out.update(close_share=float(close.mean()) if close.size else 1.0,
                   vendor_worst_ratio=float(ratio.max()) if ratio.size else 0.0)
    return out
