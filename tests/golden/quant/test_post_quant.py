"""Post-quantisation to int8: ties, saturation at both ends, the two step orders, layouts."""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden.quant import (
    POST_QUANT_ORDERS,
    channel_view,
    post_quantize,
    post_quantize_ideal,
    post_quantize_output,
)

F16 = np.float16


def pq(x, qs=1.0, qo=None, order="round_then_offset"):
    x = np.asarray(x, np.float32)
    qo = None if qo is None else np.float32(qo)
    return post_quantize(x, np.float32(qs), qo, order=order).tolist()


@pytest.mark.parametrize("order", POST_QUANT_ORDERS)
def test_ties_round_half_to_even(order: str) -> None:
    assert pq([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -127.5], order=order) == \
        [0, 2, 2, 0, -2, -2, 126, -128]


@pytest.mark.parametrize("order", POST_QUANT_ORDERS)
def test_saturation_at_both_ends(order: str) -> None:
    assert pq([1000.0, -1000.0, 127.4, 127.6, -128.4, -128.6, np.inf, -np.inf],
              order=order) == [127, -128, 127, 127, -128, -128, 127, -128]


def test_sat9_before_offset_distinguishes_the_orders() -> None:
    # 300 saturates to 255 before the offset in the decode order, not in the other
    assert pq([300.0], qo=-200.0) == [55]
    assert pq([300.0], qo=-200.0, order="offset_then_round") == [100]
    assert pq([-300.0], qo=200.0) == [-56]
    assert pq([-300.0], qo=200.0, order="offset_then_round") == [-100]


def test_non_integer_offset_rounds_twice_in_decode_order() -> None:
    # rint(2.5) = 2, + 0.25 = 2.25 -> 2 ; other order: 2.75 -> 3 (the 1-LSB difference)
    assert pq([2.5], qo=0.25) == [2]
    assert pq([2.5], qo=0.25, order="offset_then_round") == [3]
    assert pq([3.5], qo=-0.5) == [4]  # rint(3.5)=4, 3.5 -> tie -> 4
    assert pq([3.5], qo=-0.5, order="offset_then_round") == [3]


def test_fp16_arithmetic_not_fp32() -> None:
    # fp16(2.5002) == 2.5 -> tie -> 2, although the fp32 value rounds to 3
    assert float(F16(np.float32(2.5002))) == 2.5
    assert pq([2.5002]) == [2]
    # fp16(0.1) = 0.0999755859375; 25 * that = 2.49938..., which rounds in fp16 to 2.5 -> 2
    assert float(F16(25 * 0.0999755859375)) == 2.5
    assert pq([25.0], qs=0.1) == [2]
    # fp16 product overflows to inf and saturates
    assert pq([60000.0], qs=2.0) == [127]


def test_bf16_input_and_bf16_params() -> None:
    x = np.array([2.5, 3.5, -7.25], ml_dtypes.bfloat16)
    got = post_quantize(x, np.array(2.0, ml_dtypes.bfloat16), np.array(1.0, ml_dtypes.bfloat16))
    # 5 + 1 = 6 ; 7 + 1 = 8 ; -14.5 -> tie -> -14, + 1 = -13
    assert got.tolist() == [6, 8, -13]


def test_nan_becomes_zero() -> None:
    assert pq([np.nan]) == [0]


def test_ideal_is_unrounded_and_clipped() -> None:
    got = post_quantize_ideal(np.array([2.5, 1000.0, -1000.0]), 1.0, 0.25)
    assert got.tolist() == [2.75, 127.0, -128.0]


def test_rejects_unknown_order() -> None:
    with pytest.raises(ValueError, match="order"):
        post_quantize(np.zeros(1), 1.0, order="truncate")


# per-channel: channel c = n*D + d gets scale c+1; x = 1 everywhere -> out == scale
N, D = 2, 3
FLAT = np.arange(1, N * D + 1, dtype=np.float32)


