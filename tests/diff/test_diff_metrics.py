"""Metrics of one tensor against the fp64 golden (precision-standards.md "Metrics")."""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.diff.metrics import compare, fa_noise_floor, invalid_rows, ulp
from fia_fuzz.diff.policies import functional_failure


def _golden(shape=(2, 3, 4, 16), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def test_exact_output_has_zero_errors() -> None:
    g = _golden().astype(np.float16).astype(np.float64)
    m = compare(g.astype(np.float16), g, "float16")
    assert m["max_abs"] == m["mere"] == m["rmse"] == m["ulp_max"] == 0.0
    assert m["cosine"] == pytest.approx(1.0)
    assert m["nonfinite_mismatch"] == m["invalid_mismatch"] == 0
    assert m["close_share"] == 1.0


def test_worst_element_index_and_both_values() -> None:
    g = _golden()
    a = g.copy()
    a[1, 2, 3, 7] += 0.25
    m = compare(a, g, "float32")
    assert m["worst_index"] == "(1, 2, 3, 7)"
    assert m["worst_golden"] == g[1, 2, 3, 7] and m["worst_actual"] == a[1, 2, 3, 7]
    assert m["max_abs"] == pytest.approx(0.25)
    assert m["mean_abs"] == pytest.approx(0.25 / g.size)
    assert m["rmse"] == pytest.approx(np.sqrt(0.25 ** 2 / g.size))
    assert m["max_rel"] == m["mare"] == pytest.approx(0.25 / abs(g[1, 2, 3, 7]), rel=1e-6)


def test_thousandth_share_uses_abs_err_for_small_values() -> None:
    g = np.array([1.0, 1.0, 1.0, 1e-5])
    a = np.array([1.002, 1.0, 1.0, 1e-5 + 2.0 ** -17])  # small value within 2^-16: not failing
    m = compare(a, g, "float16")
    assert m["thousandth_share"] == pytest.approx(0.25)
    assert m["hundredth_share"] == 0.0 and m["small_count"] == 1 and m["small_err_share"] == 0
    a[3] = 1e-5 + 2.0 ** -15
    assert compare(a, g, "float16")["small_err_share"] == pytest.approx(0.25)


def test_ulp_in_output_dtype() -> None:
    g = np.random.default_rng(1).uniform(1.1, 1.8, 512)  # one binade: ULP size fixed
    rounded = g.astype(ml_dtypes.bfloat16)
    m = compare(rounded, g, "bfloat16")
    assert 0.4 < m["ulp_max"] <= 0.5 and m["ulp_share_gt1"] == 0.0
    off = rounded.astype(np.float64) + 3 * ulp(rounded.astype(np.float64), "bfloat16")
    m3 = compare(off.astype(ml_dtypes.bfloat16), g, "bfloat16")
    assert 2.5 <= m3["ulp_max"] <= 3.5 and m3["ulp_share_gt1"] == 1.0
    assert ulp(np.array([1.0]), "float16")[0] == 2.0 ** -10
    assert ulp(np.array([0.0]), "float16")[0] == 2.0 ** -24


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_on_one_side_only(bad: float) -> None:
    g = _golden()
    a = g.copy()
    a[0, 1, 2, 3] = bad
    m = compare(a, g, "float32")
    assert m["nonfinite_mismatch"] == 1 and m["nonfinite_index"] == "(0, 1, 2, 3)"
    assert m["nan_actual_only" if np.isnan(bad) else "inf_actual_only"] == 1
    assert compare(g, g, "float32")["nonfinite_mismatch"] == 0


def test_invalid_rows_compared_exactly() -> None:
    """fia-semantics.md §3: rows past act_q are 0 with lse +inf; any deviation counts."""
    g = _golden()
    g[0, 0, 3, :] = 0.0
    a = g.copy()
    m = compare(a, g, "float16")
    assert m["invalid_count"] == 16 and m["invalid_mismatch"] == 0
    a[0, 0, 3, 5] = 1e-7  # far inside any tolerance, still a functional bug
    m = compare(a, g, "float16")
    assert m["invalid_mismatch"] == 1 and m["invalid_index"] == "(0, 0, 3, 5)"
    lse = np.full((2, 3, 4, 1), 2.5)
    lse[1, 2, 0, 0] = np.inf
    ok = compare(lse.astype(np.float32), lse, "float32")
    assert ok["invalid_count"] == 1 and ok["invalid_mismatch"] == 0
    finite = lse.copy()
    finite[1, 2, 0, 0] = 88.0
    assert compare(finite.astype(np.float32), lse, "float32")["invalid_mismatch"] == 1


def test_exact_zero_elements_of_valid_rows_are_not_invalid() -> None:
    """A one-hot softmax onto a 0 value element: a legit exact 0, judged by tolerance."""
    g = _golden()
    g[1, 2, 0, 9] = 0.0
    a = g.copy()
    a[1, 2, 0, 9] = 1e-9
    m = compare(a, g, "float16")
    assert m["invalid_count"] == 0 and m["invalid_mismatch"] == 0
    assert m["max_abs"] == pytest.approx(1e-9)


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "NBSD", "TND", "NTD"])
def test_invalid_rows_follow_the_golden_lse(layout: str) -> None:
    """Rows are the golden's: all-zero output row and +inf lse (B,N,S1,1 / T,N,1)."""
    b, n, s1, d = 2, 3, 4, 5
    out = np.random.default_rng(2).standard_normal((b, n, s1, d)) + 5.0
    lse = np.full((b, n, s1, 1), 1.5)
    out[1, 2, 3] = 0.0
    lse[1, 2, 3] = np.inf  # a dead row
    out[0, 1, 2] = 0.0  # an all-zero row the golden computed (finite lse): valid
    if layout in ("TND", "NTD"):
        out, lse = out[0].transpose(1, 0, 2), lse[0].transpose(1, 0, 2)  # T=S1 rows
        out[3, 2], lse[3, 2] = 0.0, np.inf
        want, legit = (3, 2), (2, 1)
        if layout == "NTD":
            out = out.transpose(1, 0, 2)
            want, legit = (2, 3), (1, 2)
    else:
        perm = {"BNSD": (0, 1, 2, 3), "BSND": (0, 2, 1, 3), "BSH": (0, 2, 1, 3),
                "NBSD": (1, 0, 2, 3)}[layout]
        out = out.transpose(perm)
        want = tuple(np.array((1, 2, 3))[list(perm[:3])])
        legit = tuple(np.array((0, 1, 2))[list(perm[:3])])
    rows = out.reshape(b, s1, n * d) if layout == "BSH" else out
    mask = invalid_rows(rows, lse, layout, n).reshape(out.shape)
    assert mask[want].all() and mask.sum() == d, layout
    assert not mask[legit].any()
    no_lse = invalid_rows(rows, None, layout, n).reshape(out.shape)
    assert no_lse[want].all() and no_lse[legit].all() and no_lse.sum() == 2 * d


