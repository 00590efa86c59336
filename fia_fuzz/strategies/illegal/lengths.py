"""Breakers of the `lengths.*` rules: actual_seq_lengths(_kv) counts and ranges
(rulebook/lengths.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import SEQ_AXIS, blocks_needed
from fia_fuzz.strategies.edits import (
    Change,
    block_size,
    follow_dsq,
    position,
    q_layout,
    sided,
    with_axis,
)
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, PAGED_DECODE, Breaker, searched


def _kv_count(draw: st.DrawFn, case: Case) -> Change:
    """Fewer KV lengths than batches: none, or packed calls 1..B-1 (a contiguous packed KV
    its last cumulative ends, so its total holds), others 2..B-1 (one applies to every
    batch). A packed paged call's one length is read for every batch too: the shortest, or
    in a causal call the longest query's (tnd.causal_lengths), and the cache must hold B of
    it (paged.block_count)."""
    v = case.view()
    vals = list(case.params["actual_seq_lengths_kv"])
    k = draw(st.sampled_from([0, *range(1 if v.packed else 2, v.B)]))
    if k == 0:
        return {"actual_seq_lengths_kv": []}
    if v.packed and not v.paged:
        return {"actual_seq_lengths_kv": vals[-k:]}
    if k > 1:
        return {"actual_seq_lengths_kv": (vals * v.B)[:k]}
    one = max(v.act_q) if case.params.get("sparse_mode") == 3 else min(vals)
    if v.B * blocks_needed(one, block_size(case)) > case.params["key"].shape[0]:
        reject()
    return {"actual_seq_lengths_kv": [one]}


def _negative(name: str) -> Callable[[st.DrawFn, Case], Change]:
    """A change of `name` (actual_seq_lengths or _kv) to hold a negative length: -1 to -4 at
    any batch, or in a cumulative (packed, not paged KV) list at the first end only, where
    the ends still increase to the total (a later one breaks lengths.packed_monotonic or,
    the last, lengths.packed_total)."""
    def change(draw: st.DrawFn, case: Case) -> Change:
        vals = case.params.get(name)
        v = case.view()
        if not vals or (name == "actual_seq_lengths" and v.decode):
            reject()    # absent, or query lengths in decode (ignored there: not this rule's)
        vals = list(vals)
        cumulative = v.packed and (name == "actual_seq_lengths" or not v.paged)
        if cumulative and len(vals) < 2:
            reject()
        i = 0 if cumulative else draw(st.integers(0, len(vals) - 1))
        vals[i] = -draw(st.integers(1, 4))
        return sided({name: vals}, "below", *position(i, len(vals)))
    return change


def _packed_monotonic(draw: st.DrawFn, case: Case) -> Change:
    """A cumulative list that decreases: one end before the last raised past its successor,
    by one or by up to the total (the last end, T, stays), at the first pair, the last or
    any. Paged KV lengths are per batch,
    so there only the query's list is cumulative."""
    names = ["actual_seq_lengths"] + ([] if case.view().paged else ["actual_seq_lengths_kv"])
    name = draw(st.sampled_from(names))
    ends = list(case.params[name])
    if len(ends) < 2:
        reject()
    j = draw(st.sampled_from([0, len(ends) - 2, draw(st.integers(0, len(ends) - 2))]))
    ends[j] = ends[j + 1] + draw(st.sampled_from([1, max(1, ends[-1] - ends[j + 1])]))
    return sided({name: ends}, *position(j, len(ends) - 1))


