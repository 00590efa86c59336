"""Value distributions of query/key/value, drawn per tensor (recipes of op/values.py).

Normal and uniform at several scales, magnitudes near the dtype limit that
keep the exact result finite and well-conditioned (`_large`), constant rows,
one outlier per row, and
all-negative logits (query >= 0, key <= 0). Nearly fully masked rows are a
mask fill (masks.py).
"""

from __future__ import annotations

import math
from typing import Any

from fia_fuzz.op.args import rope, with_role
from fia_fuzz.op.values import FINFO_MAX
from fia_fuzz.strategies.draft import Draft

SCALES = (1.0, 0.25, 4.0, 16.0)
FLOAT_DISTS = ("normal", "uniform", "outlier", "const_rows", "large", "negative")
#: int ranges (low, high) of the integer tensors, by dtype (int32 = 8 packed int4).
INT_RANGES = {"int8": (-128, 127), "int4": (-8, 7), "int32": (-(2**31), 2**31 - 1)}
#: Bound on |scale * sum_d |q_d k_d|| when query or key is large (see `bound_logits`).
LOGIT_BOUND = 2.0 ** 10
#: Largest |x| of a float fill per unit of its scale (values.py: Irwin-Hall(4) is within
#: 2 sqrt(3), one outlier of 100 per row); a dequantised int8/int4 key stays within
#: (128 + 4 * 2 sqrt(3)) x 2 sqrt(3) < 512 for the antiquant fills of quant.py.
DIST_MAX = {"normal": 2 * math.sqrt(3), "const_rows": 2 * math.sqrt(3), "uniform": 1.0,
            "negative": 1.0, "positive": 1.0, "outlier": 100.0}
INT_DEQUANT_MAX = 512.0


def _large(dtype: str, name: str, dr: Draft) -> dict[str, Any]:
    """Near the dtype limit, bounded so no exact intermediate overflows [SEM §5].

    Output rows are convex combinations of value rows and the P.V sum holds at
    most S2 terms, so value may sit at 0.9 x max / S2 in bf16 (whose max is
    the fp32 max) and at 0.9 x max in fp16. Query/key magnitudes multiply, so
    in bf16 they stay at 2^40, where q.k still fits fp32.

    A large value is one sign throughout (drawn per case; `sign` in the
    recipe, which value_shared_prefix and every tensor-list entry copy), with
    magnitudes in [1/2, 1) of the bound. With mixed signs an output element is
    a difference of terms of ~1e36 that can cancel to near 0: the exact
    result is then ill-conditioned (a relative error of 2^-24 in one term is
    larger than the result), so device, same-dtype golden and fp64 truth
    disagree in sign and an int8 post-quant lands at the other saturation
    end. Same-sign terms give a convex combination whose relative condition
    number is 1, still within [1/2, 1) of the limit.
    """
    top = FINFO_MAX[dtype]
    if dtype == "float16":
        frac = 0.9 if name == "value" else 0.25
    elif name == "value":
        frac = 0.9 / max(1, dr.s2_total)
    else:
        frac = 2.0 ** 40 / top
    recipe: dict[str, Any] = {"dist": "large", "scale": top, "fraction": frac}
    if name == "value":
        recipe["sign"] = dr.ch.one((1, -1))
    return recipe


def _float(dr: Draft, name: str, dist: str, dtype: str) -> dict[str, Any]:
    if dist == "large":
        return _large(dtype, name, dr)
    return {"dist": dist, "scale": dr.ch.one(SCALES)}


def _int(dtype: str, sign: int = 0) -> dict[str, Any]:
    lo, hi = INT_RANGES[dtype]
    if sign > 0:
        lo = 0
    elif sign < 0:
        hi = 0
    return {"dist": "int", "low": lo, "high": hi}


