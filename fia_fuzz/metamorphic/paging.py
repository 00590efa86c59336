"""KV caches in pages and back [V4 blockTable, fia-semantics.md §2 "Paged KV caches"].

Token s of batch b lives in physical block `block_table[b][s // block_size]`
at offset `s % block_size`. Unused table entries are -1 and must never be
read; slots past a batch's length and spare blocks hold garbage so that a
kernel reading them is visible.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.spec.tensors import TensorSpec
from fia_fuzz.spec.values import materialise

CACHE_FORMS = ("BnBsH", "BnNBsD", "NZ")


def block_table(lengths: list[int], block_size: int, order: np.ndarray | None,
                spare: int = 2) -> tuple[np.ndarray, int]:
    """(int32 table (B, max blocks + 1) with -1 for unused entries, physical block count).

    `order` permutes the physical block ids (None keeps them in logical order);
    `spare` extra blocks are allocated and never referenced.
    """
    need = [-(-n // block_size) for n in lengths]
    width = max(need + [1]) + 1
    total = sum(need) + spare
    ids = np.arange(total) if order is None else np.asarray(order)
    table = np.full((len(lengths), width), -1, dtype=np.int32)
    k = 0
    for b, n in enumerate(need):
        table[b, :n] = ids[k:k + n]
        k += n
    return table, total


def garbage(shape: tuple[int, ...], dtype: str, seed: int, label: str) -> np.ndarray:
    """Deterministic filler, four times the data's spread, for slots never to be read."""
    spec = TensorSpec(shape, dtype)
    fill = ({"dist": "normal", "scale": 4.0} if dtype in ("float16", "bfloat16", "float32")
            else None)
    return materialise(spec, fill, seed, f"metamorphic.garbage.{label}")


def page(x: np.ndarray, lengths: list[int], table: np.ndarray, blocks: int, block_size: int,
         form: str, filler: np.ndarray) -> np.ndarray:
    """BNSD KV (B, KV_N, S, D) -> a paged cache in `form`, unused slots from `filler`.

    `filler` has the cache's shape; it is copied, then every valid token written.
    """
    _, kv_n, _, d = x.shape
    cache = filler.copy()
    for b, n in enumerate(lengths):
        for j in range(-(-n // block_size)):
            lo, hi = j * block_size, min((j + 1) * block_size, n)
            blk = int(table[b, j])
            rows = x[b, :, lo:hi, :]  # (KV_N, rows, D)
            if form == "BnBsH":
                cache[blk, :hi - lo, :] = rows.transpose(1, 0, 2).reshape(hi - lo, kv_n * d)
            elif form == "BnNBsD":
                cache[blk, :, :hi - lo, :] = rows
            else:
                c0 = cache.shape[-1]
                cache[blk, :, :, :hi - lo, :] = rows.reshape(kv_n, hi - lo, d // c0, c0
                                                             ).transpose(0, 2, 1, 3)
    return cache


def cache_shape(form: str, blocks: int, block_size: int, kv_n: int, d: int, dtype: str
                ) -> tuple[int, ...]:
    if form == "BnBsH":
        return (blocks, block_size, kv_n * d)
    if form == "BnNBsD":
        return (blocks, kv_n, block_size, d)
    c0 = 32 if dtype == "int8" else 16
    return (blocks, kv_n, d // c0, block_size, c0)


def unpage(cache: np.ndarray, lengths: list[int], table: np.ndarray, block_size: int,
           kv_n: int, seq: int) -> np.ndarray:
    """A paged cache -> BNSD (B, KV_N, seq, D) holding each batch's first lengths[b] tokens."""
    if cache.ndim == 3:
        blocks = cache.reshape(cache.shape[0], block_size, kv_n, -1).transpose(0, 2, 1, 3)
    elif cache.ndim == 4:
        blocks = cache
    else:
        nb, n, d1, bs, c0 = cache.shape
        blocks = cache.transpose(0, 1, 3, 2, 4).reshape(nb, n, bs, d1 * c0)
    d = blocks.shape[-1]
    out = np.zeros((len(lengths), kv_n, seq, d), dtype=cache.dtype)
    for b, n in enumerate(lengths):
        for s0 in range(0, n, block_size):
            hi = min(s0 + block_size, n)
            out[b, :, s0:hi, :] = blocks[int(table[b, s0 // block_size]), :, :hi - s0, :]
    return out
