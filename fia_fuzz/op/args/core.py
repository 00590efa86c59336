"""query, key, value and the attributes every call has: heads, scale.

The op's mandatory inputs [V4 query/key/value, numHeads, scaleValue]. Their
features (layout, dtypes, sizes, branch, GQA class, head dims, fills) are the
core of `op/features.py`; key/value may be a list of tensors (kv_list).

Form `scale_form`: `scale` left out (its default 1.0 [MS scale 默认值为 1.0]), the
default given explicitly, or another value; the special draw leaves a drawn 1.0 out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fia_fuzz.op.registry import ATTR, TENSOR, Arg, Param, register

SCALE_FORM = "scale_form"
DEFAULT_SCALE = 1.0


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    if "scale" not in case.params:
        return {SCALE_FORM: "absent"}
    return {SCALE_FORM: "explicit_default" if case.params["scale"] == DEFAULT_SCALE
            else "set"}


def scale(ch: Any, options: Sequence[float]) -> float:
    """The scale among `options` (one decision, as ever), 1.0 or not as a `scale_form`
    filter needs (`ch`: the strategies' Chooser)."""
    want = ch.pins.get(SCALE_FORM)
    if want is None:
        return float(ch.one(tuple(options)))
    keep = tuple(x for x in options if (x == DEFAULT_SCALE) == (want != "set"))
    return float(ch.one(keep))


def special(dr: Any) -> None:
    """The default scale 1.0 left out where the draw took it [MS scale 默认值为 1.0]."""
    if dr.params.get("scale") == DEFAULT_SCALE and dr.pick_special(
            SCALE_FORM, "explicit_default", {"explicit_default": False, "absent": True}):
        del dr.params["scale"]


ARG = register(Arg(
    name="core",
    params=(Param("query", TENSOR, roles=frozenset({"query_seq"})),
            Param("key", TENSOR, partner="value"), Param("value", TENSOR),
            Param("num_heads", ATTR, 1), Param("scale", ATTR, DEFAULT_SCALE)),
    forms={SCALE_FORM: ("absent", "explicit_default", "set")},
    form_of=form_of,
    special=special,
    specials={SCALE_FORM: ("absent",)},
    rules=("args", "dtype", "gqa", "dims", "kvlist"),
    golden=("fia_fuzz.golden.core",),
    runners=("fia_fuzz.runners.composition.attend",),
))
