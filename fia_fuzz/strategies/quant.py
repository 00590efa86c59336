"""Quantisation parameters: KV antiquant, full int8 quant, post-quant [V4 §AntiQuant, §INT8].

Shapes follow fia-semantics.md §7-8: combined antiquant (first dim 2 = key,
value) modes 0/1, separate key/value params modes 0-5 and the key-0/value-1
pair, per-tensor dequant scales as uint64 (vendor encoding) or fp32, and
post-quant scales per-tensor or per-channel over the output's H or N x D.
"""

from __future__ import annotations

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


def channel_shape(dr: Draft, lead: tuple[int, ...], form: str = "") -> tuple[int, ...]:
    """Per-channel forms (lead, KV_N, 1, D), (lead, KV_N, D), (lead, H) [SEM §7]."""
    form = form or dr.ch.one(("N1D", "ND", "H"))
    h = dr.kv_n * dr.d
    return {"N1D": (*lead, dr.kv_n, 1, dr.d), "ND": (*lead, dr.kv_n, dr.d),
            "H": (*lead, h)}[form]


def combined(dr: Draft, mode: int, per_tensor: bool, offset: bool) -> None:
    """antiquant_scale/offset with first dim 2 (key, value); mode 0 channel/tensor, 1 token."""
    if mode == 1:
        shp: tuple[int, ...] = (2, dr.b, dr.s2)
        dtype = "float32"
    else:
        shp = (2,) if per_tensor else channel_shape(dr, (2,))
        dtype = dr.q_dtype
    if mode:
        dr.set("antiquant_mode", mode)
    _put(dr, "antiquant_scale", "antiquant_offset", shp, dtype, offset)


def separate_decode(dr: Draft, modes: tuple[int, int], per_tensor: bool, offset: bool,
                    block_num: int) -> None:
    """key_/value_antiquant_scale/offset for Q_S = 1, modes 0-5 and the 0/1 pair [SEM §7].

    Key and value params share one shape (V4 §AntiQuant: 'shape需要保持一致').
    """
    form = dr.ch.one(("N1D", "ND", "H"))
    for side, mode in (("key", modes[0]), ("value", modes[1])):
        if mode == 0:
            shp: tuple[int, ...] = (1,) if per_tensor else channel_shape(dr, (1,), form)
            dtype = dr.q_dtype
        elif mode == 1:
            shp, dtype = (1, dr.b, dr.s2), "float32"
        elif mode == 2:
            shp, dtype = (dr.kv_n,), dr.q_dtype
        elif mode == 3:
            shp, dtype = (dr.b, dr.kv_n, dr.s2), "float32"
        elif mode == 4:
            shp, dtype = (block_num, dr.params["block_size"]), "float32"
        else:
            shp, dtype = (block_num, dr.kv_n, dr.params["block_size"]), "float32"
        _put(dr, f"{side}_antiquant_scale", f"{side}_antiquant_offset", shp, dtype, offset)
    if modes[0]:
        dr.set("key_antiquant_mode", modes[0])
    if modes[1]:
        dr.set("value_antiquant_mode", modes[1])


def separate_prefill(dr: Draft, mode: int, offset: bool) -> None:
    """Prefill separate params: mode 0 (KV_N, D)/(KV_N, 1, D)/(H) bf16, mode 1 (B, S2) fp32."""
    if mode == 0:
        form = dr.ch.one(("ND", "N1D", "H"))
        shp = {"ND": (dr.kv_n, dr.d), "N1D": (dr.kv_n, 1, dr.d), "H": (dr.kv_n * dr.d,)}[form]
        dtype = "bfloat16"
    else:
        shp, dtype = (dr.b, dr.s2), "float32"
    separate_same(dr, shp, dtype, mode, offset)


def separate_same(dr: Draft, shp: tuple[int, ...], dtype: str, mode: int,
                  offset: bool = False) -> None:
    """key_/value_antiquant_scale (and offset) of one shape and mode for both sides."""
    for side in ("key", "value"):
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
        dr.set(f"{side}_antiquant_scale", spec((1,), "float32"))
        dr.fills[f"{side}_antiquant_scale"] = {"dist": "const",
                                               "value": ch.one((2.0 ** -7, 2.0 ** -5))}


def post_quant(dr: Draft, forms: tuple[str, ...]) -> None:
    """quant_scale2 (+ optional quant_offset2) for int8 output [V4 §INT8 quantScale2]."""
    ch = dr.ch
    form = ch.pick("post_quant_form", forms)
    if form == "none":
        ch.pick("post_quant_offset", (False,))
        return
    if form == "per_tensor":
        shp: tuple[int, ...] = (1,)
    else:
        h = dr.n * dr.dv
        if dr.out_layout == "BSH":
            shp = ch.one(((1, 1, h), (h,)))
        elif dr.out_layout == "BSND":
            shp = ch.one(((1, 1, dr.n, dr.dv), (dr.n, dr.dv)))
        else:
            shp = ch.one(((1, dr.n, 1, dr.dv), (dr.n, dr.dv)))
    dtype = ch.one(("float32", "bfloat16")) if dr.q_dtype == "bfloat16" else "float32"
    dr.set("quant_scale2", spec(shp, dtype))
    dr.fills["quant_scale2"] = {"dist": "uniform", "scale": ch.one((1.0, 8.0, 64.0))}
    dr.int8_out = True
    if ch.pick("post_quant_offset", (False, True)):
        dr.set("quant_offset2", spec(shp, dtype))
        dr.fills["quant_offset2"] = {"dist": "uniform", "scale": 4.0}
        dr.int8_offset = True
