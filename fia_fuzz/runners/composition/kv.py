"""Key/value tokens of one batch, from every KV source the op accepts [SEM §2, §6].

Sources: contiguous BSH/BSND/BNSD, packed TND/NTD, a tensor list (one tensor
per batch), paged caches gathered through block_table in the three cache
layouts (BnBsH, BnNBsD, 5-D NZ), and the shared prefix. Every source is
turned into "(KV_N, L, d) for batch b, tokens [lo, hi)".
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from fia_fuzz.runners.torch_convert import to_torch

INT4_PER_WORD = 8


def unpack_int4_words(words: torch.Tensor) -> torch.Tensor:
    """int32 words packing 8 int4 each (element 0 in the lowest nibble) as int8 values."""
    shifts = torch.arange(INT4_PER_WORD, device=words.device, dtype=torch.int64) * 4
    nibbles = (words.to(torch.int64).unsqueeze(-1) >> shifts) & 0xF
    values = torch.where(nibbles >= 8, nibbles - 16, nibbles).to(torch.int8)
    return values.reshape(*words.shape[:-1], words.shape[-1] * INT4_PER_WORD)


def tensor(a: np.ndarray, device: str) -> torch.Tensor:
    """A NumPy input on `device`; int4 (true or int32-packed) becomes int8 values [SEM §7]."""
    if a.dtype == np.dtype(ml_dtypes.int4):
        return to_torch(a, device, cast=np.int8)
    t = to_torch(a, device)
    if t.dtype == torch.int32:
        return unpack_int4_words(t)
    return t


def to_bnsd(t: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    """A BSH/BSND/BNSD tensor as (B, N, S, d)."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    b, s, h = t.shape
    return t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)


def from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A (B, N, S, d) output in the BNSD, BSND, NBSD or BSH layout."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    if layout == "NBSD":
        return t.permute(1, 0, 2, 3)
    b, n, s, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, s, n * d)


def to_nt(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A packed TND/NTD tensor as (N, T, d)."""
    return t.permute(1, 0, 2) if layout == "TND" else t


class KvSource:
    """One KV-shaped input (key, value or key_rope) of the call, read per batch."""

    def __init__(self, raw: Any, layout: str, kv_heads: int, device: str,
                 block_table: np.ndarray | None = None, block_size: int = 0):
        self.block_table = None if block_table is None else np.asarray(block_table)
        self.block_size = block_size
        if self.block_table is not None:
            self.kind = "paged"
            self.data = _paged_canonical(tensor(raw, device), kv_heads)
        elif isinstance(raw, (list, tuple)):
            self.kind = "list"
            self.data = [to_bnsd(tensor(x, device), layout, kv_heads) for x in raw]
        elif layout in ("TND", "NTD"):
            self.kind = "packed"
            self.data = to_nt(tensor(raw, device), layout)
        else:
            self.kind = "contiguous"
            self.data = to_bnsd(tensor(raw, device), layout, kv_heads)

    def tokens(self, b: int, lo: int, hi: int) -> torch.Tensor:
        """(KV_N, hi - lo, d) tokens [lo, hi) of batch b (logical positions when paged)."""
        if self.kind == "contiguous":
            return self.data[b, :, lo:hi]
        if self.kind == "list":
            return self.data[b][0, :, lo:hi]
        if self.kind == "packed":
            return self.data[:, lo:hi]
        blocks, offsets = paged_coordinates(self.block_table, self.block_size, b, lo, hi)
        return self.data[blocks, :, offsets].permute(1, 0, 2)


def paged_coordinates(block_table: np.ndarray, block_size: int, b: int, lo: int, hi: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """(physical block, offset) of logical tokens [lo, hi) of batch b [SEM §2].

    Only the table entries those tokens need are read; the rest may hold
    anything (the vendor fills -1).
    """
    pos = np.arange(lo, hi, dtype=np.int64)
    blocks = block_table[b][pos // block_size].astype(np.int64)
    return torch.from_numpy(blocks), torch.from_numpy(pos % block_size)


def _paged_canonical(cache: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """A paged cache as (block_num, KV_N, block_size, d), from any of the three layouts.

    BnBsH (block_num, block_size, KV_N*d); BnNBsD (block_num, KV_N, block_size, d);
    NZ (block_num, KV_N, d/c, block_size, c) with c = 16 (32 for int8) [SEM §2].
    """
    if cache.dim() == 3:
        bn, bs, h = cache.shape
        return cache.reshape(bn, bs, kv_heads, h // kv_heads).permute(0, 2, 1, 3)
    if cache.dim() == 4:
        return cache
    bn, n, d_outer, bs, c = cache.shape
    return cache.permute(0, 1, 3, 2, 4).reshape(bn, n, bs, d_outer * c)


def prefix_tokens(raw: Any, layout: str, kv_heads: int, length: int, device: str
                  ) -> torch.Tensor:
    """(KV_N, length, d): the first `length` tokens of a batch-1 shared prefix [SEM §6]."""
    return to_bnsd(tensor(raw, device), layout, kv_heads)[0, :, :length]
