"""Breakers of the `dtype.*` rules: input dtypes and their combinations (rulebook/dtype.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import VALUE_DTYPE_KEY, Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.edits import (
    FILLS,
    VALUE_ARGS_INT,
    Change,
    layout,
    query_seq,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import PLAIN_BNSD, Breaker, over_families, searched

#: Float KV behind a float query beyond plain BNSD: paged BSH, MLA float (D 512, rope).
FLOAT_KV = ({"layout": "BSH", "paged": True, "rope": False, "antiquant": "none"},
            {"rope_d": "512", "full_quant": False})
#: Separate per-token antiquant decode: int8 KV behind a float query.
AQ_DECODE = {"antiquant": "separate:1/1", "kv_dtype": "int8", "branch": "decode", "pse": False}


def _dtype_query(draw: st.DrawFn, case: Case) -> Change:
    """query in a dtype the op does not take, over int KV (antiquant) or float KV (plain: the
    float-KV-matches-query rule judges float queries only); an integer or bool query gets
    integer data (a float fill does not materialise as one)."""
    dt = draw(st.sampled_from(["float32", "uint8", "int64", "bool"]))
    out: Change = {"query": TensorSpec(case.params["query"].shape, dt)}
    if dt in INT_FILLS:
        out[FILLS] = {"query": INT_FILLS[dt]}
    return out


def _kv_match(draw: st.DrawFn, case: Case) -> Change:
    """value in the other float dtype (int8 value: bfloat16), key as it was."""
    v = case.params["value"]
    other = "bfloat16" if v.dtype == "float16" else "float16"
    return {"value": TensorSpec(v.shape, other)}


def _kv_float_match(draw: st.DrawFn, case: Case) -> Change:
    k, v = case.params["key"], case.params["value"]
    other = "bfloat16" if k.dtype == "float16" else "float16"
    return {"key": TensorSpec(k.shape, other), "value": TensorSpec(v.shape, other)}


#: Integer data for a tensor a breaker gives an integer or bool dtype (float fills do not
#: materialise as one).
INT_FILLS = {"uint8": {"dist": "int", "low": 0, "high": 255},
             "int64": {"dist": "int", "low": -128, "high": 127},
             "bool": {"dist": "int", "low": 0, "high": 1}}


def _dtype_kv(draw: st.DrawFn, case: Case) -> Change:
    """float32, or an integer or bool dtype with integer data."""
    k, v = case.params["key"], case.params["value"]
    dt = draw(st.sampled_from(["float32", "uint8", "bool", "int64"]))
    out: Change = {"key": TensorSpec(k.shape, dt), "value": TensorSpec(v.shape, dt)}
    if dt in INT_FILLS:
        out[FILLS] = {"key": INT_FILLS[dt], "value": INT_FILLS[dt]}
    return out


def _int8_query_kv(draw: st.DrawFn, case: Case) -> Change:
    dt = draw(st.sampled_from(["float16", "bfloat16"]))
    return {n: with_dtype(case.params[n], dt) for n in ("key", "value")}


def _all_int8_decode(draw: st.DrawFn, case: Case) -> Change:
    """The full-quant prefill with Q_S = 1.

    A prefill-only inner_precise (2/3) or output layout (BNSD_BSND) is set back to
    its decode form, so decode's own rules on those stay quiet.
    """
    out = query_seq(case, 1)
    if case.params.get("inner_precise") in (2, 3):
        out["inner_precise"] = case.params["inner_precise"] - 2
    if layout(case) == "BNSD_BSND":
        out["input_layout"] = "BNSD"
    return out


def _block_table_dtype(draw: st.DrawFn, case: Case) -> Change:
    """block_table passed as an int64 array (the op takes int32) [Case.value_dtype]."""
    return {FILLS: {"block_table": {VALUE_DTYPE_KEY: "int64"}}}


def _int64_values(draw: st.DrawFn, case: Case) -> Change:
    """One length or padding argument passed as an int32 array (the op takes int64)."""
    names = [n for n in VALUE_ARGS_INT if case.params.get(n) is not None]
    if not names:
        reject()
    name = draw(st.sampled_from(names))
    return {FILLS: {name: {VALUE_DTYPE_KEY: "int32"}}}


BREAKERS: dict[str, Breaker] = {
    # not over 5-D NZ caches, whose own nz.dtypes rule would fire too
    "dtype.query": Breaker(_dtype_query, {**AQ_DECODE, "cache": "none"},
                           alt=({**AQ_DECODE, "cache": "BnBsH"}, {**AQ_DECODE, "cache": "BnNBsD"},
                                PLAIN_BNSD, {"plain": True, "layout": "BSH"})),
    "dtype.kv_match": over_families(_kv_match, "packed", "dense", "packed_mla", "gqa_nz",
                                    "antiquant", "mla", "full_quant"),
    # not MLA: its key_rope follows the query dtype (rope.dtype)
    "dtype.kv_float_match_query": Breaker(_kv_float_match, PLAIN_BNSD, alt=FLOAT_KV[:1]),
    # not paged: a paged cache's own dtype rule (paged.kv_dtype) would fire too
    "dtype.kv": Breaker(_dtype_kv, PLAIN_BNSD, alt=({"plain": True, "layout": "BSH"},)),
    # rope: False keeps to the dense int8 family (MLA full quant has rules of its own)
    "dtype.int8_query_kv": Breaker(_int8_query_kv, {"full_quant": True, "rope": False}),
    "dtype.all_int8_decode": Breaker(_all_int8_decode, {"full_quant": True, "mask": "none",
                                                        "pse": False, "actual_q": "absent",
                                                        "rope": False}),
    # a paged base of each family that pages (packed MLA does not)
    "dtype.block_table": Breaker(_block_table_dtype, {"cache": "NZ", "rope": False},
                                 alt=({"rope_d": "512"},
                                      {"antiquant": "separate:0/0", "paged": True},
                                      {"layout": "TND", "rope": False, "paged": True},
                                      {"antiquant": "none", "full_quant": False, "rope": False,
                                       "layout": "BSND", "paged": True})),
    # every family: paged and packed calls carry lengths, dense and quant ones pin them
    "dtype.int64_values": Breaker(_int64_values, {"prefix_len": "given"},
                                  alt=({"rope_d": "512"}, {"layout": "TND", "rope": False},
                                       {"full_quant": True, "rope": False,
                                        "actual_kv": "per_batch"},
                                       {"actual_kv": "per_batch"}, {"rope_d": "128"},
                                       {"q_padding": True}, {"cache": "NZ", "rope": False})),
    "dtype.mask": searched(
        {"kv_padding": True, "branch": "decode"}, "dtype:atten_mask",
        alt=({"rope_d": "128", "mask": "bool"}, {"antiquant": "separate:1/1", "mask": "bool"},
             {"layout": "TND", "rope": False, "mask": "bool"},
             {"cache": "NZ", "rope": False, "mask": "bool"},
             {"full_quant": True, "rope": False, "mask": "bool"},
             {"prefix": True, "branch": "decode"}, {"q_seq": ">2048"}, {"layout": "BSH_NBSD"},
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"})),
    "dtype.pse": searched(
        {"cache": "BnNBsD", "antiquant": "none", "rope": False}, "dtype:pse_shift",
        alt=({"prefix": True, "branch": "decode"},
             {"sparse_mode": 2})),
}
