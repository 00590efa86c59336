"""Batch permutation: reordering the batch reorders the output and nothing else.

Batches are independent [V4 功能说明]; every argument with a batch axis is
permuted with it: query/KV (dense axis, tensor list, packed segments, block
table rows), per-batch lengths and padding sizes, masks and pse_shift with a
B axis, per-token antiquant parameters [SEM §3-§7].
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Outputs,
    Partner,
    keep_legal,
    permutation,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import cumulative, segments

BATCH_TOLERANCE = Tolerance(0, "batches are independent and keep their shapes; which core "
                               "runs a batch does not change its arithmetic")
#: antiquant tensors and the attribute holding their mode [SEM §7].
ANTIQUANT = {"antiquant_scale": "antiquant_mode", "antiquant_offset": "antiquant_mode",
             "key_antiquant_scale": "key_antiquant_mode",
             "key_antiquant_offset": "key_antiquant_mode",
             "value_antiquant_scale": "value_antiquant_mode",
             "value_antiquant_offset": "value_antiquant_mode"}


def _take_segments(x: np.ndarray, ends: list[int], order: np.ndarray, axis: int) -> np.ndarray:
    segs = segments(ends)
    parts = [np.take(x, np.arange(*segs[i]), axis=axis) for i in order]
    return np.ascontiguousarray(np.concatenate(parts, axis=axis))


def _per_batch(values: list[int], perm: np.ndarray, b: int) -> list[int]:
    if len(values) == 1:
        return list(values)
    return [int(values[i]) for i in perm] + [int(x) for x in values[b:]]


def _permute(call: Call, v: CallView, perm: np.ndarray) -> Call:
    b = v.B
    new = dict(call)
    if v.packed:
        axis = 0 if v.in_layout == "TND" else 1
        for name in ("query", "query_rope"):
            if call.get(name) is not None:
                new[name] = _take_segments(call[name], call["actual_seq_lengths"], perm, axis)
        new["actual_seq_lengths"] = cumulative([v.act_q[i] for i in perm])
        if v.paged:  # paged KV lengths stay per batch [SEM §2]
            new["block_table"] = np.ascontiguousarray(np.asarray(call["block_table"])[perm])
            new["actual_seq_lengths_kv"] = [v.act_kv[i] for i in perm]
            return new
        for name in ("key", "value", "key_rope"):
            if call.get(name) is not None:
                new[name] = _take_segments(call[name], call["actual_seq_lengths_kv"], perm, axis)
        new["actual_seq_lengths_kv"] = cumulative([v.act_kv[i] for i in perm])
        return new
    for name in ("query", "query_rope"):
        if call.get(name) is not None:
            new[name] = np.ascontiguousarray(call[name][perm])
    if v.paged:
        new["block_table"] = np.ascontiguousarray(np.asarray(call["block_table"])[perm])
    else:
        for name in ("key", "value", "key_rope"):
            x = call.get(name)
            if isinstance(x, list):
                new[name] = [x[i] for i in perm]
            elif x is not None:
                new[name] = np.ascontiguousarray(x[perm])
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        if call.get(name) is not None:
            new[name] = _per_batch(list(call[name]), perm, b)
    for name in ("query_padding_size", "kv_padding_size"):
        x = call.get(name)
        if x is not None and np.asarray(x).size > 1:
            new[name] = np.asarray(_per_batch(np.asarray(x).tolist(), perm, b), dtype=np.int64)
    mask = call.get("atten_mask")
    if mask is not None and mask.shape[0] == b and (mask.ndim >= 3 or v.decode):
        new["atten_mask"] = np.ascontiguousarray(mask[perm])
    pse = call.get("pse_shift")
    if pse is not None and pse.shape[0] == b:
        new["pse_shift"] = np.ascontiguousarray(pse[perm])
    for name, mode_attr in ANTIQUANT.items():
        x, mode = call.get(name), v.attrs[mode_attr]
        if x is None or mode not in (1, 3):
            continue
        axis = x.ndim - 2 if mode == 1 else 0  # per-token (.., B, S2); mode 3 (B, KV_N, S2)
        new[name] = np.ascontiguousarray(np.take(x, perm, axis=axis))
    return new


def _unpermute(o: Outputs, inv: np.ndarray, out_layout: str, lse_flag: bool,
               ends: list[int] | None) -> Outputs:
    out, lse = o
    if ends is not None:  # packed: segments of the partner's (permuted) order
        axis = 0 if out_layout == "TND" else 1
        out = _take_segments(out, ends, inv, axis)
        lse = _take_segments(lse, ends, inv, 0) if lse_flag else lse
        return out, lse
    axis = 1 if out_layout == "NBSD" else 0
    out = np.take(out, inv, axis=axis)
    return out, (lse[inv] if lse_flag else lse)


@relation("batch_perm", "permuting the batch permutes the output and nothing else",
          "V4 功能说明 (batches are independent); fia-semantics.md §3",
          (BATCH_TOLERANCE,))
def batch_permutation(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.B < 2:
        raise NotApplicable("B = 1: nothing to permute")
    require_absent(call, ("dequant_scale_query",), "batch axis not modelled for")
    perm = permutation(case.seed, "batch", v.B)
    if (perm == np.arange(v.B)).all():
        perm = perm[::-1].copy()
    inv = np.argsort(perm)
    new = _permute(call, v, perm)
    ends = new["actual_seq_lengths"] if v.packed else None
    out_layout, flag = v.out_layout, bool(v.attrs["softmax_lse_flag"])

    def back(o: Outputs) -> Outputs:
        return _unpermute(o, inv, out_layout, flag, ends)

    label = "perm" + "".join(str(int(i)) for i in perm[:8])
    return keep_legal([Partner(label, new, BATCH_TOLERANCE, partner_out=back)], case.rules)
