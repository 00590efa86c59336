"""Breakers of the `prefix.*` rules: the shared KV prefix (rulebook/prefix.py).

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
from fia_fuzz.strategies.illegal.breaker import PAGED_DECODE, PAGED_DENSE, Breaker, searched

PER_TOKEN = {"paged": False, "mask": "none", "pse": False, "kv_dtype": "int8"}


def _prefix_int8(draw: st.DrawFn, case: Case) -> Change:
    """A batch-1 int8 shared prefix of key's layout next to int8 q/k/v."""
    k = case.params["key"]
    ax = SEQ_AXIS[q_layout(case)]
    p = with_axis(with_axis(k, 0, 1), ax, draw(st.integers(1, max(1, k.shape[ax]))))
    return {"key_shared_prefix": p, "value_shared_prefix": p}


def _prefix(draw: st.DrawFn, case: Case) -> Change:
    """An int8 shared prefix of 1..16 tokens, in the key's layout (batch 1)."""
    k = case.params["key"]
    p = with_axis(with_axis(k, 0, 1), SEQ_AXIS[q_layout(case)], draw(st.integers(1, 16)))
    return {"key_shared_prefix": p, "value_shared_prefix": p}


BREAKERS: dict[str, Breaker] = {
    "prefix.not_all_int8": Breaker(_prefix_int8, {"full_quant": True, "mask": "none",
                                                  "pse": False, "rope": False}),
    "prefix.per_token_antiquant": Breaker(
        _prefix, {"antiquant": "separate:1/1", **PER_TOKEN},
        alt=({"antiquant": "separate:3/3", **PER_TOKEN},
             {"antiquant": "combined:1", **PER_TOKEN})),
    "prefix.both_or_neither": searched(
        {"plain": True, "layout": "BNSD"}, "add:value_shared_prefix",
        alt=({"rope_d": "512"},
             {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},
             {"full_quant": True, "rope": False},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             {"layout": "NTD_TND"},
             {"cache": "NZ", "rope": False},
             PAGED_DECODE,
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"})),
    "prefix.rank_dtype": searched(
        {"prefix": True, "branch": "prefill"}, "dtype:key_shared_prefix"),
    "prefix.batch_one": searched(
        {"prefix": True, "branch": "prefill"}, "pair_axis:key_shared_prefix:0:+1"),
    "prefix.heads_dim": searched(
        {"prefix": True, "branch": "prefill"}, "pair_axis:key_shared_prefix:-1:x2",
        also=("pair_axis:key_shared_prefix:-1:/8",)),
    "prefix.same_shape": searched(
        {"prefix": True, "branch": "prefill"}, "axis:key_shared_prefix:-2:-1",
        alt=({"sparse_mode": 3, "layout": "BNSD"},),
        also=("axis:key_shared_prefix:-2:+1",)),
    "prefix.len_shape": searched(
        {"prefix": True, "branch": "prefill"}, "values:actual_shared_prefix_len:empty",
        alt=({"prefix": True, "branch": "decode"},),
        also=("values:actual_shared_prefix_len:extra",)),
    "prefix.len_range": searched(
        {"prefix": True, "branch": "prefill"}, "values:actual_shared_prefix_len:neg",
        alt=({"prefix": True, "branch": "decode"},),
        also=("values:actual_shared_prefix_len:big",)),
    # base re-picked by hand: per-token 4/4 now also breaks prefix.per_token_antiquant
    "prefix.not_paged": searched(
        {"antiquant": "separate:0/0", "paged": True}, "add:key_shared_prefix",
        alt=(PAGED_DENSE,)),
    "prefix.no_left_padding": searched(
        {"prefix": True, "branch": "decode"}, "add:query_padding_size"),
    "prefix.not_kv_list": searched({"kv_list": True}, "add:key_shared_prefix"),
    "prefix.mask_covers": searched({"prefix": True, "branch": "decode"}, "add:atten_mask"),
    "prefix.pse_covers": searched(
        {"antiquant": "combined:0", "branch": "prefill"}, "add:key_shared_prefix"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "prefix.heads_dim": ("below", "above"),
    "prefix.len_range": ("below", "above"),
    "prefix.len_shape": ("shorter", "longer"),
    "prefix.same_shape": ("below", "above"),
}
