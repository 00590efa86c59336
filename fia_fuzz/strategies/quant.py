"""Quantisation parameters: KV antiquant, full int8 quant, post-quant [V4 §AntiQuant, §INT8].

Shapes follow fia-semantics.md §7-8: combined antiquant (first dim 2 = key,
value) modes 0/1, separate key/value params modes 0-5 and the key-0/value-1
pair, per-tensor dequant scales as uint64 (vendor encoding) or fp32, and
post-quant scales per-tensor or per-channel over the output's H or N x D.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.strategies.choices import Dead
from fia_fuzz.strategies.draft import Draft, spec

#: separate-param modes (key, value) in shrink order; 4/5 need paged KV.
SEPARATE_MODES = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (0, 1))


def _scale_fill(dr: Draft, dtype: str) -> dict[str, object]:
    return {"dist": dr.ch.one(("uniform", "normal")), "scale": dr.ch.one((0.01, 0.1, 1.0))}


def _offset_fill(dr: Draft) -> dict[str, object]:
    return {"dist": "normal", "scale": dr.ch.one((1.0, 4.0))}


def _put(dr: Draft, scale_name: str, offset_name: str, shp: tuple[int, ...], dtype: str,
         offset: bool) -> None:
    dr.set(scale_name, spec(shp, dtype))
    dr.fills[scale_name] = _scale_fill(dr, dtype)
    if offset:
        dr.set(offset_name, spec(shp, dtype))
        dr.fills[offset_name] = _offset_fill(dr)


def channel_shapes(dr: Draft, lead: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Per-channel forms (lead, KV_N, 1, D), (lead, KV_N, D), (lead, H) by their op/forms.py
    pattern [SEM §7]."""
    pre = ",".join(str(x) for x in lead)
    return {f"{pre},N,1,D": (*lead, dr.kv_n, 1, dr.d), f"{pre},N,D": (*lead, dr.kv_n, dr.d),
            f"{pre},H": (*lead, dr.kv_n * dr.d)}


def combined(dr: Draft, mode: int, offset: bool) -> None:
    """antiquant_scale/offset with first dim 2 (key, value); mode 0 per-tensor or
    per-channel in the query dtype, mode 1 per-token fp32."""
    if mode == 1:
        shapes: dict[str, tuple[int, ...]] = {"2,B,S2": (2, dr.b, dr.s2)}
        dtype = "float32"
    else:
        shapes = {"2": (2,), **channel_shapes(dr, (2,))}
        dtype = dr.q_dtype
    shp = dr.pick_form("antiquant_scale_form",
                       {f"{dr.branch}:m{mode}:{k}": v for k, v in shapes.items()})
    if mode:
        dr.set("antiquant_mode", mode)
    _put(dr, "antiquant_scale", "antiquant_offset", shp, dtype, offset)


def _decode_shapes(dr: Draft, mode: int, per_tensor: bool, block_num: int
                   ) -> tuple[dict[str, tuple[int, ...]], str]:
    """Decode separate-param shapes of one mode by form pattern, and their dtype [SEM §7]."""
    if mode == 0:
        lead = {"1": (1,)} if per_tensor else {}
        return {**lead, **channel_shapes(dr, (1,))}, dr.q_dtype
    bs = dr.params.get("block_size", 0)
    return {1: ({"1,B,S2": (1, dr.b, dr.s2)}, "float32"),
            2: ({"N": (dr.kv_n,)}, dr.q_dtype),
            3: ({"B,N,S2": (dr.b, dr.kv_n, dr.s2)}, "float32"),
            4: ({"blocks,bs": (block_num, bs)}, "float32"),
            5: ({"blocks,N,bs": (block_num, dr.kv_n, bs)}, "float32")}[mode]


def _value_pinned(dr: Draft, shapes: dict[str, Any], head: str) -> dict[str, Any]:
    """The key shapes a value_antiquant_scale_form filter leaves (key and value share one)."""
    pin = dr.ch.pins.get("value_antiquant_scale_form")
    return {k: v for k, v in shapes.items() if pin is None or f"{head}{k}" == pin}


def separate_decode(dr: Draft, modes: tuple[int, int], per_tensor: bool, offset: bool,
                    block_num: int) -> None:
    """key_/value_antiquant_scale/offset for Q_S = 1, modes 0-5 and the 0/1 pair [SEM §7];
    `per_tensor` admits the (1,) form of mode 0.

    Key and value params share one shape (V4 §AntiQuant: 'shape需要保持一致'),
    except the key-0/value-1 pair.
    """
    picked = ""
    for side, mode in (("key", modes[0]), ("value", modes[1])):
        shapes, dtype = _decode_shapes(dr, mode, per_tensor, block_num)
        if picked in shapes:
            shapes = {picked: shapes[picked]}
        elif side == "key" and modes[0] == modes[1]:
            shapes = _value_pinned(dr, shapes, f"decode:m{mode}:")
        forms = {f"decode:m{mode}:{k}": k for k in shapes}
        picked = dr.pick_form(f"{side}_antiquant_scale_form", forms)
        _put(dr, f"{side}_antiquant_scale", f"{side}_antiquant_offset", shapes[picked], dtype,
             offset)
    if modes[0]:
        dr.set("key_antiquant_mode", modes[0])
    if modes[1]:
        dr.set("value_antiquant_mode", modes[1])


def separate_prefill(dr: Draft, mode: int, offset: bool) -> None:
    """Prefill separate params: mode 0 (KV_N, D)/(KV_N, 1, D)/(H) bf16, mode 1 (B, S2) fp32."""
    if mode == 0:
        shapes = {"N,D": (dr.kv_n, dr.d), "N,1,D": (dr.kv_n, 1, dr.d), "H": (dr.kv_n * dr.d,)}
        dtype = "bfloat16"
    else:
        shapes, dtype = {"B,S2": (dr.b, dr.s2)}, "float32"
    separate_same(dr, shapes, dtype, mode, offset)


