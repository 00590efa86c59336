"""int4 KV caches: the two forms the op accepts, reduced to int8 values.

[V2 Q_S=1 INT4] / [V4 INT4]: key/value may be a true int4 tensor or int32
words each packing 8 int4 values ("KV的N、D或者H是实际值的八分之一": the last
dim is D/8 or H/8). fia-semantics.md §7.

Nibble order of a packed word (the order of dynamicQuant, which writes one
int32 per 8 int4, and of an int4 tensor in memory): element j of the 8 lives
in bits [4j, 4j+4) of the little-endian word, i.e. element 0 is the lowest
nibble. Each nibble is two's complement, so 0x8..0xF are -8..-1. This is
also how a packed int4 tensor lies in device memory (element 0 in the low
nibble of byte 0), so its bytes read as little-endian int32 are these words.
`pack_int32_words` / `unpack_int32_words` are inverse bijections between
int32 and 8-tuples in [-8, 7]. (ml_dtypes.int4 arrays on the host hold one
value per byte; they are converted by value, not by bytes.)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

INT4_MIN, INT4_MAX = -8, 7
VALUES_PER_WORD = 8


def unpack_int32_words(words: np.ndarray) -> np.ndarray:
    """int8 values of int32 words packing 8 int4 each; the last dim grows 8-fold."""
    words = np.asarray(words)
    if words.dtype != np.int32:
        raise TypeError(f"packed int4 words must be int32, got {words.dtype}")
    u = words.astype(np.int64) & 0xFFFFFFFF
    shifts = np.arange(VALUES_PER_WORD, dtype=np.int64) * 4
    nibbles = (u[..., None] >> shifts) & 0xF
    values = np.where(nibbles >= 8, nibbles - 16, nibbles).astype(np.int8)
    return values.reshape(*words.shape[:-1], words.shape[-1] * VALUES_PER_WORD)


def pack_int32_words(values: np.ndarray) -> np.ndarray:
    """int32 words packing the last dim (a multiple of 8, values in [-8, 7])."""
    values = np.asarray(values)
    if values.shape[-1] % VALUES_PER_WORD:
        raise ValueError(f"last dim {values.shape[-1]} is not a multiple of {VALUES_PER_WORD}")
    v = values.astype(np.int64)
    if v.size and (v.min() < INT4_MIN or v.max() > INT4_MAX):
        raise ValueError(f"int4 values must lie in [{INT4_MIN}, {INT4_MAX}], "
                         f"got [{v.min()}, {v.max()}]")
    groups = (v & 0xF).reshape(*v.shape[:-1], -1, VALUES_PER_WORD)
    shifts = np.arange(VALUES_PER_WORD, dtype=np.int64) * 4
    u = (groups << shifts).sum(axis=-1)
    return np.where(u >= 2**31, u - 2**32, u).astype(np.int32)


def to_int4(values: np.ndarray) -> np.ndarray:
    """A true ml_dtypes.int4 tensor of integer values in [-8, 7]."""
    v = np.asarray(values)
    if v.size and (v.min() < INT4_MIN or v.max() > INT4_MAX):
        raise ValueError(f"int4 values must lie in [{INT4_MIN}, {INT4_MAX}], "
                         f"got [{v.min()}, {v.max()}]")
    return v.astype(np.int8).astype(ml_dtypes.int4)


def as_int8_values(kv: np.ndarray, *, packed: bool | None = None) -> np.ndarray:
    """The integer KV values as int8, whatever form (int8, int4, int32 words) they come in.

    `packed` defaults to "int32 means packed int4", the only int32 KV the op knows.
    """
    kv = np.asarray(kv)
    if kv.dtype == np.dtype(ml_dtypes.int4):
        return kv.astype(np.int8)
    if kv.dtype == np.int32 and packed is not False:
        return unpack_int32_words(kv)
    if kv.dtype == np.int8:
        return kv
    raise TypeError(f"quantised KV must be int8, int4 or int32-packed int4, got {kv.dtype}")
