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

from fia_fuzz.spec.call import CallView

#: The "no band" default of pre_tokens/next_tokens [V2 算子原型].
NO_BAND = 2147483647


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


def _pads(view: CallView, name: str) -> list[int] | None:
    vals = view.values.get(name)
    if vals is None:
        return None
    vals = [max(int(x), 0) for x in vals]  # a negative pad counts as 0 [SEM §3]
    return vals * view.B if len(vals) == 1 else vals[: view.B]


def windows(call: dict, view: CallView) -> Windows:
    """The valid query rows and key columns of every batch of a dense-layout call."""
    s1, s2 = view.S1, view.S2
    act_q, act_kv, prefix = list(view.act_q), list(view.act_kv), view.prefix_len
    qpad, kvpad = _pads(view, "query_padding_size"), _pads(view, "kv_padding_size")
    q_start = [s1 - p - a for p, a in zip(qpad, act_q, strict=True)] if qpad and not \
        view.decode else [0] * view.B
    kv_start = [prefix + s2 - p - a for p, a in zip(kvpad, act_kv, strict=True)] if kvpad \
        else [prefix] * view.B
    return Windows(q_start, act_q, kv_start, act_kv, prefix, s1, s2)


def user_mask(mask: np.ndarray, b: int, decode: bool) -> np.ndarray:
    """Batch b's 2-D (rows, cols) slice of any documented atten_mask shape [SEM §4]."""
    m = np.asarray(mask) != 0
    if m.ndim == 2:
        return m[b:b + 1] if decode else m
    if m.ndim == 3:
        return m[b if m.shape[0] > 1 else 0]
    return m[b if m.shape[0] > 1 else 0, 0]


def band(i: np.ndarray, j: np.ndarray, pre: int, nxt: int) -> np.ndarray:
    """Masked outside the band: j > i + next or j < i - pre [SEM §4]."""
    i = i.astype(np.int64)[:, None]
    j = j.astype(np.int64)[None, :]
    return (j > i + nxt) | (j < i - pre)


def effective_mask(call: dict, view: CallView) -> np.ndarray:
    """(B, S1, prefix + S2) bool, True where the score is excluded from the softmax."""
    w = windows(call, view)
    mode = int(view.attrs["sparse_mode"])
    pre, nxt = int(view.attrs["pre_tokens"]), int(view.attrs["next_tokens"])
    left = call.get("query_padding_size") is not None or call.get("kv_padding_size") is not None
    rope = call.get("query_rope") is not None
    mask = call.get("atten_mask")
    out = np.ones((view.B, w.s1, w.columns), dtype=bool)
    for b in range(view.B):
        aq, ak = w.act_q[b], w.prefix + w.act_kv[b]
        i, j = np.arange(aq), np.arange(ak)
        rows = w.q_start[b] + i
        cols = np.where(j < w.prefix, j, w.kv_start[b] + (j - w.prefix))
        # modes 2/3/4 take the fixed 2048 mask, whose contents do not enter the math [SEM §4]
        uses_user = mask is not None and (mode in (0, 1) or (view.decode and not rope))
        user = user_mask(mask, b, view.decode)[np.ix_(rows, cols)] if uses_user else None
        if view.decode and not rope:  # Q_S == 1: sparse_mode, pre, next ignored [SEM §4]
            rel = user if user is not None else np.zeros((aq, ak), bool)
        elif mode == 0:
            if user is None:
                rel = np.zeros((aq, ak), bool)
            else:
                rel = user if left else user | band(i, j, pre, nxt)
        elif mode == 1:
            rel = user
        elif mode == 2:
            rel = band(i, j, NO_BAND, 0)
        elif mode == 3:
            rel = band(i, j, NO_BAND, ak - aq)
        elif mode == 4:
            rel = band(i, j, aq - ak + pre, ak - aq + nxt)
        else:
            raise ValueError(f"sparse_mode {mode} has no documented meaning")
        out[b][np.ix_(rows, cols)] = rel
    return out
