"""`cases(rules="atlas-a2")`: the calls the A2 device accepts beyond the docs.

The documented families still carry most draws (adapted where the device is
stricter: `adapt`); the `device_a2` family draws the regions only the device
admits (device-a2.md): decode with inner_precise 2/3, unpaged MLA with Q_S up
to 128, qk-D != v-D in BSH/BSND/BNSD, BSH_BNSD/BSND_BNSD outputs, packed
layouts on the split-fuse route with a band, a sink or a pse (plain NTD and
D 64 included, act_q > act_kv with causal masks, blocks of 16..512), TND
post-quant, paged blocks up to 1024, and TND MLA with any MLA head count.
`REGIONS` names each with the predicate `fia-fuzz coverage --rules atlas-a2`
counts. Sparse mode 9 is never drawn (no documented arithmetic).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fia_fuzz.op.args import pse, rope, with_role
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import dense_shape, packed_shape
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.mla import MLA_HEADS
from fia_fuzz.strategies import fills, masks
from fia_fuzz.strategies.draft import Draft, spec
from fia_fuzz.strategies.families import _cumulative, _non_decreasing

NAME = "atlas-a2"
FLOAT = ("float16", "bfloat16")
GROUPS = (1, 2, 4, 8)
MLA_ROPE_D = rope.ROPE_D


def _feats(case: Case) -> dict[str, Any]:
    return case.features()


def _act_q_gt_kv(case: Case) -> bool:
    v = case.view()
    return any(q > k for q, k in zip(v.act_q, v.act_kv, strict=False))


#: region -> predicate over a drawn case: what the coverage command counts.
REGIONS: dict[str, Callable[[Case], bool]] = {
    "decode inner_precise 2/3": lambda c: _feats(c)["branch"] == "decode"
    and c.attr("inner_precise") in (2, 3),
    "MLA D512 unpaged": lambda c: _feats(c)["rope_d"] == "512" and not _feats(c)["paged"],
    "MLA D512 Q_S 17..128": lambda c: _feats(c)["rope_d"] == "512" and not c.view().packed
    and 16 < c.view().S1 <= 128,
    "MLA TND heads outside 32/64/128": lambda c: _feats(c)["rope_d"] == "512"
    and c.view().packed and c.view().N not in (32, 64, 128),
    "qk-D != v-D in BSH/BSND/BNSD": lambda c: _feats(c)["dv"] == "unequal"
    and _feats(c)["layout"] in ("BSH", "BSND", "BNSD"),
    "BSH_BNSD / BSND_BNSD output": lambda c: c.attr("input_layout") in ("BSH_BNSD", "BSND_BNSD"),
    "plain NTD": lambda c: c.attr("input_layout") == "NTD",
    "packed D 64": lambda c: c.view().packed and c.view().D == 64,
    "packed band (sparse 4)": lambda c: c.view().packed and c.attr("sparse_mode") == 4,
    "packed sink": lambda c: c.view().packed and _feats(c)["sink"],
    "packed pse": lambda c: c.view().packed and _feats(c)["pse"],
    "packed post-quant (row 15)": lambda c: c.view().packed and _feats(c)["post_quant"],
    "packed causal act_q > act_kv": lambda c: c.view().packed and c.attr("sparse_mode") == 3
    and _act_q_gt_kv(c),
    "packed paged block 16..512 off x128": lambda c: c.view().packed and c.view().paged
    and c.attr("block_size") % 128 != 0,
    "paged block > 512": lambda c: c.view().paged and c.attr("block_size") > 512,
    "paged prefill block not x128": lambda c: c.view().paged and not c.view().decode
    and not c.view().packed and c.attr("block_size") % 128 != 0,
}


# ---- the device-only family -------------------------------------------------------------
def _heads(dr: Draft, groups: tuple[int, ...] = GROUPS, top: int = 16) -> None:
    ch = dr.ch
    g = ch.one(groups)
    dr.kv_n = ch.int(1, max(1, top // g))
    dr.n = dr.kv_n * g


def _tail(dr: Draft, lse: bool = True) -> None:
    ch = dr.ch
    if lse and ch.coin():
        dr.set("softmax_lse_flag", True)
    dr.set("num_heads", dr.n)
    if dr.kv_n != dr.n or ch.coin():
        dr.set("num_key_value_heads", dr.kv_n)
    dr.set("input_layout", dr.layout)
    d_total = dr.d + rope.extra_d(dr.params)
    dr.set("scale", ch.one((1.0 / d_total ** 0.5, 0.0625)))
    fills.qkv(dr)


def _dense(dr: Draft, layout: str, s1: int, s2: int) -> None:
    """query/key/value in a BSH/BSND/BNSD(-based) layout."""
    dr.layout, dr.q_layout = layout, layout.split("_")[0]
    dr.s1, dr.s2 = s1, s2
    dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, s1, dr.d), dr.q_dtype))
    dr.set("key", spec(dense_shape(dr.q_layout, dr.b, dr.kv_n, s2, dr.d), dr.kv_dtype))
    dr.set("value", spec(dense_shape(dr.q_layout, dr.b, dr.kv_n, s2, dr.dv), dr.kv_dtype))


def _float(dr: Draft) -> None:
    dr.q_dtype = dr.kv_dtype = dr.ch.one(FLOAT)


def _mask3(dr: Draft) -> None:
    """The 2048 template with leading ones (rope and unequal D reject the 2-D one, row 6)."""
    lead = dr.ch.one(((1,), (1, 1)))
    dr.set("atten_mask", spec((*lead, 2048, 2048), dr.ch.one(masks.MASK_DTYPES)))
    dr.fills["atten_mask"] = {"dist": "triu", "k": 1}


def decode_precise(dr: Draft) -> None:
    """Row 1: Q_S = 1 with inner_precise 2/3 on the V3 route (D 64/128)."""
    ch = dr.ch
    _float(dr)
    _heads(dr)
    dr.b = ch.int(1, 4)
    dr.d = dr.dv = ch.one((64, 128))
    _dense(dr, ch.one(("BSH", "BSND", "BNSD")), 1, ch.int(1, dr.prof.max_seq))
    dr.decode = True
    if ch.coin():
        dr.set("actual_seq_lengths_kv", [ch.int(0, dr.s2) for _ in range(dr.b)])
    dr.set("inner_precise", ch.one((2, 3)))
    _tail(dr)


def mla_unpaged(dr: Draft) -> None:
    """Rows 9/6: non-quantised MLA D 512, unpaged, Q_S 1..128, sparse 0 / 3 / 4 (3-D mask)."""
    ch = dr.ch
    _float(dr)
    dr.kv_n, dr.d, dr.dv = 1, 512, 512
    dr.n = ch.one(MLA_HEADS[:5])
    dr.b = ch.int(1, 2)
    budget = dr.prof.max_elements // (dr.b * 640)
    s1 = ch.int(1, max(1, min(128, budget // (2 * dr.n))))
    s2 = ch.int(max(1, s1), max(s1, min(dr.prof.max_seq, budget // 4)))
    _dense(dr, ch.one(("BSH", "BSND", "BNSD")), s1, s2)
    rope.set_query(dr, dense_shape(dr.q_layout, dr.b, dr.n, s1, MLA_ROPE_D), dr.q_dtype)
    rope.set_key(dr, dense_shape(dr.q_layout, dr.b, 1, s2, MLA_ROPE_D), dr.kv_dtype)
    mode = ch.one((0, 3, 4))
    if mode:
        dr.set("sparse_mode", mode)
        _mask3(dr)
        if mode == 4:
            dr.set("pre_tokens", ch.int(0, s2))
            dr.set("next_tokens", ch.int(0, s2))
    _tail(dr, lse=False)


def unequal_d(dr: Draft) -> None:
    """Row 8: qk-D != v-D in BSH/BSND/BNSD with sparse 0, 2 or 3 (no 2-D mask, row 6)."""
    ch = dr.ch
    _float(dr)
    _heads(dr)
    dr.b = ch.int(1, 3)
    dr.d, dr.dv = ch.one(((192, 128), (128, 64), (64, 128), (256, 128)))
    s1 = ch.one((1, ch.int(2, 32)))
    _dense(dr, ch.one(("BSH", "BSND", "BNSD")), s1, ch.int(1, dr.prof.max_seq))
    dr.decode = s1 == 1
    mode = 0 if s1 == 1 else ch.one((0, 2, 3))
    if mode:
        dr.set("sparse_mode", mode)
        _mask3(dr)
    elif s1 > 1 and ch.coin():
        dr.set("atten_mask", spec((ch.one((1, dr.b)), 1, s1, dr.s2), "bool"))
        dr.fills["atten_mask"] = {"dist": "bernoulli", "p": 0.3}
    _tail(dr)


def bnsd_out(dr: Draft) -> None:
    """Rows 4/5: BSH_BNSD / BSND_BNSD (output BNSD) with D 64 or 128."""
    ch = dr.ch
    _float(dr)
    _heads(dr)
    dr.b = ch.int(1, 3)
    dr.d = dr.dv = ch.one((64, 128))
    s1 = ch.int(1, 48)
    _dense(dr, ch.one(("BSH_BNSD", "BSND_BNSD")), s1, ch.int(1, dr.prof.max_seq))
    dr.decode = s1 == 1
    if s1 > 1 and ch.coin():
        dr.set("sparse_mode", 3)
        masks.optimized_mask(dr)
    _tail(dr)


def packed_split_fuse(dr: Draft) -> None:
    """Rows 4, 5, 12-15: packed layouts on the split-fuse route (bf16, D = Dv 64/128/192,
    inner_precise 0), sparse 0/3/4, act_q >= act_kv allowed, sink, pse, paged blocks of
    16..512; or off the route with post-quant (quant_scale2 [1] / [N, Dv])."""
    ch = dr.ch
    dr.q_dtype = dr.kv_dtype = "bfloat16"
    dr.layout = ch.one(("TND", "NTD_TND", "NTD"))
    dr.q_layout = dr.layout.split("_")[0]
    dr.d = dr.dv = ch.one((64, 128, 192) if dr.layout == "TND" else (64, 128))
    _heads(dr, top=8)
    dr.b = ch.int(1, 3)
    post_quant = ch.one((False, False, True))
    paged = not post_quant and dr.d != 192 and ch.one((False, False, True))
    q_lens = [ch.int(1, 24) for _ in range(dr.b)]
    kv_lens = [ch.int(1, 48) for _ in range(dr.b)]
    mode = ch.one((0, 3, 4) if dr.layout != "NTD" else (0, 3))
    tq = sum(q_lens)
    dr.s1, dr.s2 = max(q_lens), max(kv_lens)
    dr.set("query", spec(packed_shape(dr.q_layout, tq, dr.n, dr.d), "bfloat16"))
    dr.set("actual_seq_lengths", _cumulative(q_lens))
    if paged:
        kv_lens = _non_decreasing(kv_lens)
        dr.s2 = max(kv_lens)
        bs = 16 * ch.int(1, 32)
        blocks = [-(-n // bs) for n in kv_lens]
        width = max(blocks)
        ids = iter(range(sum(blocks)))
        table = [[next(ids) for _ in range(k)] + [0] * (width - k) for k in blocks]
        dr.set("key", spec((sum(blocks), bs, dr.kv_n * dr.d), "bfloat16"))
        dr.set("value", spec((sum(blocks), bs, dr.kv_n * dr.dv), "bfloat16"))
        dr.set("block_table", table)
        dr.set("block_size", bs)
        dr.set("actual_seq_lengths_kv", kv_lens)
        dr.s2 = width * bs
    else:
        tkv = sum(kv_lens)
        dr.set("key", spec(packed_shape(dr.q_layout, tkv, dr.kv_n, dr.d), "bfloat16"))
        dr.set("value", spec(packed_shape(dr.q_layout, tkv, dr.kv_n, dr.dv), "bfloat16"))
        dr.set("actual_seq_lengths_kv", _cumulative(kv_lens))
    if mode:
        dr.set("sparse_mode", mode)
        masks.optimized_mask(dr)
        if mode == 4:
            pre = ch.int(0, dr.s2)
            dr.set("pre_tokens", pre)
            dr.set("next_tokens", ch.int(-pre, dr.s1))
    if post_quant:
        form = ch.one(((1,), (dr.n, dr.dv)))
        dr.set("quant_scale2", spec(form, "float32"))
        dr.fills["quant_scale2"] = {"dist": "uniform", "scale": ch.one((1.0, 8.0))}
        if ch.coin():
            dr.set("quant_offset2", spec(form, "float32"))
            dr.fills["quant_offset2"] = {"dist": "uniform", "scale": 4.0}
    else:
        dr.set("inner_precise", 0)
        if ch.coin():
            pse.put(dr, (ch.one((1, dr.b)), dr.n, dr.s1, dr.s2), "bfloat16",
                    {"dist": "normal", "scale": 1.0})
    for name in with_role("per_head"):  # the sink (op/args/sink.py)
        if ch.coin():
            dr.set(name, spec((dr.n,), "bfloat16"))
            dr.fills[name] = {"dist": "normal", "scale": 1.0}
    _tail(dr)


def paged_blocks(dr: Draft) -> None:
    """Row 16: non-quant GQA paged KV with blocks up to 1024 (D 64/128: x16; other D
    prefill: x128)."""
    ch = dr.ch
    _float(dr)
    dr.d = dr.dv = ch.one((64, 128, 192))
    layout = ch.one(("BSH", "BSND", "BNSD"))
    s1 = ch.int(2, 16) if dr.d == 192 else ch.int(1, 16)
    step, lo = (128, 1) if dr.d == 192 else (16, 1)
    bs = step * ch.int(lo, 1024 // step)
    dr.kv_n = 1
    dr.n = ch.one((1, 2, 4))
    dr.b = ch.int(1, 2)
    per_block = bs * dr.kv_n * dr.d * 2
    blocks_cap = max(1, dr.prof.max_elements // per_block)
    kv_lens = [ch.int(1, bs * max(1, min(2, blocks_cap // dr.b))) for _ in range(dr.b)]
    blocks = [-(-n // bs) for n in kv_lens]
    width = max(blocks)
    ids = iter(range(sum(blocks)))
    dr.layout = dr.q_layout = layout
    dr.s1, dr.s2 = s1, width * bs
    dr.decode = s1 == 1
    dr.set("query", spec(dense_shape(layout, dr.b, dr.n, s1, dr.d), dr.q_dtype))
    cache = (sum(blocks), dr.kv_n, bs, dr.d) if layout == "BNSD" and ch.coin() \
        else (sum(blocks), bs, dr.kv_n * dr.d)
    dr.set("key", spec(cache, dr.kv_dtype))
    dr.set("value", spec(cache, dr.kv_dtype))
    dr.set("block_table", [[next(ids) for _ in range(k)] + [0] * (width - k) for k in blocks])
    dr.set("block_size", bs)
    dr.set("actual_seq_lengths_kv", kv_lens)
    _tail(dr)


def mla_tnd(dr: Draft) -> None:
    """Row 10 (and 9): unpaged TND MLA D 512 with any MLA head count, causal 3-D mask."""
    ch = dr.ch
    dr.q_dtype = dr.kv_dtype = "bfloat16"
    dr.layout, dr.q_layout = ch.one(("TND", "TND_NTD")), "TND"
    dr.kv_n, dr.d, dr.dv = 1, 512, 512
    dr.n = ch.one(MLA_HEADS[:5])
    dr.b = ch.int(1, 2)
    q_lens = [ch.int(1, 16) for _ in range(dr.b)]
    kv_lens = [q + ch.int(0, 64) for q in q_lens]
    tq, tkv = sum(q_lens), sum(kv_lens)
    dr.s1, dr.s2 = max(q_lens), max(kv_lens)
    dr.set("query", spec((tq, dr.n, 512), "bfloat16"))
    rope.set_query(dr, (tq, dr.n, MLA_ROPE_D), "bfloat16")
    dr.set("key", spec((tkv, 1, 512), "bfloat16"))
    rope.set_key(dr, (tkv, 1, MLA_ROPE_D), "bfloat16")
    dr.set("value", spec((tkv, 1, 512), "bfloat16"))
    dr.set("actual_seq_lengths", _cumulative(q_lens))
    dr.set("actual_seq_lengths_kv", _cumulative(kv_lens))
    dr.set("sparse_mode", 3)
    _mask3(dr)
    _tail(dr, lse=False)


BUILDERS: tuple[Callable[[Draft], None], ...] = (
    decode_precise, mla_unpaged, unequal_d, bnsd_out, packed_split_fuse, packed_split_fuse,
    paged_blocks, mla_tnd)


def device_a2(dr: Draft) -> None:
    """One call from a region only the A2 device admits."""
    dr.ch.one(BUILDERS)(dr)


# ---- documented draws under the device's stricter checks ------------------------------------
def adapt(case: Case) -> Case:
    """A documented draw in the form the A2 device accepts where a row is stricter: the
    (1, 2048, 2048) template in place of a 2-D mask with rope or unequal D (row 6), a
    bfloat16 sink (row 2: the per-head vectors of op/args). Other stricter rows reject
    the draw."""
    params, fills_ = dict(case.params), dict(case.fills)
    v = case.view()
    m = params.get("atten_mask")
    if m is not None and m.ndim == 2 and (v.rope or v.D != v.Dv):
        params["atten_mask"] = TensorSpec((1, *m.shape), m.dtype)
    for name in with_role("per_head"):
        sink = params.get(name)
        if sink is not None and sink.dtype != "bfloat16":
            params[name] = TensorSpec(sink.shape, "bfloat16")
    return dataclasses.replace(case, params=params, fills=fills_, rules=NAME)
