"""Route bases: each breaker also starts on the Atlas A2 routes where its change breaks its
rule and its own bases do not go, so a broken bound meets every kernel path that checks it.

A breaker's bases are written for the families and layouts its change is written on; the
route model (rules/profiles/a2_routes) splits those further by kernel and template, and a
base filter alone lands on the routes its family favours (a plain BNSD prefill draws V3
GQA and rarely the prompt kernel). `ROUTE_BASES` adds, per rule, one base pinned to each
route its change breaks the rule on (from `width.route_pool`) that its own bases missed:
one of its own filters with the route pinned where that is drawable and lands, else the
route alone. `python -m fia_fuzz.strategies.illegal.search --routes [PREFIX...]` prints
the entries (to paste here); tests/strategies/test_illegal_sides.py fails when a bound rule's bases
miss a route its change breaks it on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis.errors import InvalidArgument

from fia_fuzz.strategies.illegal.breaker import Breaker

#: rule id -> bases pinned to the routes its own bases miss (generated, see above)
ROUTE_BASES: dict[str, tuple[dict[str, Any], ...]] = {
    "mask.optimized_shape": (
        {"sparse_mode": 2, "route": "pfa.full_quant"},
    ),
    "antiquant.needs_int_kv": (
        {"route": "ifa.post_quant"},
        {"route": "pfa.post_quant"},
    ),
    "antiquant.offset_matches_scale": (
        {"pse": True, "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"pse": True, "branch": "decode", "route": "ifa.antiquant.5/5"},
    ),
    "antiquant.offset_needs_scale": (
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
    ),
    "antiquant.sep_mode_range": (
        {"kv_dtype": "int8", "paged": False, "route": "ifa.antiquant.1/1"},
        {"kv_dtype": "int8", "paged": False, "route": "ifa.antiquant.2/2"},
        {"kv_dtype": "int8", "paged": False, "route": "ifa.antiquant.3/3"},
        {"kv_dtype": "int8", "cache": "BnBsH", "route": "ifa.antiquant.4/4"},
        {"kv_dtype": "int8", "cache": "BnBsH", "route": "ifa.antiquant.5/5"},
    ),
    "args.attr_type": (
        {"rope_d": "512", "route": "ifa.mla_quant"},
        {"antiquant": "separate:1/1", "route": "pfa.antiquant"},
    ),
    "args.required": (
        {"rope_d": "512", "route": "ifa.mla_quant"},
        {"antiquant": "separate:1/1", "route": "pfa.antiquant"},
    ),
    "args.values_integral": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
        {"route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "dtype.int64_values": (
        {"prefix_len": "given", "route": "ifa.antiquant.0"},
        {"actual_kv": "per_batch", "route": "ifa.antiquant.1"},
        {"prefix_len": "given", "route": "ifa.antiquant.2/2"},
        {"actual_kv": "per_batch", "route": "ifa.antiquant.3/3"},
        {"actual_kv": "per_batch", "route": "ifa.antiquant.4/4"},
        {"actual_kv": "per_batch", "route": "ifa.antiquant.0/1"},
        {"prefix_len": "given", "route": "pfa.post_quant"},
    ),
    "dtype.kv_float_match_query": (
        {"plain": True, "layout": "BNSD", "route": "v3.gqa"},
    ),
    "dtype.kv_match": (
        {"antiquant": "separate:1/1", "route": "pfa.antiquant"},
    ),
    "dtype.pse": (
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.1/1"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.3/3"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.0/1"},
    ),
    "gqa.kv_heads_nonnegative": (
        {"rope_d": "512", "route": "ifa.mla_quant"},
        {"antiquant": "none", "full_quant": False, "rope": False, "paged": True,
         "route": "ifa.post_quant"},
        {"antiquant": "none", "full_quant": False, "rope": False, "paged": True,
         "route": "pfa.post_quant"},
    ),
    "gqa.num_heads_positive": (
        {"rope_d": "512", "route": "ifa.mla_quant"},
        {"antiquant": "none", "full_quant": False, "rope": False, "paged": True,
         "route": "ifa.post_quant"},
        {"antiquant": "none", "full_quant": False, "rope": False, "paged": True,
         "route": "pfa.post_quant"},
    ),
    "kvlist.count": (
        {"kv_list": True, "route": "v3.gqa"},
        {"kv_list": True, "route": "pfa.post_quant"},
    ),
    "kvlist.not_paged": (
        {"paged": True, "rope": False, "cache": "BnBsH", "layout": "BNSD",
         "route": "ifa.antiquant.5/5"},
    ),
    "kvlist.uniform": (
        {"kv_list": True, "route": "v3.gqa"},
        {"kv_list": True, "route": "pfa.post_quant"},
    ),
    "layout.query_heads": (
        {"plain": True, "layout": "BNSD", "route": "v3.gqa"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.1"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.0/0"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.1/1"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.2/2"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.3/3"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.0/1"},
    ),
    "layout.query_rank": (
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.1"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.0/0"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.1/1"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.2/2"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.3/3"},
        {"layout": "BNSD", "paged": False, "route": "ifa.antiquant.0/1"},
    ),
    "lengths.kv_count": (
        {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode",
         "route": "ifa.post_quant"},
    ),
    "lengths.kv_max": (
        {"route": "ifa.antiquant.3/3"},
        {"prefix": True, "route": "pfa.antiquant"},
    ),
    "lengths.kv_nonnegative": (
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.0"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.1"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.3/3"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.4/4"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.5/5"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.0/1"},
        {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode",
         "route": "ifa.post_quant"},
        {"paged": True, "layout": "BNSD", "antiquant": "none", "route": "pfa.float"},
        {"actual_kv": "per_batch", "antiquant": "separate:1/1", "route": "pfa.antiquant"},
        {"paged": True, "layout": "BNSD", "antiquant": "none", "route": "pfa.post_quant"},
    ),
    "lengths.q_nonnegative": (
        {"prefix": True, "branch": "prefill", "route": "pfa.post_quant"},
    ),
    "mask.full_form": (
        {"route": "ifa.antiquant.1/1"},
        {"route": "ifa.antiquant.3/3"},
    ),
    "mask.optimized_required": (
        {"sparse_mode": 2, "route": "pfa.post_quant"},
    ),
    "mask.sparse_mode_range": (
        {"route": "pfa.post_quant"},
    ),
    "mla.actual_seq_lengths": (
        {"route": "ifa.mla_quant"},
    ),
    "padding.not_paged": (
        {"route": "ifa.antiquant.5/5"},
    ),
    "padding.shape": (
        {"route": "ifa.float"},
    ),
    "paged.block_size_positive": (
        {"paged": True, "rope": False, "cache": "BnNBsD", "layout": "BNSD",
         "route": "ifa.antiquant.1"},
    ),
    "paged.block_table_batch": (
        {"pse": True, "branch": "decode", "route": "ifa.antiquant.1"},
        {"pse": True, "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"pse": True, "branch": "decode", "route": "ifa.antiquant.4/4"},
        {"rope_d": "512", "route": "ifa.mla_quant"},
    ),
    "paged.block_table_rank": (
        {"paged": True, "rope": False, "branch": "decode", "route": "ifa.antiquant.0"},
        {"paged": True, "rope": False, "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"paged": True, "rope": False, "branch": "decode", "route": "ifa.antiquant.4/4"},
        {"paged": True, "rope": False, "branch": "decode", "route": "ifa.antiquant.5/5"},
    ),
    "paged.cache_block_size": (
        {"paged": True, "mask": "none", "pse": False, "route": "ifa.antiquant.0"},
        {"paged": True, "route": "ifa.antiquant.2/2"},
        {"paged": True, "route": "ifa.antiquant.4/4"},
        {"paged": True, "route": "ifa.antiquant.5/5"},
    ),
    "paged.cache_heads": (
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.0"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.1"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.5/5"},
    ),
    "paged.cache_rank": (
        {"paged": True, "rope": False, "route": "ifa.antiquant.0"},
        {"paged": True, "rope": False, "route": "ifa.antiquant.1"},
        {"paged": True, "rope": False, "route": "ifa.antiquant.2/2"},
        {"paged": True, "rope": False, "route": "ifa.antiquant.4/4"},
        {"paged": True, "rope": False, "route": "ifa.antiquant.5/5"},
    ),
    "paged.kv_lengths_required": (
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.mla_quant"},
    ),
    "paged.kv_shape_match": (
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.0"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.1"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.2/2"},
        {"paged": True, "layout": "BNSD", "branch": "decode", "route": "ifa.antiquant.5/5"},
    ),
    "paged.pse_last_dim": (
        {"route": "ifa.antiquant.5/5"},
    ),
    "precise.range": (
        {"cache": "none", "route": "ifa.antiquant.0"},
        {"cache": "none", "route": "ifa.antiquant.1"},
        {"antiquant": "separate:0/0", "cache": "none", "route": "ifa.antiquant.0/0"},
        {"cache": "none", "route": "ifa.antiquant.1/1"},
        {"cache": "none", "route": "ifa.antiquant.2/2"},
        {"cache": "none", "route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"cache": "none", "route": "ifa.antiquant.0/1"},
        {"route": "ifa.post_quant"},
        {"route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "prefix.batch_one": (
        {"route": "empty"},
    ),
    "prefix.both_or_neither": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
        {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD",
         "route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "prefix.heads_dim": (
        {"route": "empty"},
    ),
    "prefix.len_range": (
        {"route": "empty"},
    ),
    "prefix.len_shape": (
        {"route": "empty"},
    ),
    "prefix.rank_dtype": (
        {"route": "empty"},
    ),
    "pse.shape": (
        {"cache": "BnNBsD", "antiquant": "none", "rope": False, "route": "ifa.float"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.0"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.1"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.0/0"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.1/1"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.3/3"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.4/4"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.5/5"},
        {"cache": "BnNBsD", "rope": False, "route": "ifa.antiquant.0/1"},
    ),
    "quant.dequant_scale_query": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
        {"prefix": True, "branch": "prefill", "route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "quant.float_query_forbids_dequant": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
        {"prefix": True, "branch": "prefill", "route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "quant.offset2_needs_scale2": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
    ),
    "quant.scale2_dtype": (
        {"post_quant": True, "q_dtype": "float16", "route": "pfa.post_quant"},
    ),
    "rope.both_or_neither": (
        {"route": "ifa.antiquant.0"},
        {"route": "ifa.antiquant.1"},
        {"route": "ifa.antiquant.2/2"},
        {"route": "ifa.antiquant.3/3"},
        {"route": "ifa.antiquant.4/4"},
        {"route": "ifa.antiquant.5/5"},
        {"route": "ifa.antiquant.0/1"},
        {"route": "ifa.post_quant"},
        {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD",
         "route": "pfa.post_quant"},
        {"route": "empty"},
    ),
    "rope.dim_64": (
        {"route": "ifa.mla_quant"},
    ),
    "rope.query_d": (
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.float"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.0"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.0/0"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.1/1"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.2/2"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.3/3"},
        {"sparse_mode": 0, "mask": "bool", "layout": "BNSD", "route": "ifa.antiquant.0/1"},
        {"route": "pfa.post_quant"},
    ),
    "rope.shapes": (
        {"route": "ifa.mla_quant"},
    ),
}


#: Bound rules' (rule, route) cells not spanned yet: the change breaks the rule alone from
#: some legal bases of the route (`width.route_pool`), but no base the generator tries
#: (the rule's own filters with the route pinned or loosened, the route alone) breaks it
#: alone in every draw; the span test names any cell missing that is not listed here.
UNSPANNED: dict[str, tuple[str, ...]] = {
    "dims.d_max": ("ifa.post_quant", "pfa.post_quant"),
    "layout.kv_batch": ("empty", "ifa.post_quant", "pfa.post_quant"),
    "layout.kv_heads": ("ifa.post_quant", "pfa.post_quant"),
    "layout.kv_rank": ("empty", "ifa.post_quant", "pfa.post_quant"),
    "layout.kv_seq_match": ("ifa.post_quant", "pfa.post_quant"),
    "layout.qk_head_dim": ("empty", "ifa.post_quant", "pfa.post_quant"),
    "layout.query_heads": ("ifa.post_quant", "pfa.post_quant"),
    "layout.query_rank": ("empty", "ifa.post_quant", "pfa.post_quant"),
    "layout.value_head_dim": ("empty", "ifa.post_quant", "pfa.post_quant"),
    "lengths.kv_max": ("ifa.antiquant.0/1", "ifa.antiquant.1/1", "v3.gqa"),
    "lengths.q_max": ("pfa.float", "v3.gqa"),
    "mask.sparse_mode_range": ("empty",),
    "paged.block_table_batch": ("pfa.post_quant",),
    "paged.cache_heads": ("ifa.mla_quant",),
    "paged.cache_rank": ("pfa.post_quant",),
    "paged.kv_shape_match": ("ifa.mla_quant", "pfa.post_quant"),
    "prefix.same_shape": ("empty",),
}

def spanning(rule: str, breaker: Breaker) -> Breaker:
    """`breaker` with its rule's route bases."""
    return replace(breaker, routes=ROUTE_BASES.get(rule, ()))


