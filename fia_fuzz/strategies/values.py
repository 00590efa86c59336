"""The `values` axis: fills that reach where arithmetic breaks (docs/values.md).

Drawn after the family has built the whole case, so the choice sees what the case can
carry (a mask, padding, a position bias, float tensors): NaN or +-Inf placed by region
in query, key or value (op/specials.py), -inf or NaN in the bias, NaN or +-Inf in a float
antiquant scale or offset, fully masked rows of atten_mask, and three finite regimes
(fp16 Q.K^T and unshifted-exp overflow, subnormals, exact ties / rows of equal scores).
Only profiles with a `values_share` draw it unfiltered (smoke has none, so its draws and
their choice sequences are those of before); a `values=...` filter draws it in any
profile.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args import antiquant, pse, rope
from fia_fuzz.op.case import Case
from fia_fuzz.op.features import REGIME
from fia_fuzz.op.geometry import kv_window, query_window
from fia_fuzz.op.specials import COUNT, FULL_ROW, SPECIAL, WHERE, has_specials, unplaced
from fia_fuzz.op.values import ROUND, materialise
from fia_fuzz.strategies.draft import Draft, weighted

FLOAT = ("float16", "bfloat16")
#: Draw weight of a value among those a case can carry: the ones few cases can carry
#: (a position bias, antiquant scales, a used mask) come up about as often as the others
#: (the bias's two the most: fewest cases carry one).
WEIGHTS = {"pse_neg_inf": 5, "pse_nan": 5, "antiquant_nan": 3, "antiquant_inf": 3,
           "masked_row": 4, "nan_masked": 3, "inf_masked": 3, "nan_padding": 2,
           "inf_padding": 2}
#: fp16 query/key magnitude of the overflow regime: q.k of two of them is 2^20, past the
#: fp16 maximum, while every score stays an exact multiple of one fp32 number.
OVERFLOW_MAGNITUDE = 2.0 ** 10
#: Scale of a subnormal fill per dtype: Irwin-Hall(4) samples stay below 2 sqrt(3) x it,
#: under the smallest normal (fp16 2^-14, bf16 2^-126).
SUBNORMAL_SCALE = {"float16": 2.0 ** -20, "bfloat16": 2.0 ** -130}


def draw(dr: Draft) -> None:
    """Pick the case's `values` value (pinned, or by the profile's share) and apply it."""
    ch = dr.ch
    pinned = "values" in ch.pins
    if not pinned and not dr.prof.values_share:
        return
    can, view = _carried(dr)
    if pinned:
        value = ch.pick("values", ("finite", *can))
    elif not can:
        return
    elif ch.one(weighted(("finite", "special"), {"finite": dr.prof.values_share})) == "finite":
        return
    else:
        value = ch.one(weighted(can, WEIGHTS))
    if value != "finite":
        _apply(dr, value, view)


def _view(dr: Draft) -> Any:
    return Case(params=dr.params, fills=dr.fills).view()


def _float_qkv(dr: Draft) -> tuple[bool, bool]:
    return dr.q_dtype in FLOAT, dr.kv_dtype in FLOAT


def _uses_mask(dr: Draft) -> bool:
    mode = dr.params.get("sparse_mode", 0)
    rope_decode = dr.decode and rope.QUERY in dr.params
    return dr.params.get("atten_mask") is not None and (dr.decode and not rope_decode
                                                        or mode in (0, 1))


def _masks_something(dr: Draft, v: Any) -> bool:
    """A used atten_mask that is not all zeros, or a causal band over several query rows
    (a bernoulli mask or mode 4's band may still mask nothing: `settle` then drops the
    special)."""
    mode = dr.params.get("sparse_mode", 0)
    rows = int(query_window(v)[0].max(initial=0))
    band = mode in (2, 3, 4) and (not dr.decode or rope.QUERY in dr.params) and rows > 1
    mask = _uses_mask(dr) and dr.fills.get("atten_mask", {}).get("dist") != "zeros"
    return mask or band


def _padding(v: Any) -> tuple[bool, bool]:
    """(query rows past the valid window exist, key columns past it exist) in the draft's
    view `v`."""
    q_len, _ = query_window(v)
    kv_len, _ = kv_window(v)
    q_pad = not v.packed and not v.decode and bool((q_len < v.S1).any())
    if v.packed:
        kv_pad = False
    elif v.paged:
        bs = v.attr_int("block_size")
        kv_pad = bool(((kv_len % bs) != 0).any())
    else:
        kv_pad = any(int(kv_len[b]) < v.kv_seq(b) for b in range(v.B))
    return q_pad, kv_pad


def _carried(dr: Draft) -> tuple[tuple[str, ...], Any]:
    """(the non-finite values of the axis this case can carry, in axis order; the draft's
    view, None when it carries none)."""
    p = dr.params
    if dr.int8_out or dr.q_dtype not in FLOAT or p.get("query") is None:
        return (), None
    try:
        v = _view(dr)
        if v.mla_full_quant or dr.b == 0 or v.S1 == 0 or v.S2 == 0:
            return (), None
    except Exception:  # an undetermined shape: nothing to place
        return (), None
    qf, kvf = _float_qkv(dr)
    q_pad, kv_pad = _padding(v)
    out = ["nan_attended"]
    masked = kvf and _masks_something(dr, v)
    padding = q_pad or (kvf and kv_pad)
    out += ["nan_masked"] if masked else []
    out += ["nan_padding"] if padding else []
    out += ["inf_attended"]
    out += ["inf_masked"] if masked else []
    out += ["inf_padding"] if padding else []
    if p.get(pse.NAME) is not None:
        out += ["pse_neg_inf", "pse_nan"]
    if _antiquant_floats(dr):
        out += ["antiquant_nan", "antiquant_inf"]
    if _uses_mask(dr):
        out += ["masked_row"]
    if qf and kvf and p.get(pse.NAME) is None and rope.QUERY not in p:
        out += ["overflow"]
    out += ["subnormal"]
    if kvf:
        out += ["ties"]
    return tuple(out), v


def _antiquant_floats(dr: Draft) -> tuple[str, ...]:
    """The float antiquant scales and offsets of the case, scales first (the value's first
    choice, the simplest to shrink to)."""
    names = sorted((n for n in antiquant.TENSORS if dr.params.get(n) is not None),
                   key=lambda n: "offset" in n)
    return tuple(n for n in names if dr.params[n].dtype in (*FLOAT, "float32"))


def _apply(dr: Draft, value: str, view: Any) -> None:
    """Apply `value` to the draft (`view`: its view; the fills drawn here do not change
    it)."""
    ch = dr.ch
    if value.startswith(("nan_", "inf_")):
        special, where = value.split("_")
        if special == "inf":
            special = ch.one(("inf", "-inf"))
        _, kvf = _float_qkv(dr)
        q_pad, kv_pad = _padding(view)
        # value first: its special reaches the output directly (one column of the rows
        # attending it), the simplest case to shrink to
        names = {"attended": ("value", "query", "key") if kvf else ("query",),
                 "masked": ("value", "key"),
                 "padding": (("value", "key") if kv_pad and kvf else ()) + (("query",) if q_pad
                                                                            else ())}[where]
        name = ch.one(tuple(n for n in names if dr.params.get(n) is not None))
        dr.fills[name] = {**dr.fills[name], SPECIAL: special, WHERE: where,
                          COUNT: ch.int(1, 3)}
    elif value in ("pse_neg_inf", "pse_nan"):
        dr.fills[pse.NAME] = {**dr.fills.get(pse.NAME, {"dist": "normal", "scale": 1.0}),
                                 SPECIAL: "-inf" if value == "pse_neg_inf" else "nan",
                                 WHERE: "attended", COUNT: ch.int(1, 3)}
    elif value in ("antiquant_nan", "antiquant_inf"):
        name = ch.one(_antiquant_floats(dr))
        special = "nan" if value == "antiquant_nan" else ch.one(("inf", "-inf"))
        dr.fills[name] = {**dr.fills[name], SPECIAL: special, COUNT: ch.int(1, 3)}
    elif value == "masked_row":
        dr.fills["atten_mask"] = {**dr.fills.get("atten_mask", {"dist": "bernoulli", "p": 0.2}),
                                  SPECIAL: FULL_ROW, COUNT: ch.int(1, 2)}
    elif value == "overflow":
        for name in ("query", "key"):
            dr.fills[name] = {"dist": "uniform", "scale": OVERFLOW_MAGNITUDE,
                              ROUND: OVERFLOW_MAGNITUDE, REGIME: "overflow"}
        _prefix_follows(dr)
    elif value == "subnormal":
        _, kvf = _float_qkv(dr)
        name = ch.one(tuple(n for n in (("query", "key", "value") if kvf else ("query",))
                            if dr.params.get(n) is not None))
        dtype = dr.q_dtype if name == "query" else dr.kv_dtype
        dr.fills[name] = {"dist": "normal", "scale": SUBNORMAL_SCALE[dtype], REGIME: "subnormal"}
        _prefix_follows(dr)
    elif value == "ties":
        scale = ch.one((1.0, 4.0))
        equal = ch.coin()  # every key zero: a row of equal scores; else few distinct scores
        dr.fills["query"] = {"dist": "uniform", "scale": scale, ROUND: scale, REGIME: "ties"}
        dr.fills["key"] = {"dist": "uniform", "scale": scale,
                           ROUND: 4 * scale if equal else scale, REGIME: "ties"}
        _prefix_follows(dr)


def settle(case: Case) -> Case:
    """The drawn case with each special whose region turned out empty once the seed fixed the
    mask's values (a bernoulli mask masking no key of the valid window, a band masking
    nothing: op/specials.py `unplaced`) dropped, so its `values` label names what the call
    holds (such a case is "finite"); a case without specials is returned as it is."""
    if not has_specials(case.fills):
        return case
    call = case.call(data=False)
    mask = case.params.get("atten_mask")
    if mask is not None:
        call["atten_mask"] = materialise(mask, case.fill("atten_mask"), case.seed, "atten_mask")
    empty = unplaced(case.fills, call)
    if not empty:
        return case
    fills = {n: {k: v for k, v in f.items() if k not in (SPECIAL, WHERE, COUNT)}
             if n in empty else f for n, f in case.fills.items()}
    return Case(params=case.params, fills=fills, seed=case.seed, rules=case.rules)


def _prefix_follows(dr: Draft) -> None:
    """The shared prefix takes the key/value fills it copied (strategies/fills.py qkv)."""
    for kv, prefix in (("key", "key_shared_prefix"), ("value", "value_shared_prefix")):
        if prefix in dr.params:
            dr.fills[prefix] = dict(dr.fills[kv])

