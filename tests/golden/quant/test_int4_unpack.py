"""int4 KV forms: hand-written int32 words unpack to the documented nibble order."""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden.int4 import as_int8_values, pack_int32_words, to_int4, unpack_int32_words

# (word as written in hex, its 8 values, element 0 = lowest nibble)
HAND_WORDS = [
    (0x76543210, [0, 1, 2, 3, 4, 5, 6, 7]),
    (0x89ABCDEF, [-1, -2, -3, -4, -5, -6, -7, -8]),
    (0xFFFFFFFF, [-1] * 8),
    (0x00000000, [0] * 8),
    (0x80000000, [0, 0, 0, 0, 0, 0, 0, -8]),
    (0x00000008, [-8, 0, 0, 0, 0, 0, 0, 0]),
    (0x7000000F, [-1, 0, 0, 0, 0, 0, 0, 7]),
]


def _int32(word: int) -> int:
    return word - 2**32 if word >= 2**31 else word


@pytest.mark.parametrize(("word", "values"), HAND_WORDS)
def test_unpack_hand_written_word(word: int, values: list[int]) -> None:
    got = unpack_int32_words(np.array([_int32(word)], np.int32))
    assert got.dtype == np.int8
    assert got.tolist() == values


@pytest.mark.parametrize(("word", "values"), HAND_WORDS)
def test_pack_hand_written_word(word: int, values: list[int]) -> None:
    assert pack_int32_words(np.array(values)).tolist() == [_int32(word)]


def test_unpack_grows_last_dim_and_keeps_leading_dims() -> None:
    words = np.array([[[_int32(0x76543210), _int32(0x89ABCDEF)]]], np.int32)  # (1,1,2)
    got = unpack_int32_words(words)
    assert got.shape == (1, 1, 16)
    assert got[0, 0].tolist() == list(range(8)) + list(range(-1, -9, -1))


def test_pack_unpack_roundtrip_all_nibbles() -> None:
    values = np.arange(-8, 8).reshape(2, 8)[:, ::-1].copy()
    assert np.array_equal(unpack_int32_words(pack_int32_words(values)), values)


def test_pack_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        pack_int32_words(np.array([8, 0, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="multiple of 8"):
        pack_int32_words(np.zeros(4, np.int8))


def test_true_int4_and_packed_words_give_same_values() -> None:
    values = np.array([[3, -8, 7, 0, -1, 2, -5, 6]], np.int8)
    as_int4 = to_int4(values)
    assert as_int4.dtype == np.dtype(ml_dtypes.int4)
    assert np.array_equal(as_int8_values(as_int4), values)
    assert np.array_equal(as_int8_values(pack_int32_words(values)), values)
    assert as_int8_values(values) is values
    with pytest.raises(TypeError):
        as_int8_values(values.astype(np.float16))
