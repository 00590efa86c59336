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
  a masked packed call asks for sparse 1 or 2;
- `a2.sink_dtype`: a bfloat16 sink on every route that draws one (the split-fuse route's
  packed calls, V3 GQA, and the legacy decode and prompt kernels) turns float16 or float32
  (on the split-fuse route: not the query's dtype), or a split-fuse MHA call with a sink
  asks for inner_precise 1;
- `a2.mla_q_seq`, `a2.mla_num_heads`, `a2.mla_sparse`: MLA D 512 on the V3 MLA route
  (non-quantised) and the IFA full-quant MLA route: query S one past its route's top (128,
  16) and at production lengths past it; head counts next to and between the MLA table's
  powers of two; sparse modes and masks off the route's pairs.
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles.atlas_a2 import split_fuse_route
from fia_fuzz.rules.rulebook.mla import MLA_HEADS
from fia_fuzz.strategies.edits import Change, grow_blocks, sided, with_dtype
from fia_fuzz.strategies.illegal.breaker import Breaker
from fia_fuzz.strategies.illegal.mla import num_heads_to, off_heads, q_seq_to

A2 = "atlas-a2"
#: The routes an atlas-a2 draw carries a learnable_sink on (strategies/device_a2.py adds
#: the packed split-fuse and V3 GQA ones to the documented decode and prompt kernels').
SINK_ROUTES = ("fai", "v3.gqa", "ifa.float", "pfa.float", "ifa.post_quant", "pfa.post_quant")
#: MLA D 512's routes and the longest query S each takes (a2.mla_q_seq).
MLA_ROUTES = {"v3.mla": 128, "ifa.mla_quant": 16}


def _split_fuse_blocks(draw: st.DrawFn, case: Case) -> Change:
    """Blocks of 1024 slots on the split-fuse route (its limit 512, V3's 1024)."""
    return grow_blocks(case, 1024)


def _old_decode_precise(draw: st.DrawFn, case: Case) -> Change:
    """inner_precise 2 or 3 on an int8-KV antiquant decode (its host check: 0 or 1)."""
    return {"inner_precise": draw(st.sampled_from([2, 3]))}


def _packed_sparse(draw: st.DrawFn, case: Case) -> Change:
    """sparse_mode 1 or 2 on a masked packed call (the route takes 3 or 4 with a mask)."""
    return {"sparse_mode": draw(st.sampled_from([1, 2]))}


def _sink_dtype(draw: st.DrawFn, case: Case) -> Change:
    """The sink in float16 or float32 (split-fuse: a dtype not the query's), or on a
    split-fuse MHA call inner_precise 1 (a GQA call would leave the route instead)."""
    v = case.view()
    sink = case.params["learnable_sink"]
    options = [{"learnable_sink": with_dtype(sink, d)} for d in ("float16", "float32")
               if d != sink.dtype]
    if split_fuse_route(v) and v.G == 1:
        options.append({"inner_precise": 1})
    return draw(st.sampled_from(options))


def _mla_q_seq(draw: st.DrawFn, case: Case) -> Change:
    """Query S one past the route's top (129 non-quantised, 17 full quant) or at the
    production tile lengths past it (256, 512, 1024, 2048)."""
    top = MLA_ROUTES[case.features()["route"]]
    if case.view().packed:
        reject()
    s = draw(st.sampled_from([top + 1, *(t for t in (256, 512, 1024, 2048) if t > top)]))
    return sided(q_seq_to(case, s), "above")


def _mla_heads(draw: st.DrawFn, case: Case) -> Change:
    """num_heads off the MLA table, in every layout (TND too): next to its powers of two
    (3, 5, ..., 127, 129), between them, and the production head counts it lacks."""
    return num_heads_to(case, draw(st.sampled_from(off_heads(MLA_HEADS))))


def _mla_sparse(draw: st.DrawFn, case: Case) -> Change:
    """Off the non-quantised MLA pairs (0 without a mask, 3/4 with the 2048 one): the
    (1, 2048, 2048) mask under sparse 0, 1 or 2 (a 2-D one is a2.mask_2d's with rope too;
    3/4 without a mask are mask.optimized_required's). Under 0 and 1 the mask reads as a
    full one, so a paged table past 2048 slots takes mode 2 (paged.mask_last_dim)."""
    v = case.view()
    if v.packed:    # a packed call's sparse pairs are a2.tnd_sparse's as well
        reject()
    m = case.params.get("atten_mask")
    wide = v.paged and max(v.S2, v.max_blocks_per_seq * v.attr_int("block_size")) > 2048
    return {"sparse_mode": draw(st.sampled_from([2] if wide else [0, 1, 2])),
            "atten_mask": TensorSpec((1, 2048, 2048), m.dtype if m is not None else "bool")}


#: device rule id -> its breaker from a base on the refusing route
ROUTE_BREAKERS: dict[str, Breaker] = {
    "a2.block_size": Breaker(_split_fuse_blocks, {"route": "fai", "paged": True}),
    "a2.precise_decode": Breaker(
        _old_decode_precise, {"route": "ifa.antiquant.0/0"},
        alt=tuple({"route": f"ifa.antiquant.{m}"} for m in ("0", "1", "1/1", "0/1"))),
    "a2.tnd_sparse": Breaker(_packed_sparse, {"route": "fai", "mask": "bool"},
                             alt=({"route": "fai", "mask": "int8"},
                                  {"route": "fai", "mask": "uint8"})),
    "a2.sink_dtype": Breaker(_sink_dtype, {"route": SINK_ROUTES[0], "sink": True},
                             alt=tuple({"route": r, "sink": True} for r in SINK_ROUTES[1:]),
                             rules=A2),
    "a2.mla_q_seq": Breaker(_mla_q_seq, {"route": "v3.mla", "layout": "BSND"},
                            alt=({"route": "v3.mla", "layout": "BNSD"},
                                 {"route": "v3.mla", "layout": "BSH"},
                                 # a full-quant prefill keeps its mask rules past 16
                                 # (mla.sparse) and a BSH/BSND output its S (nbsd_seq)
                                 {"route": "ifa.mla_quant", "q_seq": "2-16", "layout": "BSND"},
                                 {"route": "ifa.mla_quant", "q_seq": "2-16", "layout": "BSH"}),
                            rules=A2),
    "a2.mla_num_heads": Breaker(_mla_heads, {"route": "v3.mla"},
                                alt=({"route": "v3.mla", "layout": "TND"},
                                     {"route": "ifa.mla_quant"}), rules=A2),
    "a2.mla_sparse": Breaker(_mla_sparse, {"route": "v3.mla", "branch": "prefill"},
                             alt=({"route": "v3.mla", "branch": "decode"},), rules=A2),
}