def qkv(dr: Draft) -> None:
    """Fill recipes for query, key, value (and rope parts), honouring q/k/v_dist and logits."""
    ch = dr.ch
    qf = dr.q_dtype != "int8"
    kf = dr.kv_dtype in ("float16", "bfloat16")
    neg_ok = ch.allows("q_dist", "positive" if qf else "int") and \
        ch.allows("k_dist", "negative" if kf else "int")
    logits = ch.pick("logits", ("mixed", "mixed", "all_negative") if neg_ok else ("mixed",))
    if logits == "all_negative":
        ch.pick("q_dist", ("positive",) if qf else ("int",))
        ch.pick("k_dist", ("negative",) if kf else ("int",))
        dr.fills["query"] = {"dist": "positive", "scale": ch.one(SCALES)} if qf \
            else _int("int8", +1)
        dr.fills["key"] = {"dist": "negative", "scale": ch.one(SCALES)} if kf \
            else _int(dr.kv_dtype, -1)
    else:
        qd = ch.pick("q_dist", FLOAT_DISTS if qf else ("int",))
        kd = ch.pick("k_dist", FLOAT_DISTS if kf else ("int",))
        dr.fills["query"] = _float(dr, "query", qd, dr.q_dtype) if qf else _int("int8")
        dr.fills["key"] = _float(dr, "key", kd, dr.kv_dtype) if kf else _int(dr.kv_dtype)
    vd = ch.pick("v_dist", FLOAT_DISTS if kf else ("int",))
    dr.fills["value"] = _float(dr, "value", vd, dr.kv_dtype) if kf else _int(dr.kv_dtype)
    for name in with_role("rope"):  # the rope halves of Q and K (op/args/rope.py)
        if name in dr.params:
            dr.fills[name] = {"dist": "normal", "scale": ch.one(SCALES[:3])}
    if "key_shared_prefix" in dr.params:
        dr.fills["key_shared_prefix"] = dict(dr.fills["key"])
        dr.fills["value_shared_prefix"] = dict(dr.fills["value"])
    bound_logits(dr)


def _fill_max(fill: dict[str, Any], dtype: str) -> float:
    """The largest |x| the recipe gives (dequantised for int keys)."""
    if fill.get("dist") == "int":
        return INT_DEQUANT_MAX
    if fill.get("dist") == "large":
        return min(float(fill["scale"]), FINFO_MAX[dtype] * float(fill["fraction"]))
    return DIST_MAX[fill["dist"]] * float(fill.get("scale", 1.0))


def bound_logits(dr: Draft) -> None:
    """With a large query or key, lower `scale` to a power of two keeping |logits| <= 2^10.

    The logits' absolute rounding error is about u32 x scale x sum_d |q_d k_d|;
    softmax turns it into a relative error of the weights. A large q or k
    near the dtype limit gives logits of 1e4-1e24, where that error is 1e-3
    to beyond 1: rows whose top logits lie within a few units of each other
    (frequent at that spread) have weights set by rounding, so device,
    same-dtype golden and fp64 truth differ by rounding luck, not by a defect.
    Bounding scale x sum |q k| by 2^10 keeps the weights' error below 2^-14
    while q and k keep their magnitudes near the dtype limit (the fp32
    product q.k still reaches 1e9-1e27 before scaling, so a kernel that
    overflows it is still caught). A power of two scales exactly. The bound
    is the worst case D x max|q| x max|k| (+ the rope part), so typical
    logits stay well inside it.
    """
    q, k = dr.fills.get("query", {}), dr.fills.get("key", {})
    if "large" not in (q.get("dist"), k.get("dist")):
        return
    worst = dr.d * _fill_max(q, dr.q_dtype) * _fill_max(k, dr.kv_dtype)
    worst += rope.worst_logit(dr, _fill_max)
    scale = float(dr.params["scale"])
    if scale * worst > LOGIT_BOUND:
        _, exp = math.frexp(LOGIT_BOUND / worst)  # exact: 2^(exp-1) <= bound / worst
        dr.set("scale", 2.0 ** (exp - 1))
