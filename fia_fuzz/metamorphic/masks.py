"""Which (query row, key column) pairs a call masks, as one explicit boolean array.

This is the documented meaning of atten_mask, the pre/next band, sparse
modes 0-4, actual lengths, left padding and the shared prefix
[V4 §Mask, fia-semantics.md §3, §4, §6], written out so that relations can
restate a call with a plain mode-0 mask. Coordinates: a user atten_mask (and
pse_shift) is indexed by absolute position in the padded tensors, prefix
columns first; the band and sparse modes 2/3/4 are relative to each batch's
valid window. Rows and columns outside the valid windows are masked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import band_window, kv_window, query_window, user_mask


@dataclass(frozen=True)
class Windows:
    """Per-batch valid windows in absolute coordinates (key columns count the prefix first)."""

    q_start: list[int]
    act_q: list[int]
    kv_start: list[int]
    act_kv: list[int]
    prefix: int
    s1: int
    s2: int

    @property
    def columns(self) -> int:
        return self.prefix + self.s2


def windows(view: CallView) -> Windows:
    """The valid query rows and key columns of every batch of a dense-layout call."""
    q_len, q_off = query_window(view)
    kv_len, kv_off = kv_window(view)
    prefix = view.prefix_len
    return Windows([int(x) for x in q_off], [int(x) for x in q_len],
                   [prefix + int(x) for x in kv_off], [int(x) for x in kv_len],
                   prefix, view.S1, view.S2)


def batch_mask(mask: np.ndarray, b: int, batch: int, decode: bool) -> np.ndarray:
    """Batch b's 2-D (rows, cols) slice of any documented atten_mask shape [SEM §4]."""
    m = user_mask(mask, batch, decode)
    return m[b if m.shape[0] > 1 else 0]


def band(i: np.ndarray, j: np.ndarray, pre: int, nxt: int) -> np.ndarray:
    """Masked outside the band: j > i + next or j < i - pre [SEM §4]."""
    i = i.astype(np.int64)[:, None]
    j = j.astype(np.int64)[None, :]
    return (j > i + nxt) | (j < i - pre)


def effective_mask(call: dict, view: CallView) -> np.ndarray:
    """(B, S1, prefix + S2) bool, True where the score is excluded from the softmax.

    The band per batch is op/geometry.py `band_window`; modes 2/3/4 take the
    fixed 2048 mask, whose contents do not enter the math [SEM §4].
    """
    w = windows(view)
    mode = int(view.attrs["sparse_mode"])
    mask = call.get("atten_mask")
    uses_user = mask is not None and (
        mode in (0, 1) or (view.decode and call.get("query_rope") is None))
    bands = band_window(view, call, np.asarray(w.act_q, np.int64),
                        np.asarray(w.act_kv, np.int64) + w.prefix)
    out = np.ones((view.B, w.s1, w.columns), dtype=bool)
    for b in range(view.B):
        aq, ak = w.act_q[b], w.prefix + w.act_kv[b]
        i, j = np.arange(aq), np.arange(ak)
        rows = w.q_start[b] + i
        cols = np.where(j < w.prefix, j, w.kv_start[b] + (j - w.prefix))
        rel = (batch_mask(mask, b, view.B, view.decode)[np.ix_(rows, cols)] if uses_user
               else np.zeros((aq, ak), bool))
        if bands is not None:
            rel = rel | band(i, j, int(bands[0][b]), int(bands[1][b]))
        out[b][np.ix_(rows, cols)] = rel
    return out