def _packed_total(draw: st.DrawFn, case: Case) -> Change:
    """A packed tensor's T off its list's last cumulative end: larger (a graph batch padded
    past its tokens: one more, up to twice, or rounded up to a 64 tile) or smaller (one less,
    down to half). The query's T (with query_rope and MLA's per-token dequant_scale_query),
    or a contiguous key/value's (with key_rope); a paged KV's lengths are per batch."""
    v = case.view()
    names = ["query"] + ([] if v.paged else ["key"])
    name = draw(st.sampled_from(names))
    ax = SEQ_AXIS[q_layout(case)]
    t = case.params[name].shape[ax]
    above = draw(st.booleans()) or t < 2
    if above:
        new = t + draw(st.sampled_from([1, max(1, t // 2), t, -t % 64 or 64]))
    else:
        new = t - draw(st.sampled_from([1, max(1, t // 2)]))
    tensors = ("query", "query_rope") if name == "query" else ("key", "value", "key_rope")
    out: Change = {n: with_axis(case.params[n], ax, new) for n in tensors
                   if case.params.get(n) is not None}
    if name == "query":
        out.update(follow_dsq(case, tokens=new))
    return sided(out, "above" if above else "below")


#: Bases with per-batch KV lengths, one per family that carries them.
KV_LENGTHS = (PAGED_DECODE,
              {"layout": "TND", "paged": True, "rope_d": "none"},
              {"layout": "NTD_TND", "paged": False},
              {"actual_kv": "per_batch", "antiquant": "separate:1/1"},
              {"actual_kv": "per_batch", "full_quant": True, "rope": False},
              {"rope_d": "512", "layout": "BSND"},
              FAMILY_BASE["gqa_nz"])
#: Packed bases: TND and NTD_TND, paged or not, MLA rope D 128 and D 512.
PACKED = ({"layout": "TND", "paged": True, "rope_d": "none"},
          {"layout": "TND", "paged": False},
          {"layout": "NTD_TND"},
          {"rope_d": "128"},
          {"rope_d": "512", "layout": "TND"})

BREAKERS: dict[str, Breaker] = {
    "lengths.q_count": searched(
        {"prefix": True, "branch": "prefill"}, "values:actual_seq_lengths:empty",
        alt=({"sparse_mode": 1},
             {"antiquant": "separate:1/1", "branch": "prefill"},
             {**FAMILY_BASE["full_quant"], "actual_q": "per_batch"})),
    "lengths.kv_count": Breaker(_kv_count, KV_LENGTHS[0], alt=KV_LENGTHS[1:]),
    "lengths.q_nonnegative": Breaker(_negative("actual_seq_lengths"),
                                     {"prefix": True, "branch": "prefill"},
                                     alt=({"sparse_mode": 1},
                                          {"antiquant": "separate:1/1", "branch": "prefill"},
                                          {**FAMILY_BASE["gqa_nz"], "branch": "prefill",
                                           "actual_q": "per_batch"},
                                          {"full_quant": True, "rope": False,
                                           "actual_q": "per_batch"},
                                          *PACKED)),
    "lengths.kv_nonnegative": Breaker(_negative("actual_seq_lengths_kv"), KV_LENGTHS[0],
                                      alt=KV_LENGTHS[1:]),
    "lengths.q_max": searched(
        {"antiquant": "combined:0", "branch": "prefill"}, "values:actual_seq_lengths:big",
        alt=({"post_quant_offset": True, "sparse_mode": 4},
             {"antiquant": "separate:1/1", "branch": "prefill"},
             {**FAMILY_BASE["gqa_nz"], "branch": "prefill", "actual_q": "per_batch"},
             {"full_quant": True, "rope": False, "actual_q": "per_batch"})),
    "lengths.kv_max": searched(
        {"prefix": True, "branch": "decode"}, "values:actual_seq_lengths_kv:big",
        alt=({"post_quant_offset": True, "sparse_mode": 4},)),
    "lengths.packed_required": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "drop:actual_seq_lengths",
        alt=({"layout": "NTD_TND"},
             {"layout": "TND", "paged": True})),
    "lengths.packed_count_max": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "values:actual_seq_lengths_kv:many",
        alt=({"layout": "NTD_TND"},
             {"layout": "TND", "paged": True})),
    "lengths.packed_monotonic": Breaker(_packed_monotonic, PACKED[0], alt=PACKED[1:]),
    "lengths.packed_total": Breaker(_packed_total, PACKED[0], alt=PACKED[1:]),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "lengths.q_nonnegative": ("first", "last"),
    "lengths.kv_nonnegative": ("first", "last"),
    "lengths.q_max": ("first", "last"),
    "lengths.kv_max": ("first", "last"),
    "lengths.packed_monotonic": ("first", "last"),
    "lengths.packed_total": ("below", "above"),
}
