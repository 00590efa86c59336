"""Paged KV caches read through block_table [V4 PagedAttention, SEM §2].

Token s of batch b lives in physical block block_table[b][s // block_size]
at offset s % block_size. Only the entries covering the batch's
actual_seq_lengths_kv are read; the rest of the table may hold anything.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.spec.blocks import compact_table


def cache_tokens(cache: np.ndarray, kv_heads: int) -> np.ndarray:
    """A paged cache as (block_num, block_size, KV_N, D), whatever its documented layout.

    3-D is BnBsH (block_num, block_size, KV_N*D), 4-D is BnNBsD
    (block_num, KV_N, block_size, D), 5-D is NZ (block_num, KV_N, D/c, block_size, c).
    """
    if cache.ndim == 3:
        nb, bs, h = cache.shape
        return cache.reshape(nb, bs, kv_heads, h // kv_heads)
    if cache.ndim == 4:
        return cache.transpose(0, 2, 1, 3)
    if cache.ndim == 5:
        nb, n, d1, bs, c = cache.shape
        return cache.transpose(0, 3, 1, 2, 4).reshape(nb, bs, n, d1 * c)
    raise ValueError(f"paged cache of rank {cache.ndim}; expected 3, 4 or 5")


def gather(blocks: np.ndarray, block_table: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per-batch tokens (B, max(lengths), ...) from per-block data (block_num, block_size, ...).

    Works for any per-token data laid out by physical block (the KV itself,
    or per-token quantisation parameters). Positions past a batch's length
    are 0 and never touch the table entries behind them.
    """
    bs = blocks.shape[1]
    b = len(lengths)
    s = int(lengths.max()) if b else 0
    pos = np.arange(s, dtype=np.int64)
    valid = pos[None, :] < lengths[:, None]
    col = np.minimum(pos // bs, max(block_table.shape[1] - 1, 0))
    table = np.asarray(block_table, np.int64)
    phys = np.where(valid, table[:, col] if s else np.zeros((b, 0), np.int64), 0)
    out = blocks[phys, pos[None, :] % bs] if s else np.zeros((b, 0) + blocks.shape[2:],
                                                                blocks.dtype)
    out[~valid] = 0
    return out


def paged_bnsd(cache: np.ndarray, kv_heads: int, block_table: np.ndarray,
               lengths: np.ndarray) -> np.ndarray:
    """The paged cache as right-aligned (B, KV_N, max(lengths), D).

    Only the referenced blocks are copied out of the cache (before any layout
    change), so a huge, mostly untouched cache costs what its used blocks cost.
    """
    block_size = cache_tokens(cache[:0], kv_heads).shape[1]
    used, local = compact_table(block_table, lengths, block_size)
    blocks = cache_tokens(cache[used], kv_heads)
    return gather(blocks, local, lengths).transpose(0, 2, 1, 3)
