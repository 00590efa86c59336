"""Layout conversion to and from the BNSD working layout [V4 inputLayout, SEM §2].

Every tensor the golden computes on is BNSD (B, N, S, D). Packed layouts
(TND, NTD) hold variable-length batches back to back; they are unpacked to a
right-padded BNSD tensor with the longest batch as S, and packed back after.
"""

from __future__ import annotations

import numpy as np


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """A BSH/BSND/BNSD tensor as (B, N, S, D) (a view, no copy)."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    raise ValueError(f"to_bnsd: {layout} is not a batched layout")


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """A (B, N, S, D) result in the output layout (BSH, BSND, BNSD or NBSD)."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, n, s, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    if layout == "NBSD":
        return x.transpose(1, 0, 2, 3)
    raise ValueError(f"from_bnsd: {layout} is not a batched layout")


def packed_rows(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(token index (B, S), valid (B, S)) of each batch's rows in a packed tensor.

    Batch b occupies tokens [start_b, start_b + len_b) with start the running
    sum of the lengths (the cumulative offsets of [V4 §TND] without their end).
    Invalid slots point at token 0 and must be masked by `valid`.
    """
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    s = int(lengths.max()) if lengths.size else 0
    pos = np.arange(s, dtype=np.int64)
    valid = pos[None, :] < lengths[:, None]
    return np.where(valid, starts[:, None] + pos[None, :], 0), valid


def unpack(x: np.ndarray, layout: str, lengths: np.ndarray) -> np.ndarray:
    """A TND/NTD tensor as right-padded (B, N, max(lengths), D); padding rows are 0."""
    tnd = x if layout == "TND" else x.transpose(1, 0, 2)
    idx, valid = packed_rows(lengths)
    if tnd.shape[0] == 0:
        out = np.zeros(idx.shape + tnd.shape[1:], tnd.dtype)
    else:
        out = tnd[idx]
        out[~valid] = 0
    return out.transpose(0, 2, 1, 3)


def pack(x: np.ndarray, layout: str, lengths: np.ndarray, total: int,
         fill: float = 0.0) -> np.ndarray:
    """A right-padded (B, N, S, D) result packed as TND (or NTD) with `total` tokens.

    Tokens past the last batch (T larger than the sum of lengths) get `fill`.
    """
    idx, valid = packed_rows(lengths)
    out = np.full((total, x.shape[1], x.shape[3]), fill, x.dtype)
    out[idx[valid]] = x.transpose(0, 2, 1, 3)[valid]
    return out if layout == "TND" else out.transpose(1, 0, 2)
