"""Named verdict policies over the metrics (../shared/precision-standards.md).

A policy maps the metrics of the device output (`m`), the metrics of the
same-dtype baseline against the same truth (`base`, the golden run at device
precision, or None) and the output dtype to a `(verdict, reason)` pair with
verdict "pass", "inconclusive", "warn" or "fail" and a short reason for
anything but a pass.

"inconclusive" means the fp64 truth cannot decide: every element the policy
would fail on is explained by a float-level error the same-dtype golden
shares (the problem's conditioning, or the float dtype's precision), which the
op's precision cannot resolve (metrics.py "Int8 outputs and float
conditioning"). It ranks above pass and below warn, so any decisive finding
of another tensor or element wins; reports leave inconclusive cases out of
pass rates and show their count.

Functional failures fail under every policy before any tolerance is looked
at: a shape mismatch, NaN/Inf on one side only (standards "Notes": NaN where
the golden has none is always a failure) and a non-zero or finite value
where the golden marks an invalid row (0 out / +inf lse).

Int8 outputs (post-quant) are judged by LSBs under every policy: a golden that
reproduces the rounding order is exact or 1 LSB off where fp16 rounding ties
differ (standards "Notes"); vendor-fia, following the older torch_npu helper,
wants them exact and warns on 1 LSB. With quant_offset2 both bounds grow by
the 0.5 LSB of the op's second rounding (`int_rounding_slack`). Misses that the same-dtype baseline
shares (float-level error, see above) are inconclusive, not failures.

The default is `flash-attention`: it judges the kernel against what its dtype
allows (the same-dtype baseline's own error), so a correct bf16 kernel passes.
`ascend-thousandth` fails or warns on bf16 outputs from rounding alone: bf16
keeps 8 significant bits, so rounding the exact result already gives relative
errors up to 2^-9 ~ 2e-3, far above t = 1e-3, on a large share of elements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fia_fuzz.diff.metrics import INT_RANGE, THOUSANDTH

Metrics = Mapping[str, Any]
Verdict = tuple[str, str]
Policy = Callable[[Metrics, "Metrics | None", str, "Mapping[str, Any]"], Verdict]
POLICIES: dict[str, Policy] = {}
DEFAULT_POLICY = "flash-attention"
PASS: Verdict = ("pass", "")
SEVERITY = {"pass": 0, "inconclusive": 1, "warn": 2, "fail": 3}

#: CANN absolute thresholds Th per dtype (standards §2): MERE < Th and MARE < 10*Th.
ABS_THRESHOLD = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -13}
#: Benchmark-ratio gates (standards §3): (MARE, MERE, RMSE) ratio bounds per product level.
BENCH_LEVELS = {"L2": (2.0, 1.2, 1.2), "L1": (5.0, 1.5, 1.5), "L0": (10.0, 2.0, 2.0)}
BENCH_SMALL_RATIO = 2.0
#: Unit roundoff per dtype; an eighth of it floors the ratios' denominators.
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24}
#: FlashAttention (standards §4): factor on the baseline's max error; KV-cache tests use 3-4.
FA_FACTOR, FA_WARN_FACTOR, FA_MEAN_FACTOR, FA_VARIANT_ATOL = 2.0, 4.0, 1.5, 1e-5
VENDOR_CLOSE_SHARE, VENDOR_WORST_RATIO = 0.995, 10.0


def policy(name: str) -> Callable[[Policy], Policy]:
    """Register a policy under the name users select it by."""
    def deco(fn: Policy) -> Policy:
        POLICIES[name] = fn
        return fn
    return deco


def functional_failure(m: Metrics) -> str:
    """Why `m` is a functional (not precision) failure, or ''."""
    if m.get("shape_mismatch"):
        return f"shape {m.get('actual_shape')} != golden {m.get('golden_shape')}"
    if m.get("nan_actual_only"):
        return f"{m['nan_actual_only']} NaN where the golden has none"
    if m.get("nonfinite_mismatch"):
        return (f"{m['nonfinite_mismatch']} NaN/Inf on one side only, "
                f"first at {m.get('nonfinite_index')}")
    if m.get("invalid_mismatch"):
        return (f"{m['invalid_mismatch']} elements of invalid rows not exact (0 / +inf), "
                f"first at {m.get('invalid_index')}")
    return ""


def int_rounding_slack(features: Mapping[str, Any]) -> float:
    """LSBs the op's own rounding order adds to an int8 output's distance from the ideal.

    With quant_offset2 the documented order sat8(rint(rint(x*qs2) + qo2))
    rounds twice, so a correct result sits up to 1 LSB (not 0.5) from the
    ideal clip(x*qs2 + qo2) before any float noise (fia-semantics.md §8,
    golden/quant.py POST_QUANT_ORDERS): the int8 bounds grow by 0.5 LSB.
    """
    return 0.5 if features.get("post_quant_offset") else 0.0


def _int_lsb(m: Metrics, exact: bool) -> Verdict:
    """Fail beyond 1 LSB (warn beyond rounding when `exact`), plus `lsb_slack`, on misses
    the same-dtype baseline does not share; inconclusive when only shared misses remain."""
    lsb = m.get("lsb_max", 0.0)
    slack = m.get("lsb_slack", 0.0)
    decisive = m.get("lsb_max_decisive", lsb)
    if decisive > 1 + slack:
        return "fail", f"int8 off by {decisive:g} LSB (> {1 + slack:g})"
    if exact and m.get("lsb_max_decisive_exact", lsb) > 0.5 + slack:
        return "warn", f"int8 off by {m.get('lsb_max_decisive_exact', lsb):g} LSB (not exact)"
    bound, key = (0.5, "lsb_inconclusive_exact") if exact else (1.0, "lsb_inconclusive")
    if lsb > bound + slack:
        return "inconclusive", (f"int8 off by {lsb:g} LSB where the same-dtype golden misses by "
                                f"as much ({m.get(key, 0)} elements): a float-level error "
                                "the fp64 ideal cannot decide")
    return PASS


def _guard(m: Metrics, dtype: str, exact_int: bool = False) -> Verdict | None:
    """The verdict shared by every policy, or None when the policy's own rule decides."""
    why = functional_failure(m)
    if why:
        return "fail", why
    if dtype in INT_RANGE:
        return _int_lsb(m, exact_int)
    return None


