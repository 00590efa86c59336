"""The op's arguments, one module each: add an argument of the op by writing one module.

Each module registers an `Arg` (`op/registry.py`): its keywords, forms, feature
axes and their classifier, the families that may carry it and its draw, and
the names of its rule, golden and runner modules. `MODULES` is the order of
the torch_npu signature (each module's keywords where they first appear), the
order `op/params.py` derives the signature's tuples in. The tables below are
derived from the registry, never restated: `op/params.py` (the keywords and
defaults), `op/forms.py` (FORM_AXES, the implications of a form filter),
`op/features.py` (the argument features of `case.features()`),
`strategies/axes.py` (the feature axes) and `strategies/families.py` (the
family scopes and what an empty case carries).
"""

from __future__ import annotations

from typing import Any

# isort: off
from fia_fuzz.op.args import (
    core,
    pse,
    mask,
    band,
    layout,
    kv_heads,
    sparse,
    precise,
    lengths,
    paging,
    full_quant,
    post_quant,
    antiquant,
    padding,
    lse,
    prefix,
    rope,
    mla_quant,
    sink,
)
# isort: on
from fia_fuzz.op.registry import (
    ARGS,
    ATTR,
    TENSOR,
    VALUE,
    Arg,
    DerivedDict,
    DerivedTuple,
    Param,
    keyword_of,
    of_param,
    params,
    partners,
    register,
    unregister,
    with_role,
)
from fia_fuzz.op.shape_forms import branch_of

__all__ = ["ARGS", "ATTR", "MODULES", "TENSOR", "VALUE", "Arg", "DerivedDict", "DerivedTuple",
           "Param", "argument_forms", "classify", "empty_features", "family_scope",
           "feature_axes", "form_axes", "form_implications", "keyword_of", "keywords", "notes",
           "of_param",
           "params", "partners", "register", "special_forms", "specials", "unregister",
           "with_role"]

MODULES = (core, pse, mask, band, layout, kv_heads, sparse, precise, lengths, paging,
           full_quant, post_quant, antiquant, padding, lse, prefix, rope, mla_quant, sink)


def keywords(kind: str) -> tuple[str, ...]:
    """Every keyword of `kind` (TENSOR, VALUE, ATTR), in signature order."""
    return tuple(p.name for p in params() if p.kind == kind)


def form_axes() -> dict[str, tuple[Any, ...]]:
    """Form axis -> its documented values, "none" first (op/forms.py FORM_AXES)."""
    return {axis: values for a in ARGS.values() for axis, values in a.forms.items()}


def form_implications() -> dict[str, Any]:
    """Form axis -> the features its values imply (a function of the value)."""
    return {axis: fn for a in ARGS.values() for axis, fn in a.implies.items()}


def special_forms() -> frozenset[tuple[str, Any]]:
    """(form axis, value) of every documented special value an argument's `special` draws:
    drawn unfiltered by the profiles with `specials` only (strategies/axes.py
    FILTER_ONLY_IN_SMOKE)."""
    return frozenset((axis, v) for a in ARGS.values() for axis, vals in a.specials.items()
                     for v in vals)


def specials(dr: Any) -> None:
    """Each argument's draw of its documented special values (`Arg.special`), in registry
    order, on a drawn case (`dr`: the strategies' Draft)."""
    for a in ARGS.values():
        if a.special is not None:
            a.special(dr)


def feature_axes() -> dict[str, tuple[Any, ...]]:
    """The arguments' feature axes and their values, the simplest first."""
    return {axis: values for a in ARGS.values() for axis, values in a.features.items()}


def argument_forms(case: Any, v: Any) -> dict[str, str]:
    """The documented form each optional argument of `case` takes (FORM_AXES values);
    `v`: the case's call view."""
    branch = branch_of(v)
    if branch is None:
        return {axis: "other" for axis in form_axes()}
    out: dict[str, str] = {}
    for a in ARGS.values():
        if a.form_of is not None:
            out.update(a.form_of(case, v, branch))
    return out


def classify(case: Any, v: Any) -> dict[str, Any]:
    """The arguments' features of `case` (`v`: its call view), in registry order."""
    out: dict[str, Any] = {}
    for a in ARGS.values():
        if a.classify is not None:
            out.update(a.classify(case, v))
    return out


def family_scope(families: tuple[str, ...]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Family -> the argument feature values it can reach: `absent` for a family outside
    an argument's `families`, then the argument's own `scope` entries."""
    out: dict[str, dict[str, tuple[Any, ...]]] = {f: {} for f in families}
    for a in ARGS.values():
        for f in families:
            if a.families is not None and f not in a.families:
                out[f].update({k: (v,) for k, v in a.absent.items()})
            out[f].update(a.scope.get(f, {}))
    return out


def empty_features() -> dict[str, Any]:
    """The argument feature values an empty query or KV case carries."""
    return {k: v for a in ARGS.values() for k, v in a.empty.items()}


def notes() -> dict[int, str]:
    """The numbered decisions of docs/rules.md the argument modules hold."""
    return {n: text for a in ARGS.values() for n, text in a.notes.items()}