def separate_same(dr: Draft, shapes: dict[str, tuple[int, ...]], dtype: str, mode: int,
                  offset: bool = False) -> None:
    """key_/value_antiquant_scale (and offset) of one shape (picked among `shapes`, keyed by
    form pattern) and mode for both sides."""
    picked = ""
    shapes = _value_pinned(dr, shapes, f"{dr.branch}:m{mode}:")
    for side in ("key", "value"):
        opts = {f"{dr.branch}:m{mode}:{k}": (k, v) for k, v in shapes.items()
                if not picked or k == picked}
        picked, shp = dr.pick_form(f"{side}_antiquant_scale_form", opts)
        _put(dr, f"{side}_antiquant_scale", f"{side}_antiquant_offset", shp, dtype, offset)
    if mode:
        dr.set("key_antiquant_mode", mode)
        dr.set("value_antiquant_mode", mode)


def full_quant_scales(dr: Draft) -> None:
    """dequant_scale1, quant_scale1, dequant_scale2: per-tensor, uint64 or fp32 [SEM §8]."""
    deq = dr.ch.pick("deq_dtype", ("float32", "uint64"))
    for name, value in (("dequant_scale1", dr.ch.one((2.0 ** -12, 2.0 ** -8))),
                        ("dequant_scale2", dr.ch.one((2.0 ** -7, 2.0 ** -10)))):
        dr.set(name, spec((1,), deq))
        dr.fills[name] = {"dist": "u64_scale" if deq == "uint64" else "const", "value": value}
    dr.set("quant_scale1", spec((1,), "float32"))
    dr.fills["quant_scale1"] = {"dist": "const", "value": 127.0}


def mla_full_quant_scales(dr: Draft) -> None:
    """MLA full quant: fp32 dequant_scale_query per (token, head), (B*S1, N, 1), with
    query_quant_mode 3; per-tensor fp32 key/value scales, modes 0 [TNPU v2 全量化].

    Positive scales of the size that maps int8 to O(1) values, so the scores
    stay in the range where softmax is neither flat nor one-hot.
    """
    ch = dr.ch
    ch.pick("deq_dtype", ("float32",))
    dr.set("dequant_scale_query", spec((dr.b * dr.s1, dr.n, 1), "float32"))
    dr.fills["dequant_scale_query"] = {"dist": "positive",
                                       "scale": ch.one((2.0 ** -6, 2.0 ** -4))}
    dr.set("query_quant_mode", 3)
    for side in ("key", "value"):
        ch.fixed(f"{side}_antiquant_scale_form", f"{dr.branch}:m0:1")
        dr.set(f"{side}_antiquant_scale", spec((1,), "float32"))
        dr.fills[f"{side}_antiquant_scale"] = {"dist": "const",
                                               "value": ch.one((2.0 ** -7, 2.0 ** -5))}


#: Per-channel quant_scale2 forms by output layout, op/forms.py patterns [SEM §8].
_CHANNEL_FORMS = {"BSH": ("1,1,H", "H"), "BSND": ("1,1,N,D", "N,D")}


def post_quant(dr: Draft, forms: tuple[str, ...], empty_kv: bool = False) -> None:
    """quant_scale2 (+ optional quant_offset2) for int8 output [V4 §INT8 quantScale2]: one
    pick among per-tensor and the output layout's per-channel forms; with an empty KV no
    offset (no row is computed: quant.rows_not_computed)."""
    ch = dr.ch
    if forms == ("none",):
        ch.pick("post_quant_form", forms)
        ch.fixed("quant_scale2_form", "none")
        ch.pick("post_quant_offset", (False,))
        return
    kinds = {"1": "per_tensor", **dict.fromkeys(
        _CHANNEL_FORMS.get(dr.out_layout, ("1,N,1,D", "N,D")), "per_channel")}
    kinds = {p: k for p, k in kinds.items() if k in forms and ch.allows("post_quant_form", k)}
    if empty_kv:   # an empty KV has one form of its own, whichever shape the scale takes
        if not kinds:
            raise Dead(f"post_quant_form={ch.pins.get('post_quant_form')!r} not in {forms} "
                       f"here")
        pat = ch.one(tuple(kinds))
        ch.fixed("quant_scale2_form", "empty_kv")
    else:
        # each per-channel shape of an output layout thrice as often as per-tensor, which
        # every layout shares
        pat = dr.pick_form("quant_scale2_form", {f"{dr.branch}:{p}": p for p in kinds},
                           {f"{dr.branch}:{p}": 3 for p, k in kinds.items()
                            if k == "per_channel"})
    ch.fixed("post_quant_form", kinds[pat])
    h = dr.n * dr.dv
    shp = {"1": (1,), "N,D": (dr.n, dr.dv), "1,1,H": (1, 1, h), "H": (h,),
           "1,1,N,D": (1, 1, dr.n, dr.dv), "1,N,1,D": (1, dr.n, 1, dr.dv)}[pat]
    dtype = ch.one(("float32", "bfloat16")) if dr.q_dtype == "bfloat16" else "float32"
    dr.set("quant_scale2", spec(shp, dtype))
    dr.fills["quant_scale2"] = {"dist": "uniform", "scale": ch.one((1.0, 8.0, 64.0))}
    dr.int8_out = True
    if ch.pick("post_quant_offset", (False,) if empty_kv else (False, True)):
        dr.set("quant_offset2", spec(shp, dtype))
        dr.fills["quant_offset2"] = {"dist": "uniform", "scale": 4.0}
        dr.int8_offset = True
