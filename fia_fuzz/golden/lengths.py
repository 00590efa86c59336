"""Per-batch valid windows of query rows and KV columns [SEM §3, §6].

Batch b attends with query rows [q_off, q_off + q_len) of its (padded) query
and KV columns [kv_off, kv_off + prefix + kv_len) of its KV as the KV sources
lay it out. Right padding has offset 0; left padding puts the window at
S - pad - len. Masks and pse_shift index by these absolute positions, sparse
modes and the pre/next band by positions relative to the window.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.spec.call import CallView


def per_batch(values: list[int] | None, b: int, full: int) -> np.ndarray:
    """Lengths or pads as (B,): absent -> full, one value -> broadcast, else the first B."""
    if values is None:
        return np.full(b, full, np.int64)
    if len(values) == 1:
        return np.full(b, values[0], np.int64)
    return np.asarray(values[:b], np.int64)


def packed_lengths(view: CallView, name: str) -> np.ndarray:
    """Per-batch lengths from the cumulative offsets of TND/NTD [V4 §TND]."""
    return np.asarray(view.packed_lengths(name), np.int64)


def left_window(view: CallView, pad_name: str, len_name: str, s: int, lengths: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, offsets) of a left-padded window [SEM §3, IFA kv左padding].

    The window is [S - pad - act, S - pad); negative pads count as 0. Without
    the matching actual lengths the padding is ignored (right padding). A
    window starting before 0 gives zeros (IFA: "起点或终点小于0时, 返回数据结果为全0"),
    modelled per batch as an empty window.
    """
    pads = view.values.get(pad_name)
    if pads is None or view.values.get(len_name) is None:
        return lengths, np.zeros_like(lengths)
    pad = np.maximum(per_batch(pads, len(lengths), 0), 0)
    start = s - pad - lengths
    return np.where(start < 0, 0, lengths), np.maximum(start, 0)


def query_window(view: CallView) -> tuple[np.ndarray, np.ndarray]:
    """(q_len, q_off): decode ignores actual_seq_lengths [SEM §3]; TND lengths are cumulative."""
    if view.packed:
        lens = packed_lengths(view, "actual_seq_lengths")
        return lens, np.zeros_like(lens)
    b, s1 = view.B, view.S1
    if view.decode:
        return np.full(b, min(s1, 1), np.int64), np.zeros(b, np.int64)
    lens = np.minimum(per_batch(view.values.get("actual_seq_lengths"), b, s1), s1)
    return left_window(view, "query_padding_size", "actual_seq_lengths", s1, lens)