@policy("ascend-thousandth")
def ascend_thousandth(m: Metrics, base: Metrics | None, dtype: str,
                      features: Mapping[str, Any]) -> Verdict:
    """Standards §1 (msprobe): share of elements with rel err > t below t (t = 1e-3,
    fp32 1e-4; small |g| judged by abs err); 10t failing fails, t failing warns;
    cosine must exceed 0.99; max abs err < 0.001 passes outright."""
    shared = _guard(m, dtype)
    if shared:
        return shared
    if m["max_abs"] < 1e-3:
        return PASS
    t = THOUSANDTH.get(dtype, 1e-3)
    if m["cosine"] <= 0.99:
        return "fail", f"cosine {m['cosine']:.4f} <= 0.99"
    if m["hundredth_share"] >= 10 * t:
        return "fail", f"{m['hundredth_share']:.2%} of elements off by > {10 * t:g}"
    if m["thousandth_share"] >= t:
        return "warn", f"{m['thousandth_share']:.2%} of elements off by > {t:g}"
    return PASS


@policy("ascend-threshold")
def ascend_threshold(m: Metrics, base: Metrics | None, dtype: str,
                     features: Mapping[str, Any]) -> Verdict:
    """Standards §2 (CANN op standard): MERE < Th and MARE < 10*Th, Th = 2^-10 fp16,
    2^-7 bf16, 2^-13 fp32. Binary: no warn band is documented."""
    shared = _guard(m, dtype)
    if shared:
        return shared
    th = ABS_THRESHOLD.get(dtype, 2.0 ** -10)
    if m["mere"] >= th:
        return "fail", f"MERE {m['mere']:.3g} >= {th:.3g}"
    if m["mare"] >= 10 * th:
        return "fail", f"MARE {m['mare']:.3g} >= {10 * th:.3g}"
    return PASS


def ratio(dev: float, base: float, floor: float) -> float:
    """dev / base with both raised to `floor`, so an exact baseline does not divide by 0."""
    return max(dev, floor) / max(base, floor)


def _error_scale(m: Metrics) -> float:
    """The golden's RMS (at least 1 for softmax_lse, a log: metrics.compare `error_scale`)."""
    return max(m.get("error_scale", m.get("golden_rms", 0.0)), 1e-30)


def benchmark_ratios(m: Metrics, base: Metrics, dtype: str) -> dict[str, float]:
    """Device-to-baseline error ratios of standards §3 (MARE, MERE, RMSE, small-value error).

    MARE and MERE are taken over the normal-range elements (|g| at or above
    the small-value threshold of §1), since small values have their own
    error term; otherwise one near-zero output decides the MARE ratio.

    Floors, so an exact baseline does not divide by 0: an eighth of the
    dtype's unit roundoff for relative errors, that times the golden's RMS for
    RMSE (at least 1 for softmax_lse, whose absolute error is already
    relative), one element for the small-value share.
    """
    u = UNIT_ROUNDOFF.get(dtype, 2.0 ** -11) / 8
    one = 1.0 / max(int(m.get("numel", 1)), 1)
    return {
        "mare_ratio": ratio(m["mare_normal"], base["mare_normal"], u),
        "mere_ratio": ratio(m["mere_normal"], base["mere_normal"], u),
        "rmse_ratio": ratio(m["rmse"], base["rmse"], u * _error_scale(m)),
        "small_ratio": ratio(m["small_err_share"], base["small_err_share"], one),
    }


