"""Named verdict policies (precision-standards.md §1-§5), each with a passing and a failing case."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.diff import DEFAULT_POLICY, POLICIES, judge
from fia_fuzz.diff.metrics import compare
from fia_fuzz.diff.policies import BENCH_LEVELS, benchmark_level, benchmark_ratios

NO_FEATURES: dict = {}


def _truth(n=4096, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n) * 0.5


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _verdict(name, actual, truth, dtype, baseline=None, features=NO_FEATURES):
    m = compare(actual, truth, dtype)
    b = compare(baseline, truth, dtype) if baseline is not None else None
    return POLICIES[name](m, b, dtype, features)


def test_every_documented_policy_is_registered() -> None:
    assert set(POLICIES) == {"ascend-thousandth", "ascend-threshold", "ascend-benchmark",
                             "flash-attention", "vendor-fia"}
    assert DEFAULT_POLICY in POLICIES


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_nan_and_invalid_rows_fail_under_every_policy(name: str) -> None:
    t = _truth().reshape(256, 16)
    t[0] = 0.0  # an invalid row (a whole last-axis row of zeros)
    base = _cast(t, "float16")
    nan = base.copy()
    nan[6, 4] = np.nan
    assert _verdict(name, nan, t, "float16", base)[0] == "fail"
    leak = base.copy()
    leak[0, 3] = np.float16(1e-4)
    verdict, reason = _verdict(name, leak, t, "float16", base)
    assert verdict == "fail" and "invalid rows" in reason


def test_thousandth_passes_fp16_rounding_and_flags_bf16_rounding() -> None:
    """The documented reason the default is not ascend-thousandth."""
    t = _truth()
    assert _verdict("ascend-thousandth", _cast(t, "float16"), t, "float16")[0] == "pass"
    bf = _cast(t, "bfloat16")
    assert _verdict("ascend-thousandth", bf, t, "bfloat16")[0] != "pass"
    assert _verdict("flash-attention", bf, t, "bfloat16", baseline=bf)[0] == "pass"


def test_thousandth_warn_and_fail_bands() -> None:
    t = np.linspace(1.0, 2.0, 10000)
    a = t.copy()
    a[:20] *= 1.002  # 0.2% of elements off by 2e-3: above the thousandth share
    assert _verdict("ascend-thousandth", a, t, "float16")[0] == "warn"
    a[:200] *= 1.02  # 2% off by > 1e-2: the hundredth rule fails
    assert _verdict("ascend-thousandth", a, t, "float16")[0] == "fail"
    assert _verdict("ascend-thousandth", -t, t, "float16")[1].startswith("cosine")


def test_threshold_mere_and_mare() -> None:
    t = np.linspace(1.0, 2.0, 1000)
    assert _verdict("ascend-threshold", t * (1 + 2.0 ** -12), t, "float16")[0] == "pass"
    assert _verdict("ascend-threshold", t * (1 + 2.0 ** -9), t, "float16")[1].startswith("MERE")
    a = t.copy()
    a[0] *= 1.02  # one element beyond 10 * Th
    assert _verdict("ascend-threshold", a, t, "float16")[1].startswith("MARE")


def test_benchmark_ratios_and_levels() -> None:
    t = _truth()
    base = _cast(t, "float16").astype(np.float64)
    err = base - t
    assert _verdict("ascend-benchmark", base, t, "float16", base)[0] == "pass"
    worse = t + 1.8 * err  # MERE/RMSE ratios 1.8: inside L0 (2) but not L1 (1.5)
    m, b = compare(worse, t, "float16"), compare(base, t, "float16")
    assert benchmark_level(benchmark_ratios(m, b, "float16")) == "L0"
    assert _verdict("ascend-benchmark", worse, t, "float16", base)[0] == "warn"
    bad = t + 3 * err
    assert _verdict("ascend-benchmark", bad, t, "float16", base)[0] == "fail"
    assert _verdict("ascend-benchmark", base, t, "float16", None)[0] == "warn"
    assert list(BENCH_LEVELS) == ["L2", "L1", "L0"]


def test_flash_attention_factor_bands() -> None:
    t = _truth()
    base = _cast(t, "float16")
    i = int(np.argmax(np.abs(base.astype(np.float64) - t)))
    base_err = float(np.abs(base.astype(np.float64) - t).max())
    for factor, want in ((1.5, "pass"), (3.0, "warn"), (6.0, "fail")):
        a = base.astype(np.float64)
        a[i] = t[i] + factor * base_err * np.sign(a[i] - t[i])
        assert _verdict("flash-attention", a, t, "float32", base)[0] == want, factor


def test_flash_attention_allows_1e5_for_variants() -> None:
    t = np.ones(64)
    base = t.copy()
    a = t + 5e-6
    assert _verdict("flash-attention", a, t, "float32", base)[0] == "fail"
    for feats in ({"sparse_mode": 3}, {"paged": True}, {"kv_list": True}, {"mask": "bool"}):
        assert _verdict("flash-attention", a, t, "float32", base, feats)[0] == "pass", feats


def test_vendor_fia_closeness_and_worst_element() -> None:
    t = np.linspace(0.5, 1.0, 1000)
    a = t.copy()
    a[:4] *= 1.02
    assert _verdict("vendor-fia", a, t, "float16")[0] == "pass"
    a[:10] *= 1.02  # 1% not close
    assert _verdict("vendor-fia", a, t, "float16")[1].endswith("(< 99.5%)")
    b = t.copy()
    b[0] *= 1.2  # one element 40x its tolerance
    assert "tolerance" in _verdict("vendor-fia", b, t, "float16")[1]


def test_int8_outputs_are_judged_in_lsb() -> None:
    t = np.array([3.4, -2.5, 10.2, 0.2] * 8)
    off_by_one = np.array([4, -3, 10, 0] * 8, np.int8)
    assert _verdict("flash-attention", off_by_one, t, "int8", off_by_one)[0] == "pass"
    assert _verdict("vendor-fia", off_by_one, t, "int8")[0] == "warn"
    off_by_two = np.array([6, -3, 10, 0] * 8, np.int8)
    for name in POLICIES:
        assert _verdict(name, off_by_two, t, "int8", off_by_one)[0] == "fail", name


def test_an_exact_zero_inside_a_valid_row_is_judged_by_tolerance() -> None:
    """A one-hot softmax onto a value element that is 0 gives an exact 0 in a valid
    row; an ulp there is precision, not an invalid-row failure."""
    t_out, t_lse = _truth(256).reshape(1, 2, 8, 16), np.full((1, 2, 8, 1), 3.0)
    t_out[0, 1, 5, 7] = 0.0
    base = (_cast(t_out, "float16"), t_lse.astype(np.float32))
    dev = base[0].copy()
    dev[0, 1, 5, 7] = np.float16(2.0 ** -24)  # one fp16 subnormal ulp
    for lse in (True, False):
        row = judge((dev, base[1]), (t_out, t_lse), base, "float16", lse=lse)
        assert row["out_invalid_mismatch"] == 0 and row["functional"] == "", lse
        assert row["verdict_flash-attention"] == "pass", lse


def test_int8_misses_shared_with_the_same_dtype_golden_are_inconclusive() -> None:
    """A near-zero float output from cancelling ~1e36 terms flips sign in device
    precision: truth saturates at 127, device and same-dtype golden at -128."""
    t_out = np.array([[3.4, -2.5, 127.0, 0.2] * 4])  # 127: the clipped ideal
    t_lse = np.zeros((0,))   # the flag-off placeholder
    flipped = np.array([[3, -2, -128, 0] * 4], np.int8)
    correct = np.array([[3, -2, 127, 0] * 4], np.int8)
    row = judge((flipped, t_lse), (t_out, t_lse), (flipped, t_lse), "int8", lse=False)
    for name in POLICIES:
        assert row[f"verdict_{name}"] == "inconclusive", name
        assert "float-level error" in row[f"reason_{name}"]
    assert row["out_lsb_max"] == 255 and row["out_lsb_inconclusive"] == 4
    assert row["baseline_verdict_flash-attention"] == "inconclusive"
    # the same miss with a correct same-dtype golden is the kernel's: it fails
    row = judge((flipped, t_lse), (t_out, t_lse), (correct, t_lse), "int8", lse=False)
    assert row["verdict_flash-attention"] == "fail" and row["out_lsb_max_decisive"] == 255
    # one unexplained element among explained ones still fails
    worse = flipped.copy()
    worse[0, 0] = 6
    row = judge((worse, t_lse), (t_out, t_lse), (flipped, t_lse), "int8", lse=False)
    assert row["verdict_flash-attention"] == "fail"
    # a device 1 LSB beyond the golden's own miss is explained; 2 LSB beyond is not
    t2 = np.array([[87.08] * 8])
    base2 = np.full((1, 8), 86, np.int8)
    for dev, want in ((85, "inconclusive"), (84, "fail"), (87, "pass")):
        row = judge((np.full((1, 8), dev, np.int8), t_lse), (t2, t_lse), (base2, t_lse),
                    "int8", lse=False)
        assert row["verdict_flash-attention"] == want, dev


def test_int8_with_an_offset_allows_the_second_rounding() -> None:
    """quant_offset2: sat8(rint(rint(x*qs2) + qo2)) rounds twice, so a correct output
    sits up to 1 LSB from the ideal before any float noise (fia-semantics.md §8)."""
    t = np.array([[-87.08, 3.4, -2.5, 10.2] * 4])  # ideal: x*qs2 - 3.4999 = -90.58 - 3.5
    t_lse = np.zeros((0,))   # the flag-off placeholder
    dev = np.array([[-86, 3, -2, 10] * 4], np.int8)
    offset = {"post_quant_offset": True}
    row = judge((dev, t_lse), (t, t_lse), (dev, t_lse), "int8", lse=False, features=offset)
    for name in POLICIES:  # vendor-fia's exactness (1 LSB with the offset) is 0.08 short
        want = "inconclusive" if name == "vendor-fia" else "pass"
        assert row[f"verdict_{name}"] == want, (name, row[f"reason_{name}"])
    assert row["out_lsb_slack"] == 0.5
    plain = judge((dev, t_lse), (t, t_lse), (dev, t_lse), "int8", lse=False)
    assert plain["verdict_flash-attention"] == "inconclusive"
    far = dev.copy()
    far[0, 0] = -84  # 3.08 LSB: beyond the second rounding, 2 LSB from the golden's -86
    row = judge((far, t_lse), (t, t_lse), (dev, t_lse), "int8", lse=False, features=offset)
    assert row["verdict_flash-attention"] == "fail" and "(> 1.5)" in row["reason_flash-attention"]
    # the same-dtype golden just inside the bound, the device just outside: still shared
    t3 = np.array([[-112.5074] * 8])
    base3, dev3 = np.full((1, 8), -112, np.int8), np.full((1, 8), -112, np.int8)
    base3[0, 0] = -114  # 1.49 LSB: inside 1.5, beyond rounding alone (1 with the offset)
    dev3[0, 0] = -111  # 1.51 LSB: outside 1.5, within the golden's miss + 1
    row = judge((dev3, t_lse), (t3, t_lse), (base3, t_lse), "int8", lse=False, features=offset)
    assert row["verdict_flash-attention"] == "inconclusive", row["reason_flash-attention"]


def test_inconclusive_ranks_between_pass_and_warn() -> None:
    from fia_fuzz.diff.policies import SEVERITY

    assert SEVERITY["pass"] < SEVERITY["inconclusive"] < SEVERITY["warn"] < SEVERITY["fail"]


def test_judge_row_records_every_policy_and_the_worse_tensor() -> None:
    t_out, t_lse = _truth(256).reshape(1, 2, 8, 16), np.full((1, 2, 8, 1), 3.0)
    base = (_cast(t_out, "float16"), t_lse.astype(np.float32))
    bad_lse = base[1].copy()
    bad_lse[0, 1, 2, 0] = np.nan
    row = judge((base[0], bad_lse), (t_out, t_lse), base, "float16", lse=True)
    for name in POLICIES:
        assert row[f"out_verdict_{name}"] == "pass" or name.startswith("ascend-th")
        assert row[f"lse_verdict_{name}"] == "fail"
        assert row[f"verdict_{name}"] == "fail" and row[f"reason_{name}"].startswith("lse:")
    assert row["verdict"] == row[f"verdict_{DEFAULT_POLICY}"]
    assert row["functional"].startswith("lse:") and row["out_dtype"] == "float16"
    assert row["out_fa_ratio"] == pytest.approx(1.0) and row["out_bench_level"] == "L2"
    no_lse = judge(base, (t_out, t_lse), base, "float16", lse=False)
    assert no_lse["verdict_flash-attention"] == "pass" and "lse_max_abs" not in no_lse
    assert no_lse["baseline_verdict_flash-attention"] == "pass"


@given(st.integers(0, 2**32 - 1), st.sampled_from(["float16", "bfloat16"]))
def test_the_same_dtype_baseline_passes_the_ratio_policies(seed: int, dtype: str) -> None:
    t = _truth(512, seed)
    base = _cast(t, dtype)
    for name in ("flash-attention", "ascend-benchmark"):
        assert _verdict(name, base, t, dtype, base)[0] == "pass", name


def test_lse_is_judged_at_the_op_dtype() -> None:
    """An absolute lse error is a relative error of the softmax weights (judge docstring)."""
    t_out, t_lse = _truth(256).reshape(1, 2, 8, 16), np.full((1, 2, 8, 1), 4.2)
    base = (_cast(t_out, "float16"), t_lse.astype(np.float32))
    small = (base[0], (t_lse + 1e-4).astype(np.float32))  # 20x the fp32 baseline's error
    row = judge(small, (t_out, t_lse), base, "float16", lse=True)
    assert row["lse_verdict_flash-attention"] == "pass"
    assert row["lse_abs_floor"] == 2.0 ** -11
    big = (base[0], (t_lse + 5e-3).astype(np.float32))
    row = judge(big, (t_out, t_lse), base, "float16", lse=True)
    assert row["lse_verdict_flash-attention"] == "fail"
    assert row["verdict"] == "fail" and row["reason_flash-attention"].startswith("lse:")


def test_lse_relative_errors_are_log_scale() -> None:
    """An lse near 0 (row sum near 1, e.g. all-negative logits) does not make its absolute
    error, the softmax weights' relative error, relatively larger."""
    t_out = _truth(256).reshape(1, 2, 8, 16)
    t_lse = np.linspace(1.0, 6.0, 16).reshape(1, 2, 8, 1)
    t_lse[0, 0, :3, 0] = (0.002, -0.004, 0.01)
    base = (_cast(t_out, "float16"), (t_lse + 2e-7).astype(np.float32))
    dev = (base[0], (t_lse + 2e-5).astype(np.float32))  # 1/25 of an fp16 ulp at 1
    row = judge(dev, (t_out, t_lse), base, "float16", lse=True)
    for name in POLICIES:
        assert row[f"lse_verdict_{name}"] == "pass", (name, row[f"reason_{name}"])
    assert row["lse_mare"] == pytest.approx(2e-5, rel=1e-2) and row["lse_small_count"] == 0
    # near-zero lse rows: RMS 0.08, yet an error of 5e-5 (weights off by 5e-5) is below the
    # eighth of fp16's unit roundoff that floors the ratios
    small = t_lse * 0.02
    row = judge((base[0], (small + 5e-5).astype(np.float32)), (t_out, small),
                (base[0], (small + 1e-5).astype(np.float32)), "float16", lse=True)
    assert row["lse_golden_rms"] < 0.1 and row["lse_error_scale"] == 1.0
    assert row["lse_verdict_ascend-benchmark"] == "pass", row["reason_ascend-benchmark"]


