"""Breakers of the `args.*` rules: arguments present, typed and sane (rulebook/args.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

import math

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    bnsd,
    bnsd_qkv,
)
from fia_fuzz.strategies.illegal.breaker import PLAIN_BNSD, Breaker


def _required(draw: st.DrawFn, case: Case) -> Change:
    """value or key dropped (BNSD and TND, where no head count is read off a missing H)."""
    return {draw(st.sampled_from(["value", "key"])): DELETE}


def _attr_type(draw: st.DrawFn, case: Case) -> Change:
    return {"softmax_lse_flag": draw(st.sampled_from([1, 0, "yes"]))}


def _dtype_known(draw: st.DrawFn, case: Case) -> Change:
    """A user mask of an unknown dtype (query/key dtypes have rules of their own)."""
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    return {"atten_mask": TensorSpec((b, 1, s1, s2),
                                     draw(st.sampled_from(["float64", "complex64"])))}


def _shape_sane(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    return {"query": TensorSpec((b, n, -draw(st.integers(1, 4)), d), dt)}


def _overlapping_view(draw: st.DrawFn, case: Case) -> Change:
    """query, key or value as a view with one stride below its contiguous value, from 0 up:
    the view then spans fewer addresses than it has elements, so two of them share one."""
    names = [n for n in ("query", "key", "value") if not case.lazy(n)
             and isinstance(case.params.get(n), TensorSpec) and case.params[n].numel > 0]
    name = draw(st.sampled_from(names))
    t = case.params[name]
    strides = [math.prod(t.shape[i + 1:]) for i in range(t.ndim)]
    dims = [i for i in range(t.ndim) if t.shape[i] > 1]
    if not dims:
        reject()
    i = draw(st.sampled_from(dims))
    strides[i] = draw(st.integers(0, strides[i] - 1))
    return {name: TensorSpec(t.shape, t.dtype, tuple(strides), 0)}


def _values_integral(draw: st.DrawFn, case: Case) -> Change:
    s1 = bnsd(case)[2]
    return {"actual_seq_lengths": [draw(st.sampled_from([0.5, 1.5])) * min(s1, 2)]}


def _memory(draw: st.DrawFn, case: Case) -> Change:
    """Within every documented limit (B, N, D, S) but above the framework's element cap."""
    dt = bnsd(case)[6]
    return bnsd_qkv(65536, 256, draw(st.sampled_from([4, 8])), 512, 256, 4, dt)


#: Rules that a Case (JSON-serialisable TensorSpecs and int lists) cannot violate.
INEXPRESSIBLE = {
    "args.unknown_keyword": "a Case only holds the op's keywords (Case.__post_init__ rejects "
                            "others); call validate(**kwargs) directly to test this rule",
    "args.type": "a Case holds TensorSpecs and int lists only; pass a non-tensor object to "
                 "validate directly to test this rule",
}
#: Breaking cases no backend call can carry: an unknown dtype, negative or host-sized
#: shapes, non-integer lengths that int() would silently repair, a missing positional tensor.
NOT_MATERIALISABLE = {"args.dtype_known", "args.shape_sane", "args.memory",
                      "args.values_integral", "args.required"}

BREAKERS: dict[str, Breaker] = {
    "args.required": Breaker(_required, PLAIN_BNSD,
                             alt=({"layout": "TND"}, {"rope_d": "512", "layout": "BNSD"},
                                  {"antiquant": "separate:1/1", "layout": "BNSD",
                                   "kv_dtype": "int8"},
                                  {"full_quant": True, "layout": "BNSD"})),
    "args.attr_type": Breaker(_attr_type, PLAIN_BNSD),
    "args.dtype_known": Breaker(_dtype_known, PLAIN_BNSD),
    "args.shape_sane": Breaker(_shape_sane, PLAIN_BNSD),
    "args.strides_sane": Breaker(_overlapping_view, {"kv_list": False}),
    "args.values_integral": Breaker(_values_integral, {**PLAIN_BNSD, "branch": "prefill"}),
    "args.memory": Breaker(_memory, PLAIN_BNSD),
}
