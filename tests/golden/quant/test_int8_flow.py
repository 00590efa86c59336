"""Full int8 quantisation flow: a hand-computed case, P ties and saturation, scale forms."""

import math

import numpy as np
import pytest

from fia_fuzz.golden.quant import (
    dequantize_query,
    encode_uint64_scale,
    fixpipe_dequant,
    int8_attention,
    int_matmul,
    quantize_p,
)

F16 = np.float16


def _tiny():
    """B=N=S1=1, S2=2, D=Dv=4: q.k0 = 2, q.k1 = 0; v0 = +1, v1 = -1 in column 0."""
    q = np.array([1, 0, 0, 0], np.int8).reshape(1, 1, 1, 4)
    k = np.array([[2, 5, 0, 0], [0, 0, 7, 0]], np.int8).reshape(1, 1, 2, 4)
    v = np.array([[1, 0, 3, 0], [-1, 2, 0, 0]], np.int8).reshape(1, 1, 2, 4)
    return q, k, v


def test_hand_computed_device_flow() -> None:
    q, k, v = _tiny()
    deq2 = np.float32(1 / 127)
    out, lse = int8_attention(q, k, v, dequant_scale1=np.float32([0.5]),
                              quant_scale1=np.float32([127]), dequant_scale2=deq2,
                              scale=1.0, precision="device")
    # scores: [2, 0] * 0.5 = [1, 0] (exact in fp16); p = [1, e^-1], l = 1 + e^-1
    e1 = float(np.exp(np.float32(-1)))
    l_sum = float(np.float32(1) + np.float32(e1))
    # P*127 = [127, 46.72...] -> int8 [127, 47]
    assert quantize_p(np.float32([1, e1]), 127.0).tolist() == [127, 47]
    # P·V (int32): column 0: 127 - 47 = 80 ; column 1: 2*47 = 94 ; column 2: 3*127 = 381
    pv = [80, 94, 381, 0]
    deq = [float(F16(np.float32(x) * deq2)) for x in pv]
    want = [float(np.float32(x) / np.float32(l_sum)) for x in deq]
    assert out.dtype == np.float32
    assert out.reshape(-1).tolist() == want
    assert deq[0] == 1290 / 2048          # fp16(80/127) = 0.6298828125
    assert lse.reshape(-1).tolist() == [float(np.float32(math.log(l_sum)) + np.float32(1))]


def test_uint64_and_fp32_scales_agree_when_representable() -> None:
    q, k, v = _tiny()
    args = dict(quant_scale1=np.float32([100]), scale=0.75, precision="device")
    a = int8_attention(q, k, v, dequant_scale1=np.float32([0.5]),
                       dequant_scale2=np.float32([0.0078125]), **args)
    b = int8_attention(q, k, v, dequant_scale1=encode_uint64_scale(np.float32([0.5])),
                       dequant_scale2=encode_uint64_scale(np.float32([0.0078125])), **args)
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


def test_uint64_truncation_is_visible() -> None:
    q, k, v = _tiny()
    args = dict(dequant_scale1=np.float32([0.5]), quant_scale1=np.float32([127]), scale=1.0,
                precision="fp64")
    a, _ = int8_attention(q, k, v, dequant_scale2=np.float32([0.1]), **args)
    b, _ = int8_attention(q, k, v, dequant_scale2=encode_uint64_scale(np.float32([0.1])),
                          **args)
    assert a[0, 0, 0, 0] / b[0, 0, 0, 0] == pytest.approx(
        float(np.float32(0.1)) / 0.0999755859375, rel=1e-15)


def test_p_quantisation_ties_and_saturation() -> None:
    p = np.array([1.0, 0.5, 0.3, 0.1, 0.0], np.float32)
    # *2.5 = [2.5, 1.25, 0.75, 0.25, 0] -> [2, 1, 1, 0, 0]
    assert quantize_p(p, 2.5).tolist() == [2, 1, 1, 0, 0]
    # *200 = [200, 100, 60, 20, 0] -> 200 saturates at 127
    assert quantize_p(p, 200.0).tolist() == [127, 100, 60, 20, 0]