@pytest.mark.parametrize(("layout", "shape", "param_shape"), [
    ("BSH", (2, 1, N * D), (1, 1, N * D)),
    ("BSH", (2, 1, N * D), (N * D,)),
    ("BNSD", (2, N, 3, D), (1, N, 1, D)),
    ("BNSD", (2, N, 3, D), (N, D)),
    ("BSND", (2, 3, N, D), (1, 1, N, D)),
    ("BSND", (2, 3, N, D), (N, D)),
    ("NBSD", (N, 2, 3, D), (N, D)),
    ("TND", (5, N, D), (N, D)),
    ("NTD", (N, 5, D), (N, D)),
])
def test_per_channel_in_every_output_layout(layout, shape, param_shape) -> None:
    out = np.ones(shape, np.float16)
    q = post_quantize_output(out, FLAT.reshape(param_shape), None, out_layout=layout,
                             num_heads=N)
    assert q.dtype == np.int8 and q.shape == shape
    # move to (..., N, D) and check every position carries its channel's scale
    heads_last = {"BSH": lambda a: a.reshape(*a.shape[:-1], N, D),
                  "BNSD": lambda a: a.transpose(0, 2, 1, 3), "BSND": lambda a: a,
                  "NBSD": lambda a: a.transpose(1, 2, 0, 3), "TND": lambda a: a,
                  "NTD": lambda a: a.transpose(1, 0, 2)}[layout](q)
    assert np.array_equal(heads_last, np.broadcast_to(FLAT.reshape(N, D), heads_last.shape))


def test_per_channel_offset_and_per_tensor() -> None:
    out = np.full((1, N, 1, D), 2.0, np.float16)
    off = -FLAT.reshape(1, N, 1, D)
    q = post_quantize_output(out, np.float32([3.0]), None, out_layout="BNSD", num_heads=N)
    assert np.all(q == 6)
    q = post_quantize_output(out, FLAT.reshape(N, D), off.reshape(N, D), out_layout="BNSD",
                             num_heads=N)
    assert q.reshape(-1).tolist() == FLAT.tolist()  # 2c - c
    ideal = post_quantize_output(out, FLAT.reshape(N, D), off.reshape(N, D),
                                 out_layout="BNSD", num_heads=N, precision="fp64")
    assert ideal.dtype == np.float64 and ideal.reshape(-1).tolist() == FLAT.tolist()


def test_channel_view_rejects_bad_param() -> None:
    with pytest.raises(ValueError, match=r"N\*D"):
        channel_view(np.ones(5), "BNSD", 2)


@pytest.mark.parametrize(("layout", "scale"), [("BNSD", np.float32([3.0])),
                                               ("BSH", np.full((1, 1, 2 * 64), 2.0, np.float32))])
def test_empty_kv_with_post_quant_is_int8_zero_like_the_fp64_ideal(layout, scale) -> None:
    """S2 = 0 with quant_scale2 (no offset; op/forms.py `empty_kv`): every row is the zero
    row, quantised to int8 0; the fp64 path gives the unrounded ideal of that same zero."""
    from fia_fuzz.golden import npu_fused_infer_attention_score
    from fia_fuzz.rules.validate import validate

    shapes = {"BNSD": ((2, 2, 1, 64), (2, 2, 0, 64)), "BSH": ((2, 1, 2 * 64), (2, 0, 2 * 64))}
    q_shape, kv_shape = shapes[layout]
    q = np.random.default_rng(3).standard_normal(q_shape).astype(F16)
    kv = np.zeros(kv_shape, F16)
    kw = {"num_heads": 2, "input_layout": layout, "quant_scale2": scale,
          "softmax_lse_flag": True}
    assert validate(query=q, key=kv, value=kv, **kw) == []
    dev, lse = npu_fused_infer_attention_score(q, kv, kv, **kw)
    ideal, lse64 = npu_fused_infer_attention_score(q, kv, kv, precision="fp64", **kw)
    assert dev.dtype == np.int8 and dev.shape == q_shape and not dev.any()
    assert ideal.dtype == np.float64 and np.array_equal(ideal, np.zeros(q_shape))
    assert np.isinf(lse).all() and np.isinf(lse64).all()
