"""KV antiquant: every parameter mode resolved and applied, hand-computed."""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden.antiquant import (
    dequantise_call,
    dequantize,
    dequantize_kv,
    gather_paged,
    is_high_precision,
    param_bnsd,
    select_params,
)
from fia_fuzz.golden.int4 import pack_int32_words, to_int4

F16, BF16, F32 = np.float16, ml_dtypes.bfloat16, np.float32
# BNSD int8 KV: B=2, KV_N=2, S=3, D=2; value = 10*n + s (+ d for the second channel)
B, KVN, S, D = 2, 2, 3, 2
KV = (10 * np.arange(KVN)[None, :, None, None] + np.arange(S)[None, None, :, None]
      + np.arange(D)[None, None, None, :] * 0 + np.zeros((B, 1, 1, 1))).astype(np.int8)
KV[1] *= -1


def deq(param, mode, offset=None, **where):
    where = {"kv_heads": KVN, "seq": S, **where}
    s = param_bnsd(np.asarray(param), mode, **where)
    o = None if offset is None else param_bnsd(np.asarray(offset), mode, **where)
    return dequantize(KV, s, o, query_dtype=F16, high_precision=True, precision="fp64")


def test_mode0_per_tensor() -> None:
    assert np.array_equal(deq(np.float16([0.5]), 0), KV * 0.5)
    assert np.array_equal(deq(np.float16([0.5]), 0, np.float16([2])), (KV + 2) * 0.5)


@pytest.mark.parametrize("shape", [(1, KVN, 1, D), (1, KVN, D), (1, KVN * D), (KVN, D),
                                   (KVN, 1, D), (KVN * D,)])
def test_mode0_per_channel_every_shape(shape) -> None:
    scale = np.array([1, 2, 3, 4], np.float16).reshape(shape)   # (n, d) -> 1 + 2n + d
    got = deq(scale, 0)
    want = KV * np.array([[1, 2], [3, 4]])[None, :, None, :]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, B, S), (B, S)])
def test_mode1_per_token(shape) -> None:
    scale = np.array([[1, 2, 4], [8, 16, 32]], np.float32).reshape(shape)
    offset = -scale
    got = deq(scale, 1, offset)
    want = (KV - np.array([[1, 2, 4], [8, 16, 32]])[:, None, :, None]) * \
        np.array([[1, 2, 4], [8, 16, 32]])[:, None, :, None]
    assert np.array_equal(got, want)


def test_mode1_longer_param_uses_first_positions_and_short_one_is_rejected() -> None:
    scale = np.arange(1, 1 + B * 5, dtype=np.float32).reshape(1, B, 5)
    assert np.array_equal(deq(scale, 1), KV * scale[0, :, None, :3, None])
    with pytest.raises(ValueError, match="covers 2 positions"):
        deq(np.ones((1, B, 2), np.float32), 1)


def test_mode2_per_tensor_per_head() -> None:
    assert np.array_equal(deq(np.float16([2, -1]), 2),
                          KV * np.array([2, -1])[None, :, None, None])


def test_mode3_per_token_per_head() -> None:
    scale = np.arange(1, 1 + B * KVN * S, dtype=np.float32).reshape(B, KVN, S)
    assert np.array_equal(deq(scale, 3, scale), (KV + scale[..., None]) * scale[..., None])


# paged: block_size 2, 4 physical blocks; batch 0 uses blocks 3, 1; batch 1 uses block 0 and
# has kv length 2, so its second table entry is junk that must never be read.
TABLE = np.array([[3, 1], [0, 10**6]], np.int32)
LENGTHS = [3, 2]


def test_gather_paged_mode4_reads_only_valid_entries() -> None:
    param = np.arange(8, dtype=np.float32).reshape(4, 2)   # block j holds 2j, 2j+1
    got = gather_paged(param, TABLE, S, LENGTHS)
    assert got.tolist() == [[6, 7, 2], [0, 1, 0]]


def test_gather_paged_mode5_per_head() -> None:
    param = np.arange(16, dtype=np.float32).reshape(4, KVN, 2)  # [blk, n, off] = 4blk+2n+off
    got = gather_paged(param, TABLE, S, LENGTHS)
    assert got.tolist() == [[[12, 13, 4], [14, 15, 6]], [[0, 1, 0], [2, 3, 0]]]


def test_mode4_and_mode5_dequantise_at_logical_positions() -> None:
    where = {"block_table": TABLE, "kv_lengths": LENGTHS}
    p4 = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    got = deq(p4, 4, **where)
    want = KV * np.array([[7, 8, 3], [1, 2, 0]])[:, None, :, None]
    assert np.array_equal(got, want)
    p5 = np.arange(16, dtype=np.float32).reshape(4, KVN, 2) + 1
    got = deq(p5, 5, p5, **where)
    g = np.array([[[13, 14, 5], [15, 16, 7]], [[1, 2, 0], [3, 4, 0]]])[..., None]
    assert np.array_equal(got, (KV + g) * g)
    with pytest.raises(ValueError, match="block_table"):
        deq(p4, 4)


