"""Breakers of the `nz.*` rules: GQA int8 antiquant over 5-D NZ caches (rulebook/nz.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import SEQ_AXIS, nz_c0
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.nz import NZ_D, NZ_HEADS, per_channel_shape
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    block_size,
    grow_blocks,
    head_dim,
    layout,
    modes,
    sided,
    split_blocks,
    with_axis,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, Breaker

#: Legal GQA int8-antiquant NZ calls: the gqa_nz family of cases().
GQA_NZ = FAMILY_BASE["gqa_nz"]
#: Its decodes, where post-quant and combined params are in range: most of its draws prefill.
NZ_DECODE = {**GQA_NZ, "q_seq": "1"}


def _nz_dtypes(draw: st.DrawFn, case: Case) -> Change:
    """Decode: a float16 query (prefill's own antiquant rule would fire too)."""
    return {"query": with_dtype(case.params["query"], "float16")}


def _nz_dims(draw: st.DrawFn, case: Case) -> Change:
    """D = 256: query, both caches and the per-channel scales together."""
    d = draw(st.sampled_from([64, 256]))
    lay = layout(case)
    n, kv_n = case.params["num_heads"], case.params["num_key_value_heads"]
    out: Change = {"query": head_dim(case.params["query"], lay, n, d)}
    for name in ("key", "value"):
        out[name] = with_axis(case.params[name], 2, d // nz_c0("int8"))
    if not case.params.get("key_antiquant_mode"):
        for name in ("key_antiquant_scale", "value_antiquant_scale"):
            out[name] = TensorSpec(per_channel_shape(lay, kv_n, d), "bfloat16")
    return out


def _nz_heads(draw: st.DrawFn, case: Case) -> Change:
    """Same KV_N (so caches and scales stay), a query head count outside the table."""
    kv_n = case.params["num_key_value_heads"]
    n = draw(st.sampled_from([kv_n * g for g in (1, 2, 4) if (kv_n * g, kv_n) not in NZ_HEADS]))
    q = case.params["query"]
    lay = layout(case)
    q = with_axis(q, {"BNSD": 1, "BSND": 2}[lay], n) if lay != "BSH" else q
    return {"query": head_dim(q, lay, n, NZ_D), "num_heads": n}


def _nz_layout(draw: st.DrawFn, case: Case) -> Change:
    """The same BNSD prefill query declared BNSD_BSND."""
    return {"input_layout": "BNSD_BSND"}


def _nz_precise(draw: st.DrawFn, case: Case) -> Change:
    """0, and in prefill also 2 or 3 (decode takes only 0/1: precise.decode_01)."""
    return {"inner_precise": draw(st.sampled_from([0] if case.view().decode else [0, 2, 3]))}


def _nz_mask(draw: st.DrawFn, case: Case) -> Change:
    s1 = case.params["query"].shape[SEQ_AXIS[layout(case)]]
    if s1 == 1:
        b, s2 = case.params["query"].shape[0], len(case.params["block_table"][0]) * block_size(case)
        return {"atten_mask": TensorSpec(draw(st.sampled_from([(b, 1, s2), (b, 1, 1, s2)])),
                                         "bool")}
    return {"sparse_mode": draw(st.sampled_from([2, 4]))}


def _nz_antiquant(draw: st.DrawFn, case: Case) -> Change:
    """Asymmetric (offsets next to the scales) or, in decode, the scales combined into one
    antiquant_scale (2, ...) of the same form, with or without its offset (prefill takes no
    combined params: antiquant.combined_prefill_query)."""
    k = case.params["key_antiquant_scale"]
    if not case.view().decode or draw(st.booleans()):
        return {"key_antiquant_offset": k,
                "value_antiquant_offset": case.params["value_antiquant_scale"]}
    per_token = modes(case) == (1, 1)
    scale = TensorSpec((2, *k.shape), "float32" if per_token else k.dtype)
    out: Change = {n: DELETE for n in ("key_antiquant_scale", "value_antiquant_scale",
                                       "key_antiquant_mode", "value_antiquant_mode")}
    out["antiquant_scale"] = scale
    if per_token:
        out["antiquant_mode"] = 1
    if draw(st.booleans()):
        out["antiquant_offset"] = scale
    return out


def _nz_scale_shape(draw: st.DrawFn, case: Case) -> Change:
    """Per-token (B, >= S2): a batch more, or a token fewer than S2; per-channel: its values
    in another rank, half of them, or twice the last axis."""
    s = case.params["key_antiquant_scale"]
    if case.params.get("key_antiquant_mode"):
        s2 = len(case.params["block_table"][0]) * block_size(case)
        bad = TensorSpec(draw(st.sampled_from([(s.shape[0] + 1, s.shape[1]),
                                               (s.shape[0], s2 - 1)])), s.dtype)
    else:
        bad = TensorSpec(draw(st.sampled_from([(s.numel, 1), (s.numel // 2,),
                                               (*s.shape[:-1], s.shape[-1] * 2)])), s.dtype)
    return {"key_antiquant_scale": bad, "value_antiquant_scale": bad}


def _nz_block_size(draw: st.DrawFn, case: Case) -> Change:
    """Blocks split (512 into 256; in decode, where int8 KV asks only 32 alignment, into 64
    or 32) or grown from 128 to 256 or 384 (prefill asks multiples of 128)."""
    bs = block_size(case)
    small = [64, 32] if case.view().decode else []
    new = draw(st.sampled_from([*small, *([256] if bs == 512 else [256, 384])]))
    if new < bs:
        return sided(split_blocks(case, bs // new), "below")
    out = grow_blocks(case, new)
    if case.params.get("key_antiquant_mode"):    # per-token scales span the grown S2
        s = case.params["key_antiquant_scale"]
        s = with_axis(s, 1, len(case.params["block_table"][0]) * new)
        out.update(key_antiquant_scale=s, value_antiquant_scale=s)
    return sided(out, "above")


def _nz_extras(draw: st.DrawFn, case: Case) -> Change:
    """A pse (batch B or broadcast 1), and in decode post-quant, or both. Left padding and a
    shared prefix are the rule's too, but a 5-D cache is paged and paging excludes them
    (padding.not_paged, prefix.not_paged)."""
    q = case.params["query"]
    s1 = q.shape[SEQ_AXIS[layout(case)]]
    # int8 output breaks the prefill antiquant dtype rule too: post-quant in decode only
    extras = draw(st.sampled_from(["pse", "quant", "both"] if s1 == 1 else ["pse"]))
    out: Change = {}
    if extras != "pse":
        out["quant_scale2"] = TensorSpec((1,), "float32")
    if extras != "quant":
        b = draw(st.sampled_from([q.shape[0], 1]))
        width = len(case.params["block_table"][0])
        out["pse_shift"] = TensorSpec((b, case.params["num_heads"], s1,
                                       width * block_size(case)), "bfloat16")
    return out


BREAKERS: dict[str, Breaker] = {
    "nz.dtypes": Breaker(_nz_dtypes, NZ_DECODE),
    "nz.dims": Breaker(_nz_dims, GQA_NZ),
    "nz.heads": Breaker(_nz_heads, GQA_NZ),
    "nz.layout": Breaker(_nz_layout, {**GQA_NZ, "layout": "BNSD", "q_seq": "2-16"}),
    "nz.inner_precise": Breaker(_nz_precise, GQA_NZ),
    "nz.mask": Breaker(_nz_mask, GQA_NZ),
    "nz.antiquant": Breaker(_nz_antiquant, GQA_NZ, alt=(NZ_DECODE,)),
    "nz.scale_shape": Breaker(_nz_scale_shape, GQA_NZ),
    "nz.block_size": Breaker(_nz_block_size, GQA_NZ),
    "nz.no_extras": Breaker(_nz_extras, GQA_NZ, alt=(NZ_DECODE,)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "nz.block_size": ("below", "above"),
    "nz.dims": ("below", "above"),
    "nz.scale_shape": ("below", "above"),
}