def test_lse_floor_includes_its_fp32_storage() -> None:
    """An fp32 lse of ~4.7e6 (huge logits) has an ulp of 0.5: no lse is stored nearer than
    that, whatever the op dtype's unit roundoff."""
    t_out = _truth(64).reshape(1, 1, 4, 16)
    t_lse = np.array([4661602.193969727, 4.5, 120.25, 9.0]).reshape(1, 1, 4, 1)
    def lse_off(err: float) -> np.ndarray:
        off = t_lse.copy()
        off[0, 0, 0, 0] += err
        return off.astype(np.float32)

    base = (_cast(t_out, "float16"), lse_off(0.35))
    row = judge((base[0], lse_off(0.81)), (t_out, t_lse), base, "float16", lse=True)
    assert row["lse_abs_floor"] == 0.5
    assert row["lse_verdict_flash-attention"] == "pass"
    far = judge((base[0], lse_off(4.0)), (t_out, t_lse), base, "float16", lse=True)
    assert far["lse_verdict_flash-attention"] == "fail"


def test_lse_tolerance_dtype() -> None:
    from fia_fuzz.diff.judge import lse_tolerance_dtype

    assert lse_tolerance_dtype("bfloat16", {}) == "bfloat16"
    assert lse_tolerance_dtype("float32", {"q_dtype": "float32"}) == "float32"
    assert lse_tolerance_dtype("int8", {"q_dtype": "bfloat16"}) == "bfloat16"
    assert lse_tolerance_dtype("int8", {"q_dtype": "int8"}) == "float16"


def test_benchmark_mare_ignores_small_values() -> None:
    t = np.linspace(0.5, 1.0, 1000)
    t[:3] = 1e-5  # small values: judged by their absolute error, not by MARE
    base = _cast(t, "float16")
    a = base.astype(np.float64)
    a[:3] = t[:3] + 2.0 ** -17
    assert _verdict("ascend-benchmark", a, t, "float16", base)[0] == "pass"
    assert compare(a, t, "float16")["mare"] > 0.7
    a[:3] = t[:3] + 2.0 ** -14  # beyond the small-value atol (the floor forgives one element)
    assert "small ratio" in _verdict("ascend-benchmark", a, t, "float16", base)[1]
