"""Layout conversion to and from the BNSD working layout [V4 inputLayout, SEM §2]."""

from __future__ import annotations

import numpy as np


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """A BSH/BSND/BNSD tensor as (B, N, S, D)."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    raise NotImplementedError(f"golden: layout {layout} not implemented yet")


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """A (B, N, S, D) result in the output layout."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, n, s, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    if layout == "NBSD":
        return x.transpose(1, 0, 2, 3)
    raise NotImplementedError(f"golden: output layout {layout} not implemented yet")
