"""op/geometry.py: layout moves, packing, paged caches and windows keep every bit."""

from __future__ import annotations

import numpy as np
import pytest

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import (
    BLOCK_AXIS,
    CACHE_FORM_OF_RANK,
    NO_BAND,
    SEQ_AXIS,
    band_window,
    cache_dims,
    cache_shape,
    cache_tokens,
    cumulative,
    dense_shape,
    dims,
    gather,
    kv_window,
    nz_c0,
    pack,
    packed_shape,
    query_window,
    relayout,
    to_bnsd,
    unpack,
)
from fia_fuzz.op.tensors import TensorSpec


def _ramp(*shape: int) -> np.ndarray:
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("src", ["BSH", "BSND", "BNSD"])
@pytest.mark.parametrize("dst", ["BSH", "BSND", "BNSD", "NBSD"])
def test_relayout_round_trips(src: str, dst: str) -> None:
    x = relayout(_ramp(2, 3, 5, 4), "BNSD", src, 3)
    assert np.array_equal(relayout(relayout(x, src, dst, 3), dst, src, 3), x)


def test_pack_unpack_keeps_valid_rows_and_zero_fills() -> None:
    x = _ramp(3, 2, 5, 4)
    lens = [5, 0, 2]
    t = pack(x, "TND", lens)
    assert t.shape == (7, 2, 4) and cumulative(lens) == [5, 5, 7]
    back = unpack(t, "TND", lens, 5)
    assert np.array_equal(back[0], x[0]) and not back[1].any()
    assert np.array_equal(back[2, :, :2], x[2, :, :2]) and not back[2, :, 2:].any()
    assert np.array_equal(unpack(pack(x, "NTD", lens), "NTD", lens, 5), back)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD", "NBSD"])
def test_dense_shape_and_dims_agree(layout: str) -> None:
    shape = dense_shape(layout, 2, 4, 7, 16)
    assert to_bnsd(np.zeros(shape), layout, 4).shape == (2, 4, 7, 16)
    if layout != "NBSD":  # an output-only layout: no input dims to read
        d = dims(shape, layout, 4)
        assert (d["B"], d["N"], d["S"], d["D"]) == (2, 4, 7, 16)
        assert shape[SEQ_AXIS[layout]] == 7


def test_dims_refuse_what_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        dims((2, 3), "BSND", 4)
    with pytest.raises(ValueError, match="multiple of 4 heads"):
        dims((2, 3, 10), "BSH", 4)
    assert dims(packed_shape("NTD", 9, 2, 8), "NTD", 2, pack=8) == {"T": 9, "S": 9, "N": 2,
                                                                      "D": 64}


@pytest.mark.parametrize("form,dtype", [("BnBsH", "float16"), ("BnNBsD", "bfloat16"),
                                        ("NZ", "float16"), ("NZ", "int8")])
def test_cache_shape_round_trips_through_dims(form: str, dtype: str) -> None:
    shape = cache_shape(form, 5, 128, 2, 64, dtype)
    assert CACHE_FORM_OF_RANK[len(shape)] == form and shape[BLOCK_AXIS[len(shape)]] == 128
    d = cache_dims(shape, 2)
    assert (d["blocks"], d["bs"], d["N"], d["D"]) == (5, 128, 2, 64)
    assert d.get("d0", nz_c0(dtype)) == nz_c0(dtype)
    cache = np.arange(np.prod(shape)).reshape(shape)
    assert cache_tokens(cache, 2).shape == (5, 128, 2, 64)


def test_gather_reads_only_the_blocks_a_batch_needs() -> None:
    blocks = np.arange(4 * 2).reshape(4, 2) + 1  # (blocks, block_size) token ids 1..8
    table = np.array([[2, 0, -1], [3, -1, -1]])
    out = gather(blocks, table, np.array([3, 1]))
    assert out.tolist() == [[5, 6, 1], [7, 0, 0]]


def _view(**kw: object) -> CallView:
    q = TensorSpec((3, 2, 8, 16), "float16")
    kv = TensorSpec((3, 2, 10, 16), "float16")
    return CallView({"query": q, "key": kv, "value": kv, "input_layout": "BNSD",
                     "num_heads": 2, **kw})


def test_windows_right_left_and_before_zero() -> None:
    v = _view(actual_seq_lengths=[8, 3, 5], actual_seq_lengths_kv=[10, 4, 9],
              kv_padding_size=[0, 2, 4])
    q_len, q_off = query_window(v)
    assert q_len.tolist() == [8, 3, 5] and q_off.tolist() == [0, 0, 0]
    kv_len, kv_off = kv_window(v)
    # batch 2: 10 - 4 - 9 < 0, a window before 0 gives nothing [IFA kv左padding]
    assert kv_len.tolist() == [10, 4, 0] and kv_off.tolist() == [0, 4, 0]
    no_lengths = _view(kv_padding_size=[3])  # padding without lengths is ignored
    assert kv_window(no_lengths)[1].tolist() == [0, 0, 0]


@pytest.mark.parametrize("mode,want", [(0, None), (1, None), (2, ([NO_BAND] * 3, [0] * 3)),
                                       (3, ([NO_BAND] * 3, [2, 0, -1])),
                                       (4, ([-2 + 5, 0 + 5, 1 + 5], [2 + 7, 0 + 7, -1 + 7]))])
def test_band_window_per_mode(mode: int, want: tuple[list[int], list[int]] | None) -> None:
    call = {"sparse_mode": mode, "pre_tokens": 5, "next_tokens": 7}
    v = _view(**call)
    got = band_window(v, call, np.array([4, 4, 4]), np.array([6, 4, 3]))
    assert (got is None) if want is None else [g.tolist() for g in got] == list(want)
