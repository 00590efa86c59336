"""Breakers of the atlas-a2 profile's route-dependent refusals, each from a base on the
route that refuses (rules/profiles/a2_routes: a `route` filter draws the base there).

The profile's worked examples (`atlas_a2_examples.NEGATIVE`) break each device rule once
from a fixed call; these draw the base on the route whose own host check refuses, so a
negative campaign meets the refusal on every shape that route takes:
- `a2.block_size`: the split-fuse route takes paged blocks of at most 512 (IsUsingFAI);
  its blocks grow to 1024, which the V3 route would take;
- `a2.precise_decode`: the older decode route (int8-KV antiquant decode) takes
  inner_precise 0/1 only; the decode call asks for 2 or 3, which V3 decode takes;
- `a2.tnd_sparse`: the split-fuse route takes sparse 0 without a mask, 3 or 4 with one;
  a masked packed call asks for sparse 1 or 2.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.edits import Change, grow_blocks
from fia_fuzz.strategies.illegal.breaker import Breaker


def _split_fuse_blocks(draw: st.DrawFn, case: Case) -> Change:
    """Blocks of 1024 slots on the split-fuse route (its limit 512, V3's 1024)."""
    return grow_blocks(case, 1024)


def _old_decode_precise(draw: st.DrawFn, case: Case) -> Change:
    """inner_precise 2 or 3 on an int8-KV antiquant decode (its host check: 0 or 1)."""
    return {"inner_precise": draw(st.sampled_from([2, 3]))}


def _packed_sparse(draw: st.DrawFn, case: Case) -> Change:
    """sparse_mode 1 or 2 on a masked packed call (the route takes 3 or 4 with a mask)."""
    return {"sparse_mode": draw(st.sampled_from([1, 2]))}


#: device rule id -> its breaker from a base on the refusing route
ROUTE_BREAKERS: dict[str, Breaker] = {
    "a2.block_size": Breaker(_split_fuse_blocks, {"route": "fai", "paged": True}),
    "a2.precise_decode": Breaker(
        _old_decode_precise, {"route": "ifa.antiquant.0/0"},
        alt=tuple({"route": f"ifa.antiquant.{m}"} for m in ("0", "1", "1/1", "0/1"))),
    "a2.tnd_sparse": Breaker(_packed_sparse, {"route": "fai", "mask": "bool"},
                             alt=({"route": "fai", "mask": "int8"},
                                  {"route": "fai", "mask": "uint8"})),
}
