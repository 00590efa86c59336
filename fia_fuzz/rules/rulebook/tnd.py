"""Packed layouts TND / TND_NTD / NTD_TND
[V4 TND、TND_NTD、NTD_TND场景下query，key，value输入的综合限制, SEM §2]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, bf
from fia_fuzz.rules.rulebook.lengths import ordered

T_MAX = 1048576
#: Packed (Q_D = K_D, V_D) pairs with query D != 512, by layout; with rope 128 only
#: [V4 TND 综合限制 d不等于512].
HEAD_DIMS = {"TND": ((128, 128), (192, 128), (192, 192)), "NTD_TND": ((128, 128), (192, 128))}
ROPE_HEAD_DIMS = ((128, 128),)


@rule("tnd.layout_by_d", "query D 512 allows TND/TND_NTD; other D allow TND/NTD_TND (plain N"
                         "TD never)",
      src("V4", "TND 综合限制 (d等于512: 支持TND、TND_NTD; d不等于512: 支持TND、NTD_TND)"))
def tnd_layout_by_d(c: CallView) -> str | None:
    if not c.packed:
        return None
    lay = c.attrs["input_layout"]
    ok = ("TND", "TND_NTD") if c.D == 512 else ("TND", "NTD_TND")
    if lay not in ok:
        return f"input_layout={lay!r} with query D={c.D}, expected one of {list(ok)}"
    return None


@rule("tnd.t_max", "packed layouts allow T <= 1048576",
      src("V4", "TND 综合限制 (T<=1048576)"))
def tnd_t_max(c: CallView) -> str | None:
    if c.packed and c.q_dims["T"] > T_MAX:
        return f"query T={c.q_dims['T']} > {T_MAX}"
    return None


@rule("tnd.sparse", "packed layouts: sparse_mode 0 without a mask, or 3 with the mask",
      src("V4", "TND 综合限制 (sparseMode=0不传mask或者sparseMode=3且传入mask)"))
def tnd_sparse(c: CallView) -> str | None:
    if not c.packed:
        return None
    mode, has = c.attr_int("sparse_mode"), c.has("atten_mask")
    if not ((mode == 0 and not has) or (mode == 3 and has)):
        return f"layout {c.attrs['input_layout']!r} with sparse_mode={mode}, atten_mask " \
               f"{'given' if has else 'absent'}"
    return None


def _not512(c: CallView) -> bool:
    return c.packed and c.D != 512


@rule("tnd.dtype_bf16", "packed layouts with query D != 512 need bfloat16 query/key/value",
      src("V4", "TND 综合限制 d不等于512 (query，key，value 数据类型仅支持BFLOAT16)"))
def tnd_dtype_bf16(c: CallView) -> str | None:
    if not _not512(c):
        return None
    q, k = c.need("query"), c.need("key")
    if q.dtype != "bfloat16" or k.dtype != "bfloat16":
        return f"layout {c.attrs['input_layout']!r}, D={c.D}: query {q.dtype}, key {k.dtype}"
    return None


@rule("tnd.head_dims", "packed head dims: TND 128/128/128 or 192/192/(128|192); NTD_TND "
      "Q_D=K_D in 128/192 with V_D 128; rope 128; GQA/paged not V_D 192",
      src("V4", "TND 综合限制 d不等于512 (MLA: Q_D、K_D、V_D等于128; GQA/MHA/MQA: ...)"))
def tnd_head_dims(c: CallView) -> str | None:
    if not _not512(c):
        return None
    qd, kd, vd = c.D, c.Dk, c.Dv
    lay = c.attrs["input_layout"]
    table = ROPE_HEAD_DIMS if c.rope else HEAD_DIMS.get(lay, HEAD_DIMS["TND"])
    ok = qd == kd and (qd, vd) in table
    if ok and vd == 192 and (c.G > 1 or c.paged):
        ok = False
    if not ok:
        return f"layout {lay!r}{' with rope' if c.rope else ''}: Q_D={qd}, K_D={kd}, V_D={vd}, " \
               f"G={c.G}, paged={c.paged}"
    return None


@rule("tnd.causal_lengths", "packed, sparse_mode 3: every batch's actual q length <= actual k"
                            "v length (V4's < read as <=, docs/rules.md disagreements)",
      src("V4", "TND 综合限制 d不等于512 (当sparseMode=3时，要求每个batch单独的actualSeqLe"
                "ngths < actualSeqLe"
                "ngthsKv)"))
def tnd_causal_lengths(c: CallView) -> str | None:
    if not _not512(c) or c.attr_int("sparse_mode") != 3:
        return None
    pairs = enumerate(zip(ordered(c.act_q, "actual_seq_lengths"),
                          ordered(c.act_kv, "actual_seq_lengths_kv"), strict=False))
    bad = [(b, q, kv) for b, (q, kv) in pairs if q > kv]
    return f"(batch, act_q, act_kv) {bad[:4]} violate act_q <= act_kv" if bad else None


@rule("tnd.block_size", "packed layouts with paged KV (D != 512): block_size 128, 512 or 1024",
      src("V4", "TND 综合限制 d不等于512 PagedAttention blockSize (仅支持128,512或1024)"))
def tnd_block_size(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if _not512(c) and c.paged and bs not in (128, 512, 1024):
        return f"layout {c.attrs['input_layout']!r} with block_size={bs}"
    return None


@rule("tnd.rope_not_paged", "packed MLA with query D 128 does not take paged attention",
      src("V4", "MLA场景 query d=128 (不支持 ... PagedAttention)"))
def tnd_rope_not_paged(c: CallView) -> str | None:
    return "packed MLA (D=128) with block_table" if _not512(c) and c.rope and c.paged else None


@rule("tnd.d512_needs_rope", "packed layouts with query D 512 are MLA: query_rope/key_rope needed",
      src("V4", "TND 综合限制 d等于512 (MLA（要求queryRope和keyRope不等于空）)"))
def tnd_d512_needs_rope(c: CallView) -> str | None:
    if c.packed and c.D == 512 and not c.rope:
        return f"layout {c.attrs['input_layout']!r} with query D=512 and no query_rope/key_rope"
    return None


@rule("tnd.no_extras", "packed layouts: no left padding, tensor list, pse, prefix, antiquant, "
      "full quant or post-quant",
      src("V4", "TND 综合限制 (不支持左padding、tensorlist、pse、prefix、伪量化、全量化、后量化)"))
def tnd_no_extras(c: CallView) -> str | None:
    if not c.packed:
        return None
    bad = [n for n, on in (
        ("left padding", c.left_padding), ("tensor list", c.is_kv_list),
        ("pse_shift", c.has("pse_shift")), ("shared prefix", c.has("key_shared_prefix")),
        ("antiquant", c.separate_antiquant or c.combined_antiquant),
        ("int8 query", c.need("query").dtype == "int8"),
        ("quant_scale2", c.has("quant_scale2"))) if on]
    return f"layout {c.attrs['input_layout']!r} with {bad}" if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("tnd.layout_by_d", "tnd", {"input_layout": "TND_NTD"}),
    ("tnd.layout_by_d", "tnd", {"input_layout": "NTD", "query": bf(8, 10, 128),
                                "key": bf(2, 20, 128), "value": bf(2, 20, 128)}),
    ("tnd.t_max", "tnd", {"query": bf(1048577, 8, 128), "actual_seq_lengths": [4, 1048577],
                          "key": bf(1048577, 2, 128), "value": bf(1048577, 2, 128),
                          "actual_seq_lengths_kv": [8, 1048577]}),
    ("tnd.sparse", "tnd", {"sparse_mode": 2, "atten_mask": B(2048, 2048)}),
    ("tnd.dtype_bf16", "tnd", {"query": T(10, 8, 128), "key": T(20, 2, 128),
                               "value": T(20, 2, 128)}),
    ("tnd.head_dims", "tnd", {"query": bf(10, 8, 64), "key": bf(20, 2, 64),
                              "value": bf(20, 2, 64)}),
    ("tnd.head_dims", "tnd", {"query": bf(10, 8, 192), "key": bf(20, 2, 192),
                              "value": bf(20, 2, 192)}),
    ("tnd.causal_lengths", "tnd", {"sparse_mode": 3, "atten_mask": B(2048, 2048),
                                   "actual_seq_lengths_kv": [3, 20]}),
    ("tnd.causal_lengths", "tnd_paged_causal", {"actual_seq_lengths_kv": [4, 5]}),
    ("tnd.block_size", "tnd",
     {"key": bf(4, 256, 256), "value": bf(4, 256, 256), "block_table": [[0, 1], [2, 3]],
      "block_size": 256, "actual_seq_lengths_kv": [8, 12]}),
    ("tnd.rope_not_paged", "tnd_rope",
     {"input_layout": "TND", "query": bf(6, 4, 128), "query_rope": bf(6, 4, 64),
      "key": bf(4, 128, 512), "value": bf(4, 128, 512), "key_rope": bf(4, 128, 256),
      "block_table": [[0], [1]], "block_size": 128, "actual_seq_lengths_kv": [5, 7]}),
    ("tnd.d512_needs_rope", "tnd_rope",
     {"input_layout": "TND", "query": bf(6, 32, 512), "query_rope": None,
      "key": bf(4, 128, 512), "value": bf(4, 128, 512), "key_rope": None,
      "num_heads": 32, "num_key_value_heads": 1, "block_table": [[0], [1]], "block_size": 128,
      "actual_seq_lengths_kv": [5, 7]}),
    ("tnd.no_extras", "tnd", {"pse_shift": bf(2, 8, 6, 12)}),
]
