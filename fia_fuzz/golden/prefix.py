"""Shared prefix KV prepended to every batch [V2 prefix, SEM §6].

key_shared_prefix/value_shared_prefix have batch 1 and the layout of key and
value; their first actual_shared_prefix_len tokens (all, when absent) come
before each batch's own KV, so masks and mode 3/4 anchoring count them in S2.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import to_bnsd


def prefix_bnsd(view: CallView, tensor: np.ndarray) -> np.ndarray:
    """The used part of a shared-prefix tensor as (1, KV_N, P, D)."""
    x = np.asarray(tensor)
    if view.packed:
        x = x.transpose(1, 0, 2)[None] if view.in_layout == "TND" else x[None]
    else:
        x = to_bnsd(x, view.in_layout, view.KV_N)
    return x[:, :, :prefix_len(view, x.shape[2])]


def prefix_len(view: CallView, available: int) -> int:
    """actual_shared_prefix_len, or the whole prefix tensor when it is absent."""
    given = view.values.get("actual_shared_prefix_len")
    return min(int(given[0]), available) if given else available


def prepend(prefix: np.ndarray, kv: np.ndarray) -> np.ndarray:
    """(B, KV_N, P + L, D): the prefix in front of every batch's right-aligned KV."""
    b, n, _, d = kv.shape
    head = np.broadcast_to(prefix.astype(kv.dtype), (b, n, prefix.shape[2], d))
    return np.concatenate([head, kv], axis=2)
