"""Every documented form of the op's optional arguments, one coverage axis per argument.

An argument's form is what the docs tell apart: its shape pattern (per-tensor,
per-channel, per-token, per-head, batch or broadcast), the branch it is passed
in where the docs give each branch its own forms (prefill Q_S > 1, decode
Q_S = 1), the antiquant mode it belongs to, and whether it is larger than the
part the op reads (masks, pse and block tables may be). Each argument's module
in `fia_fuzz/op/args/` declares its form axes, what each form implies and how
a case is classified on them; this module gathers them: `argument_forms(case)`
names the form of each argument, `FORM_AXES` lists every documented value, so
`fia-fuzz coverage` shows a form no draw takes as "never reached". Shape
patterns are written in the docs' symbols (`op/shape_forms.py`). The table in
docs/forms.md is this one, with the citations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fia_fuzz.op import args
from fia_fuzz.op.args.mask import mask_extent
from fia_fuzz.op.shape_forms import BRANCHES, OPTIMIZED_MASK, table_oversized

if TYPE_CHECKING:
    from fia_fuzz.op.call import CallView
    from fia_fuzz.op.case import Case

__all__ = ["BRANCHES", "FORM_AXES", "OPTIMIZED_MASK", "argument_forms", "implied_pins",
           "mask_extent", "table_oversized"]

#: axis -> its values, "none" (argument absent) first.
FORM_AXES: args.DerivedDict = args.DerivedDict(args.form_axes)

#: Feature values a form implies, so a form filter steers the draw's earlier decisions.
_IMPLIES: args.DerivedDict = args.DerivedDict(args.form_implications)


def argument_forms(case: Case, v: CallView | None = None) -> dict[str, str]:
    """The documented form each optional argument of `case` takes (FORM_AXES values).
    `v`: the case's view when the caller has built it already."""
    return args.argument_forms(case, case.view() if v is None else v)


def implied_pins(filters: dict[str, Any]) -> dict[str, Any]:
    """The features form filters imply (branch, presence), so draws take them first;
    filters given explicitly win."""
    out: dict[str, Any] = {}
    for axis, value in filters.items():
        if axis not in FORM_AXES or value in ("none", "other"):
            continue
        head = str(value).split(":", 1)[0]
        if head in BRANCHES:
            out["branch"] = head
        if axis in _IMPLIES:
            out.update(_IMPLIES[axis](str(value)))
    return {k: v for k, v in out.items() if k not in filters}
