"""Which query rows and which key/value tokens each batch uses [SEM §2, §3, §6].

Everything is a half-open window per batch. Mask/pse coordinates follow
fia-semantics.md §3: absolute positions in the padded tensors under left
padding, positions within the batch for packed layouts, the shared prefix
first in the KV coordinates (§6).
"""

from __future__ import annotations

from dataclasses import dataclass

from fia_fuzz.op.call import CallView


@dataclass(frozen=True)
class Window:
    """One batch: query rows [q_lo, q_hi) and KV tokens [kv_lo, kv_hi) of its source.

    `mask_row0`/`mask_col0` are the atten_mask/pse coordinates of q_lo/kv_lo;
    the first `prefix_len` KV columns (mask columns 0..prefix_len) come from
    the shared prefix.
    """

    q_lo: int
    q_hi: int
    kv_lo: int
    kv_hi: int
    mask_row0: int
    mask_col0: int
    prefix_len: int

    @property
    def rows(self) -> int:
        return max(0, self.q_hi - self.q_lo)

    @property
    def keys(self) -> int:
        return self.prefix_len + max(0, self.kv_hi - self.kv_lo)


def _cumulative(values: list[int]) -> list[tuple[int, int]]:
    """Cumulative end offsets (TND/NTD, SEM §2) as (start, end) pairs."""
    out, prev = [], 0
    for end in values:
        out.append((prev, end))
        prev = end
    return out


def _padded(full: int, act: int, pad: int) -> tuple[int, int]:
    """Left padding: rows [S - pad - act, S - pad); a negative pad counts as 0 (SEM §3).

    A window that would start before 0 is empty: the IFA doc returns zeros
    there ("起点或终点小于0时，返回数据结果为全0", seed 002 kv左padding).
    """
    pad = max(0, pad)
    lo = full - pad - act
    return (0, 0) if lo < 0 else (lo, full - pad)


def _per_batch(values: list[int] | None, b: int) -> int | None:
    if values is None:
        return None
    return values[0] if len(values) == 1 else values[b]


def seq_axis(layout: str) -> int:
    """The S axis of a BSH/BSND/BNSD tensor."""
    return 2 if layout == "BNSD" else 1


def prefix_length(view: CallView) -> int:
    """Shared-prefix tokens prepended to every batch's KV (SEM §6)."""
    spec = view.spec("key_shared_prefix")
    if spec is None:
        return 0
    given = view.values.get("actual_shared_prefix_len")
    if given:
        return int(given[0])
    return int(spec.shape[seq_axis(view.in_layout)])


def kv_list_lengths(view: CallView) -> list[int]:
    specs = view.specs["key"]
    assert isinstance(specs, list)
    return [int(s.shape[seq_axis(view.in_layout)]) for s in specs]


def windows(view: CallView) -> list[Window]:
    """The window of every batch, from actual lengths, padding and packing."""
    plen = prefix_length(view)
    b_count = view.B
    if view.packed:
        q_spans = _cumulative(view.values["actual_seq_lengths"][:b_count])
    else:
        s1 = view.S1
        if view.decode:
            act_q = [1] * b_count
        else:
            act_q = view.lengths("actual_seq_lengths", s1)
        q_pad = view.values.get("query_padding_size")
        use_q_pad = (q_pad is not None and view.values.get("actual_seq_lengths") is not None
                     and not view.decode)
        q_spans = [_padded(s1, a, _per_batch(q_pad, b)) if use_q_pad else (0, a)
                   for b, a in enumerate(act_q)]
    kv_act = view.values.get("actual_seq_lengths_kv")
    if view.packed and not view.paged:
        kv_spans = _cumulative(kv_act[:b_count])
    else:
        if view.paged:
            full = [view.S2] * b_count
        elif view.is_kv_list:
            full = kv_list_lengths(view)
        else:
            full = [view.kv_dims["S"]] * b_count
        acts = [full[b] if kv_act is None else _per_batch(kv_act, b) for b in range(b_count)]
        kv_pad = view.values.get("kv_padding_size")
        use_kv_pad = kv_pad is not None and kv_act is not None and not view.paged
        kv_spans = [_padded(full[b], acts[b], _per_batch(kv_pad, b)) if use_kv_pad
                    else (0, acts[b]) for b in range(b_count)]
    out = []
    for (q_lo, q_hi), (kv_lo, kv_hi) in zip(q_spans, kv_spans, strict=True):
        if view.packed:
            row0, col0 = 0, plen
        else:
            row0, col0 = q_lo, plen + kv_lo
        out.append(Window(q_lo, q_hi, kv_lo, kv_hi, row0, col0, plen))
    return out
