"""`validate` and `infer_outputs`: the public face of the legality model."""

from __future__ import annotations

from typing import Any

import fia_fuzz.spec.rulebook  # noqa: F401  (registers every rule)
from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.geometry import dense_shape, packed_shape
from fia_fuzz.spec.rules import RULES, IllegalCall, Undetermined, Violation
from fia_fuzz.spec.tensors import TensorSpec


def validate(query: Any = None, key: Any = None, value: Any = None, **kwargs: Any
             ) -> list[Violation]:
    """Every violated rule of this call; an empty list means the call is legal.

    Accepts TensorSpecs, NumPy/ml_dtypes arrays or torch tensors, and Python
    ints/lists for the value-carrying arguments. Never allocates tensor data.
    """
    view = CallView({"query": query, "key": key, "value": value, **kwargs})
    return check_view(view)


def check_view(view: CallView) -> list[Violation]:
    """Run every rule in registration order.

    A check that crashes on input no rule anticipated still yields a Violation
    under its own id (never an exception to the caller); the mutation property
    test in tests/spec/test_robustness.py keeps that fallback unused.
    """
    out: list[Violation] = []
    for r in RULES.values():
        try:
            msg = r.check(view)
        except Undetermined:
            continue
        except (TypeError, ValueError, ArithmeticError, IndexError, KeyError,
                AttributeError) as exc:
            msg = f"argument could not be read ({type(exc).__name__}: {exc})"
        if msg:
            out.append(Violation(r.id, msg, r.source))
    return out


def require_legal(query: Any, key: Any, value: Any, **kwargs: Any) -> CallView:
    """The call's view, or IllegalCall carrying every violation."""
    view = CallView({"query": query, "key": key, "value": value, **kwargs})
    violations = check_view(view)
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


def infer_outputs(query: Any, key: Any, value: Any, **kwargs: Any
                  ) -> tuple[TensorSpec, TensorSpec]:
    """(attention_out, softmax_lse) shape and dtype; IllegalCall for an illegal call."""
    return output_specs(require_legal(query, key, value, **kwargs))
