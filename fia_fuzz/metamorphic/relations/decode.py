"""Decode vs the same row of prefill [SEM §1: Q_S == 1 selects IFA, Q_S > 1 PFA].

Row i of a prefill output depends only on query row i, the keys that row may
see and its pse_shift row, so a decode call whose single query row is that
row, with the same KV, that row's explicit mask (`masks.effective_mask`:
sparse modes, band and padding spelled out) and pse row, gives that output
row. Batches with no valid query row become batches with no valid key
(output 0, lse +inf on both sides) [SEM §3].
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
from fia_fuzz.metamorphic.masks import effective_mask, windows
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, from_bnsd, to_bnsd

BRANCH_TOLERANCE = Tolerance(2, "decode (IFA) and prefill (PFA) are different kernels: decode "
                                "splits S2 across cores and merges partial softmaxes, prefill "
                                "tiles S1 x S2, so the fp32 accumulation order differs")
#: Per-row inputs whose decode form is not modelled.
NOT_MODELLED = ("dequant_scale_query",)


def _rows(x: np.ndarray, idx: list[int]) -> np.ndarray:
    """(B, N, S, D) -> (B, N, 1, D) holding row idx[b] of batch b (a size-1 B broadcasts)."""
    return np.stack([x[b if x.shape[0] > 1 else 0, :, i:i + 1, :] for b, i in enumerate(idx)])


@relation("decode_row", "a decode call equals one row of the prefill output",
          "fia-semantics.md §1 (Q_S == 1 decode branch), §4 (masks)",
          (BRANCH_TOLERANCE,))
def decode_vs_prefill_row(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE_LAYOUTS or v.decode:
        raise NotApplicable("needs a dense-layout prefill case (Q_S > 1)")
    require_absent(call, NOT_MODELLED, "per-row inputs not carried into decode")
    w = windows(v)
    explicit = call.get("atten_mask") is not None or int(v.attrs["sparse_mode"]) != 0
    masked = effective_mask(call, v) if explicit else None
    q = to_bnsd(call["query"], v.in_layout, v.N)
    heads, out_layout = v.N, v.out_layout
    flag = bool(v.attrs["softmax_lse_flag"])
    picks = {"last": [s + max(a - 1, 0) for s, a in zip(w.q_start, w.act_q, strict=True)],
             "first": list(w.q_start)}
    if all(a <= 1 for a in w.act_q):
        picks.pop("first")
    partners = []
    for label, idx in picks.items():
        new = dict(call, query=from_bnsd(_rows(q, idx), v.in_layout), sparse_mode=0)
        for name in ("actual_seq_lengths", "query_padding_size", "pre_tokens", "next_tokens"):
            new.pop(name, None)
        if call.get("query_rope") is not None:
            rope = to_bnsd(call["query_rope"], v.in_layout, v.N)
            new["query_rope"] = from_bnsd(_rows(rope, idx), v.in_layout)
        if masked is not None:
            new["atten_mask"] = np.ascontiguousarray(
                np.stack([masked[b, i] for b, i in enumerate(idx)])[:, None, None, :])
        if call.get("pse_shift") is not None:
            new["pse_shift"] = np.ascontiguousarray(_rows(call["pse_shift"], idx))
        if v.attrs["inner_precise"] in (2, 3):  # decode takes 0/1; bit0 is the precision mode
            new["inner_precise"] = v.attrs["inner_precise"] & 1
        if any(a == 0 for a in w.act_q):
            new["actual_seq_lengths_kv"] = [k if a else 0
                                            for a, k in zip(w.act_q, w.act_kv, strict=True)]

        def select(o: Outputs, idx: list[int] = idx) -> Outputs:
            out = from_bnsd(_rows(to_bnsd(o[0], out_layout, heads), idx), out_layout)
            lse = _rows(o[1], idx) if flag else o[1]
            return out, lse

        partners.append(Partner(label, new, BRANCH_TOLERANCE, source_out=select))
    return keep_legal(partners, case.rules)
