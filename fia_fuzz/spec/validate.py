"""`validate` and `infer_outputs`: the public face of the legality model."""

from __future__ import annotations

from typing import Any

from fia_fuzz.spec import profiles
from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.geometry import dense_shape, packed_shape
from fia_fuzz.spec.rules import IllegalCall, Rule, Undetermined, Violation
from fia_fuzz.spec.tensors import TensorSpec


def validate(query: Any = None, key: Any = None, value: Any = None, *,
             rules: str = profiles.DEFAULT, **kwargs: Any) -> list[Violation]:
    """Every violated rule of this call under the rule profile `rules`; empty means legal.

    Accepts TensorSpecs, NumPy/ml_dtypes arrays or torch tensors, and Python
    ints/lists for the value-carrying arguments. Never allocates tensor data.
    `rules` names a profile of `fia_fuzz.spec.profiles` ("docs", "atlas-a2").
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
    test in tests/spec/test_robustness.py keeps that fallback unused. A
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


def output_specs(view: CallView) -> tuple[TensorSpec, TensorSpec]:
    """(attention_out, softmax_lse) for a call already known to be legal.

    attention_out: the output layout of input_layout with D = Dv [V4 attentionOut];
    int8 with quant_scale2, float16 for an int8 query (query_rope's dtype, i.e.
    bfloat16, for MLA full quant [V4 MLA 全量化 attention BFLOAT16]), else the
    query dtype. softmax_lse: (B, N, Q_S, 1), (T, N, 1) for TND/NTD_TND [V4
    softmaxLse]; an empty (0,) placeholder without softmax_lse_flag, as torch_npu
    returns (the docs say shape [1]: docs/rules.md disagreement 32).
    """
    out_dtype = view.out_dtype
    n, dv = view.N, view.Dv
    out_layout = view.out_layout
    if view.packed:
        t = view.q_dims["T"]
        out_shape = packed_shape(out_layout, t, n, dv)
        lse_shape: tuple[int, ...] = (t, n, 1)
    else:
        b, s1 = view.B, view.S1
        out_shape = dense_shape(out_layout, b, n, s1, dv)
        lse_shape = (b, n, s1, 1)
    if not view.attrs["softmax_lse_flag"]:
        lse_shape = (0,)
    return TensorSpec(out_shape, out_dtype), TensorSpec(lse_shape, "float32")


def infer_outputs(query: Any, key: Any, value: Any, *, rules: str = profiles.DEFAULT,
                  **kwargs: Any) -> tuple[TensorSpec, TensorSpec]:
    """(attention_out, softmax_lse) shape and dtype; IllegalCall for a call illegal under
    the rule profile `rules`."""
    return output_specs(require_legal(query, key, value, rules=rules, **kwargs))
