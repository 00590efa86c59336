"""Breakers of the `kvlist.*` rules: key/value tensor lists (rulebook/kvlist.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import SEQ_AXIS
from fia_fuzz.strategies.edits import (
    Change,
    q_layout,
    with_axis,
)
from fia_fuzz.strategies.illegal.breaker import PAGED, Breaker, searched

#: No B-shaped optional input; decode keeps the 257-batch query small.
LIST_FREE = {"mask": "none", "pse": False, "actual_q": "absent", "actual_kv": "absent",
             "branch": "decode"}


def _batch_one(draw: st.DrawFn, case: Case) -> Change:
    b2 = draw(st.integers(2, 3))
    return {n: [with_axis(t, 0, b2) for t in case.params[n]] for n in ("key", "value")}


def _uniform(draw: st.DrawFn, case: Case) -> Change:
    """value[i] a token or two longer or shorter than key[i] (shorter down to one token)."""
    vals = list(case.params["value"])
    i = draw(st.integers(0, len(vals) - 1))
    ax = SEQ_AXIS[q_layout(case)]
    s = vals[i].shape[ax]
    vals[i] = with_axis(vals[i], ax, draw(st.sampled_from(
        [x for x in (s + 1, s + 2, s - 1, s - 2) if x >= 1])))
    return {"value": vals}


def _list_b_max(draw: st.DrawFn, case: Case) -> Change:
    """Past 256 batches, just (257-260) or far (512, 1024): the query's B and both lists
    (cycling the drawn tensors)."""
    b = draw(st.sampled_from([draw(st.integers(257, 260)), 512, 1024]))
    out: Change = {"query": with_axis(case.params["query"], 0, b)}
    for n in ("key", "value"):
        ts = case.params[n]
        out[n] = [ts[i % len(ts)] for i in range(b)]
    return out


def _not_paged(draw: st.DrawFn, case: Case) -> Change:
    """The paged caches passed as lists of B (batch-1 lists over a BNSD query)."""
    b = case.params["query"].shape[0]
    return {n: [case.params[n]] * b for n in ("key", "value")}


BREAKERS: dict[str, Breaker] = {
    "kvlist.batch_one": Breaker(_batch_one, {"kv_list": True}),
    "kvlist.uniform": Breaker(_uniform, {"kv_list": True}),
    "kvlist.b_max_256": Breaker(_list_b_max, {"kv_list": True, **LIST_FREE}),
    # NZ in decode: a prefill separate antiquant refuses lists itself
    # (antiquant.sep_prefill_features)
    "kvlist.not_paged": Breaker(_not_paged, {**PAGED, "cache": "BnBsH", "layout": "BNSD"},
                                alt=({"cache": "NZ", "rope": False, "layout": "BNSD",
                                      "branch": "decode"},)),
    "kvlist.count": searched(
        {"kv_list": True}, "kv_list:drop",
        also=("kv_list:extra",)),
    "kvlist.no_left_padding": searched({"kv_list": True}, "add:query_padding_size"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "kvlist.count": ("shorter", "longer"),
    "kvlist.uniform": ("below", "above"),
}
