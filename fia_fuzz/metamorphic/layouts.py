"""Exact array moves between the op's layouts [V4 inputLayout, fia-semantics.md §2].

Every function only permutes, reshapes, slices or zero-fills, so a partner
built with them carries bit-for-bit the source's data. Dense tensors go
through BNSD (B, N, S, D); packed TND/NTD tensors are concatenations of each
batch's valid rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DENSE = ("BSH", "BSND", "BNSD")


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """A BSH/BSND/BNSD input or NBSD output as (B, N, S, D)."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "NBSD":
        return x.transpose(1, 0, 2, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    raise ValueError(f"to_bnsd: {layout} is not a dense layout")


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """A (B, N, S, D) array in a BSH/BSND/BNSD/NBSD layout, contiguous."""
    if layout == "BNSD":
        y = x
    elif layout == "BSND":
        y = x.transpose(0, 2, 1, 3)
    elif layout == "NBSD":
        y = x.transpose(1, 0, 2, 3)
    elif layout == "BSH":
        b, n, s, d = x.shape
        y = x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    else:
        raise ValueError(f"from_bnsd: {layout} is not a dense layout")
    return np.ascontiguousarray(y)


def relayout(x: np.ndarray, src: str, dst: str, heads: int) -> np.ndarray:
    return from_bnsd(to_bnsd(x, src, heads), dst)


def pack(x: np.ndarray, lengths: Sequence[int], layout: str = "TND") -> np.ndarray:
    """BNSD (B, N, S, D) -> packed TND (T, N, D) or NTD of each batch's first lengths[b] rows."""
    parts = [x[b, :, :n, :].transpose(1, 0, 2) for b, n in enumerate(lengths)]
    t = np.concatenate(parts, axis=0) if parts else x[:0, :, :0].transpose(1, 0, 2)
    return np.ascontiguousarray(t if layout == "TND" else t.transpose(1, 0, 2))


def unpack(t: np.ndarray, lengths: Sequence[int], seq: int, layout: str = "TND",
           fill: float = 0.0) -> np.ndarray:
    """Packed TND/NTD -> BNSD (B, N, seq, D) with rows past each batch's length = fill."""
    if layout == "NTD":
        t = t.transpose(1, 0, 2)
    _, n, d = t.shape
    out = np.full((len(lengths), n, seq, d), fill, dtype=t.dtype)
    start = 0
    for b, length in enumerate(lengths):
        out[b, :, :length, :] = t[start:start + length].transpose(1, 0, 2)
        start += length
    return out


def cumulative(lengths: Sequence[int]) -> list[int]:
    """Per-batch lengths -> the cumulative end offsets packed layouts take [SEM §2]."""
    return [int(x) for x in np.cumsum(np.asarray(lengths, dtype=np.int64))]


def segments(ends: Sequence[int]) -> list[tuple[int, int]]:
    """Cumulative end offsets -> (start, stop) row ranges."""
    out, prev = [], 0
    for e in ends:
        out.append((prev, int(e)))
        prev = int(e)
    return out
