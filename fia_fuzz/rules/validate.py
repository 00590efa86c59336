"""`validate` and `infer_outputs`: the public face of the legality model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.rules import profiles
from fia_fuzz.rules.rule import IllegalCall, Rule, Violation

if TYPE_CHECKING:
    from fia_fuzz.op.case import Case


def validate(query: Any = None, key: Any = None, value: Any = None, *,
             rules: str = profiles.DEFAULT, **kwargs: Any) -> list[Violation]:
    """Every violated rule of this call under the rule profile `rules`; empty means legal.

    Accepts TensorSpecs, NumPy/ml_dtypes arrays or torch tensors, and Python
    ints/lists for the value-carrying arguments. Never allocates tensor data.
    `rules` names a profile of `fia_fuzz.rules.profiles` ("docs", "atlas-a2").
    """
    view = CallView({"query": query, "key": key, "value": value, **kwargs})
    return check_view(view, rules)


def _verdict(r: Rule, view: CallView) -> str | None:
    try:
        return r.check(view)
    except Undetermined:
        return None
    except (TypeError, ValueError, ArithmeticError, IndexError, KeyError,
            AttributeError) as exc:
        return f"argument could not be read ({type(exc).__name__}: {exc})"


def check_view(view: CallView, rules: str = profiles.DEFAULT) -> list[Violation]:
    """Run every rule of the profile `rules` in its evaluation order.

    A check that crashes on input no rule anticipated still yields a Violation
    under its own id (never an exception to the caller); the mutation property
    test in tests/rules/test_robustness.py keeps that fallback unused. A
    profile's `accept_when` shortcut, once the argument rules pass, accepts
    the call without the rest.
    """
    profile = profiles.get(rules)
    shortcut = profile.own.get(profile.accept_when) if profile.accept_when else None
    out: list[Violation] = []
    for r in profile.rules():
        if shortcut is not None and not r.id.startswith("args."):
            if not out and _verdict(shortcut, view):
                return []
            shortcut = None
        msg = _verdict(r, view)
        if msg:
            replaced = profile.replaces(r.id)
            if replaced:
                msg = f"{msg} [{profile.name} rule, in place of {', '.join(replaced)}]"
            out.append(Violation(r.id, msg, r.source))
    return out


def require_legal(query: Any, key: Any, value: Any, *, rules: str = profiles.DEFAULT,
                  **kwargs: Any) -> CallView:
    """The call's view, or IllegalCall carrying every violation under the profile `rules`."""
    view = CallView({"query": query, "key": key, "value": value, **kwargs})
    violations = check_view(view, rules)
    if violations:
        raise IllegalCall(violations)
    return view


def infer_outputs(query: Any, key: Any, value: Any, *, rules: str = profiles.DEFAULT,
                  **kwargs: Any) -> tuple[TensorSpec, TensorSpec]:
    """(attention_out, softmax_lse) shape and dtype; IllegalCall for a call illegal under
    the rule profile `rules`."""
    return output_specs(require_legal(query, key, value, rules=rules, **kwargs))


def case_violations(case: Case) -> list[Violation]:
    """Every rule of the case's own profile (`case.rules`) that its call breaks; empty:
    legal. An unknown profile name raises ValueError."""
    return check_view(case.view(), case.rules)