def test_unknown_mode_rejected() -> None:
    with pytest.raises(ValueError, match="mode 6"):
        deq(np.float16([1]), 6)


def test_high_performance_rounds_each_step_in_fp16() -> None:
    # x = -128, offset fp16(0.3) = 0.300048828125, scale fp16(0.7) = 0.7001953125
    x, off, scale = np.array([-128], np.int8), F16(0.300048828125), F16(0.7001953125)
    # fp32: -127.699951171875 * 0.7001953125 = -89.4149..., nearest fp16 (step 1/16) -89.4375
    hp = dequantize(x, scale, off, query_dtype=F16, high_precision=True)
    # fp16: -127.69995 -> -127.6875 (step 1/16); * 0.70019... = -89.4057 -> -89.375
    perf = dequantize(x, scale, off, query_dtype=F16, high_precision=False)
    assert hp.dtype == F16 and hp.tolist() == [-89.4375]
    assert perf.dtype == F16 and perf.tolist() == [-89.375]
    exact = dequantize(x, scale, off, query_dtype=F16, high_precision=False, precision="fp64")
    assert exact.dtype == np.float64
    assert exact.tolist() == [(-128 + 0.300048828125) * 0.7001953125]


def test_bf16_query_result_dtype() -> None:
    got = dequantize(np.array([3, -7], np.int8), BF16(0.5), None, query_dtype=BF16,
                     high_precision=True)
    assert got.dtype == BF16 and got.tolist() == [1.5, -3.5]


def test_precision_mode_choice() -> None:
    assert is_high_precision(F16, 0)
    assert not is_high_precision(F16, 1)
    assert is_high_precision(F16, 1, pse=True)
    assert is_high_precision(BF16, 1)
    assert not is_high_precision(F16, 3)   # bit0 decides; bit1 is row-invalid correction
    assert is_high_precision(F16, 2)


def test_select_params_separate_win_and_combined_split() -> None:
    comb = np.array([[1.0, 2.0], [3.0, 4.0]], F16)          # (2, H)
    sep_k, sep_v = np.float16([5]), np.float16([6])
    kwargs = {"antiquant_scale": comb, "antiquant_mode": 0}
    k, v = select_params(kwargs, prefill=False)
    assert k.scale.tolist() == [1, 2] and v.scale.tolist() == [3, 4] and k.offset is None
    kwargs |= {"key_antiquant_scale": sep_k, "value_antiquant_scale": sep_v,
               "key_antiquant_mode": 0, "value_antiquant_mode": 1}
    k, v = select_params(kwargs, prefill=False)
    assert (k.scale.tolist(), k.mode, v.scale.tolist(), v.mode) == ([5], 0, [6], 1)
    assert select_params({}, prefill=False) is None
    k, _ = select_params({"antiquant_scale": comb, "antiquant_mode": 1}, prefill=True)
    assert k.mode == 0   # the combined mode is ignored in the prefill branch


def test_key0_value1_pair_end_to_end() -> None:
    params = select_params({
        "key_antiquant_scale": np.array([1, 2, 3, 4], F16).reshape(1, KVN, 1, D),
        "value_antiquant_scale": np.array([[1, 2, 4], [8, 16, 32]], F32).reshape(1, B, S),
        "value_antiquant_offset": np.full((1, B, S), -1, F32),
        "key_antiquant_mode": 0, "value_antiquant_mode": 1}, prefill=False)
    k, v = dequantize_kv(KV, KV, params, query_dtype=F16, high_precision=True)
    assert k.dtype == v.dtype == F16
    assert np.array_equal(k, KV * np.array([[1, 2], [3, 4]])[None, :, None, :])
    assert np.array_equal(v, (KV - 1) * np.array([[1, 2, 4], [8, 16, 32]])[:, None, :, None])


def test_dequantise_call_int4_forms_agree_with_int8() -> None:
    vals = (np.arange(B * KVN * S * 8) % 16 - 8).astype(np.int8).reshape(B, KVN, S, 8)
    call = {"key_antiquant_scale": np.array([1, 2], F16).reshape(1, KVN, 1, 1).repeat(8, -1),
            "value_antiquant_scale": np.array([0.5], F16),
            "key_antiquant_offset": np.full((1, KVN, 1, 8), 1, F16),
            "value_antiquant_offset": np.array([-2], F16)}
    common = dict(query_dtype=F16, prefill=False, high_precision=True, precision="fp64",
                  kv_lengths=[S] * B)
    want_k = (vals + 1) * np.array([1, 2])[None, :, None, None]
    want_v = (vals - 2) * 0.5
    for form in (vals, to_int4(vals), pack_int32_words(vals)):
        k, v = dequantise_call(form, form, call, **common)
        assert np.array_equal(k, want_k) and np.array_equal(v, want_v)
    with pytest.raises(ValueError, match="without antiquant scales"):
        dequantise_call(vals, vals, {}, **common)