def test_int8_lsb_error() -> None:
    g = np.array([3.4, -2.5, 130.2, 0.2])  # 130.2 saturates to 127 on the device
    m = compare(np.array([3, -3, 127, 0], np.int8), g, "int8")
    assert m["lsb_max"] == pytest.approx(0.5) and m["lsb_share_gt1"] == 0.0
    assert m["invalid_count"] == 0  # a lone int8 zero comes from rounding: not an invalid row
    m = compare(np.array([5, -3, 127, 0], np.int8), g, "int8")
    assert m["lsb_max"] == pytest.approx(1.6) and m["lsb_share_gt1"] == 0.25


def test_vendor_closeness() -> None:
    g = np.linspace(0.5, 1.0, 1000)
    a = g.copy()
    a[:4] *= 1.004  # inside fp16 rtol 0.005
    assert compare(a, g, "float16")["close_share"] == 1.0
    a[:6] *= 1.01
    m = compare(a, g, "float16")
    assert m["close_share"] == pytest.approx(0.994)
    assert 2 < m["vendor_worst_ratio"] < 3  # 1.4% off over a 0.5% tolerance


def test_shape_mismatch_is_reported_not_raised() -> None:
    m = compare(np.zeros((2, 3)), np.zeros((3, 2)), "float16")
    assert m["shape_mismatch"] and m["actual_shape"] == "(2, 3)"


