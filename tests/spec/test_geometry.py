"""spec/geometry.py: layout moves, packing, paged caches and windows keep every bit."""

from __future__ import annotations

import numpy as np
import pytest

from fia_fuzz.spec.geometry import cumulative, pack, relayout, unpack


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