def fa_ratio(m: Metrics, base: Metrics, dtype: str) -> float:
    """Max abs error in multiples of the baseline's (floor: unit roundoff x golden RMS);
    the dtype-neutral error score the dashboard ranks cases by."""
    floor = UNIT_ROUNDOFF.get(dtype, 2.0 ** -11) * _error_scale(m)
    return ratio(m["max_abs"], base["max_abs"], floor)


def benchmark_level(r: Mapping[str, float]) -> str:
    """The strictest product gate (L2 > L1 > L0) the ratios meet, or 'none'."""
    for level, (mare, mere, rmse) in BENCH_LEVELS.items():
        if r["mare_ratio"] <= mare and r["mere_ratio"] <= mere and r["rmse_ratio"] <= rmse:
            return level
    return "none"


@policy("ascend-benchmark")
def ascend_benchmark(m: Metrics, base: Metrics | None, dtype: str,
                     features: Mapping[str, Any]) -> Verdict:
    """Standards §3: ratios to the same-dtype baseline MARE <= 10, MERE <= 2, RMSE <= 2,
    small-value error <= 2 (the L0 gate, per case); warn when L0 holds but L1 does not."""
    shared = _guard(m, dtype)
    if shared:
        return shared
    if base is None or functional_failure(base):
        return "warn", "no usable same-dtype baseline"
    r = benchmark_ratios(m, base, dtype)
    mare, mere, rmse = BENCH_LEVELS["L0"]
    for key, bound in (("mare_ratio", mare), ("mere_ratio", mere), ("rmse_ratio", rmse),
                       ("small_ratio", BENCH_SMALL_RATIO)):
        if r[key] > bound:
            return "fail", f"{key.replace('_', ' ')} {r[key]:.3g} > {bound:g}"
    if benchmark_level(r) == "L0":
        return "warn", "meets the L0 gate only (ratios above L1's 5/1.5/1.5)"
    return PASS


def fa_allowance(m: Metrics, features: Mapping[str, Any]) -> float:
    """FA3's rounding-noise floor (or the metrics' `abs_floor`, set for softmax_lse),
    + 1e-5 for causal, masked, split-KV and paged variants."""
    variant = (features.get("sparse_mode") in (2, 3, 4) or features.get("mask") not in
               (None, "none") or bool(features.get("paged")) or bool(features.get("kv_list")))
    floor = max(m.get("fa_noise", 0.0), m.get("abs_floor", 0.0))
    return floor + (FA_VARIANT_ATOL if variant else 0.0)


@policy("flash-attention")
def flash_attention(m: Metrics, base: Metrics | None, dtype: str,
                    features: Mapping[str, Any]) -> Verdict:
    """Standards §4: max|out - ref| <= 2 * max|baseline - ref| and mean error <= 1.5x the
    baseline's, both + FA3's noise floor (+ 1e-5 for masked, paged, split-KV variants);
    within 4x (the KV-cache tests' factor) it warns."""
    shared = _guard(m, dtype)
    if shared:
        return shared
    if base is None or functional_failure(base):
        return "warn", "no usable same-dtype baseline"
    extra = fa_allowance(m, features)
    bound = FA_FACTOR * base["max_abs"] + extra
    mean_bound = FA_MEAN_FACTOR * base["mean_abs"] + extra
    if m["max_abs"] <= bound and m["mean_abs"] <= mean_bound:
        return PASS
    warn_bound = FA_WARN_FACTOR * base["max_abs"] + extra
    if m["max_abs"] > warn_bound:
        return "fail", f"max abs err {m['max_abs']:.3g} > 4x baseline bound {warn_bound:.3g}"
    if m["max_abs"] > bound:
        return "warn", f"max abs err {m['max_abs']:.3g} > 2x baseline bound {bound:.3g}"
    return "warn", f"mean abs err {m['mean_abs']:.3g} > 1.5x baseline bound {mean_bound:.3g}"


@policy("vendor-fia")
def vendor_fia(m: Metrics, base: Metrics | None, dtype: str,
               features: Mapping[str, Any]) -> Verdict:
    """Standards §5: >= 99.5% of elements within rtol/atol (fp16 0.005/2.5e-5, bf16
    2^-7/1e-4, fp32 1e-4/1e-4) and the worst failing element's error below 10x its
    tolerance, err / (rtol * max(|a|, |g|, 2^-14/rtol)) < 10; int8 exact."""
    shared = _guard(m, dtype, exact_int=True)
    if shared:
        return shared
    if m["close_share"] < VENDOR_CLOSE_SHARE:
        return "fail", f"{m['close_share']:.2%} of elements close (< 99.5%)"
    if m["vendor_worst_ratio"] >= VENDOR_WORST_RATIO:
        return "fail", f"worst element {m['vendor_worst_ratio']:.3g}x its tolerance (>= 10)"
    return PASS
