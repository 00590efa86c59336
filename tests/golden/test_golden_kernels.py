"""The golden's compiled kernels (golden/kernels.py): the exp's accuracy and special values,
the softmax step against NumPy in float64, the float16 output cast and V's finiteness check."""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden.kernels import (
    ROUND_BF16,
    ROUND_F16,
    exp_shifted,
    finite_bits,
    float16_bits,
    normalise_rows,
    round_rows,
    row_sum,
    softmax_block,
)


def _exp(x: np.ndarray) -> np.ndarray:
    rows = x.reshape(1, -1).copy()
    exp_shifted(rows, 0, x.dtype.type(0))
    return rows[0]


def test_exp_float32_accuracy():
    x = np.linspace(-110, 0, 1_000_003, dtype=np.float32)
    got, ref = _exp(x).astype(np.float64), np.exp(x.astype(np.float64))
    normal = ref >= np.finfo(np.float32).tiny
    ulp = np.spacing(ref[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(got[normal] - ref[normal]) / ulp).max() <= 1.5
    # subnormal results: within one step of float32's subnormal grid
    assert (np.abs(got[~normal] - ref[~normal]) / 2.0 ** -149).max() <= 1.0


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="needs a wider long double")
def test_exp_float64_accuracy():
    x = np.linspace(-740, 0, 1_000_003)
    got, ref = _exp(x).astype(np.longdouble), np.exp(x.astype(np.longdouble))
    ulp = np.spacing(ref.astype(np.float64)).astype(np.longdouble)
    assert (np.abs(got - ref) / ulp).max() <= 1.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_special_values(dtype):
    x = np.array([0.0, -0.0, -np.inf, np.nan, -1000.0, -1e30], dtype)
    got = _exp(x)
    assert list(got[[0, 1]]) == [1.0, 1.0] and list(got[[2, 4, 5]]) == [0.0, 0.0, 0.0]
    assert np.isnan(got[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_block_matches_numpy(dtype):
    """Two blocks of the online softmax equal a float64 softmax over both; NaN rows stay
    NaN, rows of -inf attend nothing, a sink's row starts from its score."""
    rng = np.random.default_rng(5)
    rows, cols = 6, 37
    blocks = [rng.standard_normal((rows, cols)).astype(dtype) * 4 for _ in range(2)]
    blocks[0][1, 3] = np.nan
    blocks[0][2] = blocks[1][2] = -np.inf
    blocks[1][3, :5] = -np.inf
    m = np.full(rows, -np.inf, dtype)
    m[4] = 2.5  # a sink of score 2.5 and value 0
    l_sum = np.zeros(rows, dtype)
    l_sum[4] = 1
    hit = np.zeros(rows, bool)
    alpha = np.empty(rows, dtype)
    acc = np.zeros(rows, np.float64)  # sum over both blocks of p * column index
    for c0, blk in zip((0, cols), blocks, strict=True):
        p = blk.copy()
        with np.errstate(invalid="ignore"):
            softmax_block(p, m, l_sum, hit, alpha)
            acc = acc * alpha + p.astype(np.float64) @ np.arange(c0, c0 + cols)
    s = np.concatenate(blocks, axis=1).astype(np.float64)
    s = np.concatenate([np.where(np.arange(rows) == 4, 2.5, -np.inf)[:, None], s], axis=1)
    with np.errstate(invalid="ignore"):
        w = np.exp(s - s.max(axis=1, keepdims=True))
        want = (w[:, 1:] @ np.arange(2 * cols)) / w.sum(axis=1)
        got = acc / l_sum
    assert list(hit) == [True, True, False, True, True, True]
    assert np.isnan(got[1]) and np.isnan(l_sum[1])
    live = [0, 3, 4, 5]
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got[live], want[live], rtol=rtol)
    np.testing.assert_allclose(m[live], s[live].max(axis=1), rtol=0)


@pytest.mark.parametrize("mode", [ROUND_F16, ROUND_BF16])
def test_round_rows_rounds_p_as_a_cast(mode):
    """P from softmax_block (NaN rows, rows of -inf, underflows) rounded by round_rows has
    the bits of a cast to the dtype and back; NaN stays NaN."""
    rng = np.random.default_rng(6)
    s = (rng.standard_normal((5, 300)) * 12).astype(np.float32)
    s[1, 4] = np.nan
    s[2] = -np.inf
    s[3, :7] = -np.inf
    m, l_sum = np.full(5, -np.inf, np.float32), np.zeros(5, np.float32)
    hit, alpha = np.zeros(5, bool), np.empty(5, np.float32)
    with np.errstate(invalid="ignore"):
        softmax_block(s, m, l_sum, hit, alpha)
    p = s.copy()
    round_rows(p, mode)
    dtype = np.float16 if mode == ROUND_F16 else ml_dtypes.bfloat16
    assert np.array_equal(np.isnan(p), np.isnan(s))
    live = ~np.isnan(s)
    assert np.array_equal(p[live], s[live].astype(dtype).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalise_rows_is_numpys_division(dtype):
    """Rows that attend divide by their sum in IEEE arithmetic (NaN, Inf, a zero sum: no
    exception), the others become 0 whatever they held."""
    rng = np.random.default_rng(7)
    acc = rng.standard_normal((6, 9)).astype(dtype)
    acc[1, 2], acc[4, 0] = np.nan, np.inf
    l_sum = np.array([1.5, 2, np.nan, 0, np.inf, 3], dtype)
    hit = np.array([True, True, True, True, True, False])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.where(hit[:, None], acc / l_sum[:, None], 0)
    normalise_rows(acc, l_sum, hit)
    assert acc.tobytes() == want.astype(dtype).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sum(dtype):
    x = np.random.default_rng(2).random((3, 1000)).astype(dtype)
    got = np.array([row_sum(x, i) for i in range(3)])
    np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=1), rtol=1e-6)
    assert row_sum(np.array([[1, np.nan, 2]], dtype), 0) != row_sum(
        np.array([[1, np.nan, 2]], dtype), 0)


def test_float16_bits_is_numpys_cast():
    """Every 4099th float32 bit pattern (NaNs, Infs, subnormals, overflow) and the edges."""
    sweep = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504, 65519.99, 65520,
                      2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 2.0 ** -14, 6.1e-5],
                     np.float32)
    x = np.concatenate([sweep, edges])
    got = np.empty(x.size, np.uint16)
    float16_bits(x, got)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(got, want)


@pytest.mark.parametrize(("dtype", "view", "exponent"), [
    (np.float32, np.int32, 0x7F800000), (np.float64, np.int64, 0x7FF0000000000000)])
def test_finite_bits(dtype, view, exponent):
    x = np.random.default_rng(1).standard_normal(4096).astype(dtype)
    x[7] = np.finfo(dtype).max
    x[8] = -np.finfo(dtype).tiny / 4  # subnormal
    assert finite_bits(x.view(view), exponent)
    for bad in (np.inf, -np.inf, np.nan, -np.nan):
        y = x.copy()
        y[4000] = bad
        assert not finite_bits(y.view(view), exponent)