def lands_alone(rule: str, breaker: Breaker, n: int, seed: int = 0) -> bool:
    """Whether `breaker`'s change, in `n` seeded draws from its bases, breaks `rule` alone
    at least once and in every draw it does not decline, raising nowhere."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable

    from fia_fuzz.rules.validate import validate
    from fia_fuzz.strategies.edits import apply
    from fia_fuzz.strategies.seeded import fixed_constants

    found: list[bool] = []
    bases = breaker.cases()

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def probe(data: st.DataObject) -> None:
        base = data.draw(bases)
        broken = apply(base, breaker.change(data.draw, base))
        found.append([v.rule for v in validate(**broken.specs())] == [rule])

    with fixed_constants():
        try:
            probe()
        except Unsatisfiable:
            return False
    return bool(found) and all(found)


def route_bases(rule: str, breaker: Breaker, pool: dict[str, list[Any]], n: int = 24,
                seed: int = 0) -> list[dict[str, Any]]:
    """The bases to add for `rule`: per route of `pool` where the change lands that
    `breaker`'s bases (`n` draws spread over them) do not reach, its first filter with the
    route pinned (or loosened: `_candidates`), else the route alone, the first that draws
    and lands alone in every one of `tries` draws, raising nowhere (`lands_alone`: the
    meta-tests hold a written breaker to that; a written change assumes the shapes its own
    filters draw, so the route alone must pass more draws)."""
    from fia_fuzz.strategies.illegal.width import by_base, covered, width

    reached = width(by_base(rule, breaker, n, seed)).routes
    on = [r for r, how in covered(rule, breaker, pool, seed=seed).items()
          if how == "lands" and r not in reached]
    out = []
    for route in on:
        for f in _candidates(breaker, route):
            tries = 12 if breaker.mutation is None and set(f) == {"route"} else 6
            try:
                if lands_alone(rule, replace(breaker, base=f, alt=(), routes=()), tries, seed):
                    out.append(f)
                    break
            except InvalidArgument:     # the filters exclude each other
                continue
            except Exception:   # noqa: BLE001  (a change that cannot take this base's shapes)
                continue
    return out


def _candidates(breaker: Breaker, route: str) -> list[dict[str, Any]]:
    """Base filters for `route`, in order: each of the breaker's own with the route pinned,
    then each without the pins the route's aim sets otherwise (an antiquant mode, a
    branch), then the route alone."""
    from fia_fuzz.strategies.routes import AIMS

    aim = AIMS.get(route, {})
    own = [b for b in (breaker.base, *breaker.alt) if b.get("route", route) == route]
    pinned = [{**b, "route": route} for b in own]
    loose = [{**{k: v for k, v in b.items() if aim.get(k, v) == v}, "route": route}
             for b in own]
    return list({repr(f): f for f in [*pinned, *loose, {"route": route}]}.values())