def test_fa_noise_floor_is_dtype_rounding_noise() -> None:
    g = _golden()
    assert 0 < fa_noise_floor(g, "float16") <= 2 * 2.0 ** -10 * 4
    assert fa_noise_floor(g, "float32") < fa_noise_floor(g, "bfloat16")


def test_an_empty_lse_placeholder_compares_clean() -> None:
    """Without softmax_lse_flag the op returns an empty (0,) lse: no error, no mismatch;
    a (1,) against it is a shape mismatch, not a silent pass."""
    m = compare(np.zeros(0, np.float32), np.zeros(0), "float32", "float16", log_scale=True)
    assert not m["shape_mismatch"] and m["numel"] == 0 and m["max_abs"] == 0.0
    assert m["nonfinite_mismatch"] == m["invalid_mismatch"] == 0
    assert compare(np.zeros(1, np.float32), np.zeros(0), "float32")["shape_mismatch"]


@pytest.mark.parametrize(("truth", "actual", "cls"), [
    (np.nan, 0.0, "nan_to_finite"), (np.inf, 65504.0, "inf_to_finite"),
    (-np.inf, np.inf, "inf_sign"), (np.inf, np.nan, "inf_to_nan"), (np.nan, -np.inf, "nan_to_inf"),
    (1.0, np.nan, "finite_to_nan"), (1.0, -np.inf, "finite_to_inf")])
def test_nonfinite_elements_are_compared_exactly_and_classed(truth, actual, cls) -> None:
    """NaN where the truth is NaN, the same-signed Inf where it is Inf, finite where finite:
    each other pairing is counted by class, and any of them is a functional failure."""
    g = np.array([[0.5, truth, 0.25]])
    a = np.array([[0.5, actual, 0.25]], np.float16)
    none = np.zeros(g.shape, bool)  # attention_out: +inf is a value, not an invalid row
    m = compare(a, g, "float16", invalid=none)
    assert m["nonfinite_mismatch"] == 1 and m[f"nonfinite_{cls}"] == 1
    assert m["nonfinite_class"] == cls and m["nonfinite_index"] == "(0, 1)"
    assert functional_failure(m)
    same = compare(np.array([[0.5, truth, 0.25]], np.float16), g, "float16", invalid=none)
    assert same["nonfinite_mismatch"] == 0 and "nonfinite_class" not in same
    assert not functional_failure(same) and same["max_abs"] == 0.0


def test_a_nonfinite_result_the_device_flow_gives_too_is_no_failure() -> None:
    """fp64 keeps an underflowing probability times an Inf value at Inf; the device flow
    (fp32) gives 0 * Inf = NaN. A kernel with that NaN matches the device-precision golden:
    explained, judged on the rest. One that also loses a NaN the baseline keeps is not."""
    from fia_fuzz.diff import judge

    truth_out = np.array([[np.inf, 1.0], [2.0, 3.0]])
    base_out = np.array([[np.nan, 1.0], [2.0, 3.0]], np.float16)
    lse = np.zeros(0, np.float32)
    row = judge((base_out.copy(), lse), (truth_out, lse), (base_out, lse), "float16",
                lse=False)
    assert row["out_nonfinite_explained"] == 1 and row["out_nonfinite_mismatch"] == 0
    assert row["verdict"] != "fail" and not row["functional"]
    lost = base_out.copy()
    lost[0, 0] = 0.0
    row = judge((lost, lse), (truth_out, lse), (base_out, lse), "float16", lse=False)
    assert row["out_nonfinite_class"] == "inf_to_finite" and row["verdict"] == "fail"
