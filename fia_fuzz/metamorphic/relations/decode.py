"""Decode vs the same row of prefill [SEM §1: Q_S == 1 selects IFA, Q_S > 1 PFA].

Row i of a prefill output depends only on query row i and the keys it may
see, so a decode call whose single query row is that row, with the same KV,
gives that output row. Batches with no valid query row become batches with
no valid key (output 0, lse +inf on both sides) [SEM §3].
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Outputs,
    Partner,
    keep_legal,
    lengths,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.layouts import DENSE, from_bnsd, to_bnsd
from fia_fuzz.spec import Case

BRANCH_TOLERANCE = Tolerance(2, "decode (IFA) and prefill (PFA) are different kernels: decode "
                                "splits S2 across cores and merges partial softmaxes, prefill "
                                "tiles S1 x S2, so the fp32 accumulation order differs")
#: Inputs whose per-row meaning this relation does not (yet) carry into decode.
ROW_DEPENDENT = ("atten_mask", "pse_shift", "query_padding_size", "query_rope",
                 "dequant_scale_query")


def _rows(x: np.ndarray, idx: list[int]) -> np.ndarray:
    """BNSD (B, N, S, D) -> (B, N, 1, D) holding row idx[b] of batch b."""
    return np.stack([x[b, :, i:i + 1, :] for b, i in enumerate(idx)], axis=0)


@relation("decode_row", "a decode call equals one row of the prefill output",
          "fia-semantics.md §1 (Q_S == 1 decode branch), §4 (mask rows)")
def decode_vs_prefill_row(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE or v.decode:
        raise NotApplicable("needs a dense-layout prefill case (Q_S > 1)")
    require_absent(call, ROW_DEPENDENT, "per-row inputs not carried into decode")
    if v.attrs["sparse_mode"] != 0:
        raise NotApplicable(f"sparse_mode {v.attrs['sparse_mode']} masks rows differently")
    act_q = lengths(v, "actual_seq_lengths", v.S1)
    act_kv = lengths(v, "actual_seq_lengths_kv", v.S2)
    q = to_bnsd(call["query"], v.in_layout, v.N)
    heads, out_layout = v.N, v.out_layout
    flag = bool(v.attrs["softmax_lse_flag"])
    picks = {"last": [max(a - 1, 0) for a in act_q], "first": [0] * v.B}
    if all(a <= 1 for a in act_q):
        picks.pop("first")
    partners = []
    for label, idx in picks.items():
        new = dict(call, query=from_bnsd(_rows(q, idx), v.in_layout))
        new.pop("actual_seq_lengths", None)
        if v.attrs["inner_precise"] in (2, 3):  # decode takes 0/1; bit0 is the precision mode
            new["inner_precise"] = v.attrs["inner_precise"] & 1
        if any(a == 0 for a in act_q):
            new["actual_seq_lengths_kv"] = [k if a else 0
                                            for a, k in zip(act_q, act_kv, strict=True)]

        def select(o: Outputs, idx: list[int] = idx) -> Outputs:
            out = from_bnsd(_rows(to_bnsd(o[0], out_layout, heads), idx), out_layout)
            lse = _rows(o[1], idx) if flag else o[1]
            return out, lse

        partners.append(Partner(label, new, BRANCH_TOLERANCE, source_out=select))
    if not partners:
        raise NotApplicable("no query row")
    return keep_legal(partners)
