"""Right vs left padding [V4 queryPaddingSize/kvPaddingSize, fia-semantics.md §3].

The partner moves each batch's valid query and KV rows to
[S' - pad - act, S' - pad) of longer tensors (S' = S + 3, pad = 1) whose
other rows are garbage, and passes query_padding_size / kv_padding_size.
A user mask and pse_shift are indexed by absolute position, so they move
with the rows (the band is folded into the mask first, since mode 0 with a
mask ignores pre/next under left padding); sparse modes 2/3/4 are relative
to the valid window and stay as they are.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Outputs,
    Partner,
    keep_legal,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.masks import Windows, effective_mask, windows
from fia_fuzz.metamorphic.paging import garbage
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, from_bnsd, to_bnsd
from fia_fuzz.op.tensors import dtype_name

PAD_TOLERANCE = Tolerance(2, "the kernel's S tiles start at absolute positions, so moving the "
                             "valid window changes the tile boundaries and the fp32 "
                             "accumulation order")
#: Not allowed with left padding [SEM §2, §3, §6] or not modelled here.
NOT_WITH_LEFT = ("block_table", "key_shared_prefix", "query_padding_size", "kv_padding_size",
                 "query_rope", "antiquant_scale", "key_antiquant_scale")
LEAD, TRAIL = 2, 1


def _move(x: np.ndarray, starts: list[int], acts: list[int], fill: np.ndarray) -> np.ndarray:
    """BNSD x with batch b's rows [0, acts[b]) moved to [starts[b], starts[b] + acts[b])."""
    out = fill.copy()
    for b, (s, a) in enumerate(zip(starts, acts, strict=True)):
        out[b, :, s:s + a] = x[b, :, :a]
    return out


def _left_padded(case: Case, call: Call, v: CallView, w: Windows, label: str, pad_q: bool,
                 kv_pads: list[int]) -> Partner:
    """The source with its valid KV rows (and query rows if `pad_q`) moved to the right end."""
    heads, kv_n, layout = v.N, v.KV_N, v.in_layout
    s2n = v.S2 + LEAD + max(kv_pads)
    kv_start = [s2n - p - a for p, a in zip(kv_pads, w.act_kv, strict=True)]
    pads = kv_pads[:1] if len(set(kv_pads)) == 1 else kv_pads
    new = dict(call, kv_padding_size=np.array(pads, np.int64), actual_seq_lengths_kv=w.act_kv)
    for name in ("key", "value"):
        x = to_bnsd(call[name], layout, kv_n)
        shape = x.shape[:2] + (s2n, x.shape[3])
        fill = garbage(shape, dtype_name(x.dtype), case.seed, f"padding.{name}")
        new[name] = from_bnsd(_move(x, kv_start, w.act_kv, fill), layout)
    q_start, rows = [0] * v.B, v.S1
    if pad_q:
        rows = v.S1 + LEAD + TRAIL
        q_start = [rows - TRAIL - a for a in w.act_q]
        q = to_bnsd(call["query"], layout, heads)
        fill = garbage(q.shape[:2] + (rows, q.shape[3]), dtype_name(q.dtype), case.seed,
                       "padding.query")
        new["query"] = from_bnsd(_move(q, q_start, w.act_q, fill), layout)
        new["query_padding_size"] = np.array([TRAIL], np.int64)
        new["actual_seq_lengths"] = w.act_q
    _move_mask_and_pse(call, new, v, w, q_start, kv_start, rows, s2n)
    out_layout, flag, s1 = v.out_layout, bool(v.attrs["softmax_lse_flag"]), v.S1
    act_q = w.act_q

    def back(o: Outputs) -> Outputs:
        out = to_bnsd(o[0], out_layout, heads)
        res = np.zeros(out.shape[:2] + (s1, out.shape[3]), out.dtype)
        lse = np.full((len(act_q), heads, s1, 1), np.inf, np.float32) if flag else o[1]
        for b, (s, a) in enumerate(zip(q_start, act_q, strict=True)):
            res[b, :, :a] = out[b, :, s:s + a]
            if flag:
                lse[b, :, :a] = o[1][b, :, s:s + a]
        return from_bnsd(res, out_layout), lse

    return Partner(label, new, PAD_TOLERANCE, partner_out=back)


@relation("padding", "left-padded data with padding sizes equals the right-padded call",
          "V4 参数说明 queryPaddingSize/kvPaddingSize; fia-semantics.md §3",
          (PAD_TOLERANCE,))
def left_vs_right_padding(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE_LAYOUTS or v.is_kv_list:
        raise NotApplicable("left padding needs dense, non-list tensors")
    require_absent(call, NOT_WITH_LEFT, "not allowed with (or not modelled under) left padding")
    w = windows(v)
    uniform = [TRAIL] * v.B
    plans = [("left-kv", False, uniform)]
    if not v.decode:  # query left padding only for Q_S > 1 [SEM §3]
        plans.insert(0, ("left-q-kv", True, uniform))
    if v.B > 1:  # documented shape (B); the vendor reference reads element 0 only [SEM §3]
        plans.append(("left-kv-per-batch", False, [1 + b % 2 for b in range(v.B)]))
    return keep_legal([_left_padded(case, call, v, w, label, pad_q, pads)
                       for label, pad_q, pads in plans], case.rules)


def _move_mask_and_pse(call: Call, new: Call, v: CallView, w: Windows, q_start: list[int],
                       kv_start: list[int], rows: int, cols: int) -> None:
    """Carry the absolute-coordinate mask (band folded in) and pse_shift to the moved rows."""
    mode = int(v.attrs["sparse_mode"])
    if call.get("atten_mask") is not None and mode in (0, 1):
        masked = effective_mask(call, v)
        moved = np.ones((v.B, 1, rows, cols), bool)
        for b in range(v.B):
            src_r = slice(0, w.act_q[b]) if not v.decode else slice(0, 1)
            dst_r = slice(q_start[b], q_start[b] + w.act_q[b]) if not v.decode else slice(0, 1)
            moved[b, 0, dst_r, kv_start[b]:kv_start[b] + w.act_kv[b]] = \
                masked[b, src_r, w.kv_start[b]:w.kv_start[b] + w.act_kv[b]]
        new["atten_mask"] = moved
        new.pop("pre_tokens", None)
        new.pop("next_tokens", None)
    pse = call.get("pse_shift")
    if pse is not None:
        out = np.zeros((v.B, pse.shape[1], rows, cols), pse.dtype)
        for b in range(v.B):
            src = pse[b if pse.shape[0] > 1 else 0]
            for r in range(w.act_q[b] if not v.decode else 1):
                dst = q_start[b] + r if not v.decode else 0
                out[b, :, dst, kv_start[b]:kv_start[b] + w.act_kv[b]] = \
                    src[:, r, w.kv_start[b]:w.kv_start[b] + w.act_kv[b]]
        new["pse_shift"] = out