def test_int32_accumulators_and_fixpipe() -> None:
    a = np.full((1, 512), -128, np.int8)
    assert int_matmul(a, np.full((512, 1), -128, np.int8)).tolist() == [[128 * 128 * 512]]
    big = np.full((1, 140000), 127, np.int8)
    wrapped = int_matmul(big, np.full((140000, 1), 127, np.int8))
    assert wrapped.dtype == np.int32
    assert int(wrapped[0, 0]) == 127 * 127 * 140000 - 2**32   # int32 wrap-around
    # 2049 lies halfway between the fp16 neighbours 2048 and 2050: ties to even 2048
    assert fixpipe_dequant(np.array([2049], np.int32), 1.0).tolist() == [2048.0]


def test_fp64_flow_matches_an_independent_reference() -> None:
    rng = np.random.default_rng(3)
    q = rng.integers(-128, 128, (2, 4, 3, 32), dtype=np.int8)
    k = rng.integers(-128, 128, (2, 2, 5, 32), dtype=np.int8)
    v = rng.integers(-128, 128, (2, 2, 5, 32), dtype=np.int8)
    deq1, qs1, deq2, scale = 1 / 4096, 127.0, 1 / 127 / 64, 0.17
    out, lse = int8_attention(q, k, v, dequant_scale1=np.float64(deq1),
                              quant_scale1=np.float64(qs1), dequant_scale2=np.float64(deq2),
                              scale=scale, precision="fp64")
    kk, vv = np.repeat(k, 2, axis=1).astype(np.int64), np.repeat(v, 2, axis=1).astype(np.int64)
    s = np.einsum("bnqd,bnkd->bnqk", q.astype(np.int64), kk) * np.float32(deq1) * scale
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    p_q = np.minimum(p * qs1, 127)  # saturated, not rounded, in the ideal
    want = (np.einsum("bnqk,bnkd->bnqd", p_q, vv) * float(np.float32(deq2))
            / p.sum(-1, keepdims=True))
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(lse, (np.log(p.sum(-1)) + m[..., 0]), rtol=1e-12)


def test_fully_masked_rows_are_zero_with_inf_lse() -> None:
    q, k, v = _tiny()
    masked = np.array([True, True]).reshape(1, 1, 1, 2)
    for precision in ("device", "fp64"):
        out, lse = int8_attention(q, k, v, dequant_scale1=np.float32([0.5]),
                                  quant_scale1=np.float32([127]),
                                  dequant_scale2=np.float32([1 / 127]), scale=1.0,
                                  precision=precision, masked=masked)
        assert np.all(out == 0) and np.all(np.isinf(lse))
    out, _ = int8_attention(q, k, v, dequant_scale1=np.float32([0.5]),
                            quant_scale1=np.float32([127]), dequant_scale2=np.float32([1]),
                            scale=1.0, precision="device",
                            masked=np.array([False, True]).reshape(1, 1, 1, 2))
    assert out.reshape(-1).tolist() == [127, 0, 381, 0]   # only key 0: P = [1] -> 127


@pytest.mark.parametrize(("layout", "to_tokens"), [
    ("BSND", lambda x: x),
    ("BNSD", lambda x: x.transpose(0, 2, 1, 3)),
    ("BSH", lambda x: x.reshape(2, 3, 2, 4)),
])
def test_dequantize_query_per_token_per_head(layout, to_tokens) -> None:
    # B=2, S1=3, N=2, D=4; scale (B,S1,N) = 2^-(token*2 + head)
    tokens = np.arange(2 * 3 * 2).reshape(2, 3, 2)
    scale = (2.0 ** -tokens).astype(np.float32)
    q_tok = np.arange(-24, 24, dtype=np.int8).reshape(2, 3, 2, 4)
    q = {"BSND": q_tok, "BNSD": q_tok.transpose(0, 2, 1, 3),
         "BSH": q_tok.reshape(2, 3, 8)}[layout]
    got = dequantize_query(q, scale.reshape(-1, 2, 1), layout=layout, num_heads=2)
    assert got.shape == q.shape and got.dtype == np.float32
    assert np.array_equal(to_tokens(got), q_tok * scale[..., None])


def test_dequantize_query_tnd_and_bad_scale() -> None:
    q = np.ones((5, 2, 4), np.int8)
    s = np.arange(10, dtype=np.float32).reshape(5, 2)
    got = dequantize_query(q, s, layout="TND", num_heads=2, precision="fp64")
    assert got.dtype == np.float64 and np.array_equal(got, np.broadcast_to(s[..., None], q.shape))
    with pytest.raises(ValueError, match="one per"):
        dequantize_query(q, s[:4], layout="TND", num_heads=2)
