"""Breakers of the `args.*` rules: arguments present, typed and sane (rulebook/args.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

import math

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.params import TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.tensors import FOREIGN_DTYPES, TensorSpec
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    bnsd,
    bnsd_qkv,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import (
    AQ_BNSD,
    FAMILY_BASE,
    FQ_BNSD,
    PAGED_DENSE,
    PLAIN_BNSD,
    Breaker,
    over_families,
)


def _required(draw: st.DrawFn, case: Case) -> Change:
    """value or key dropped, from a base of any family."""
    return {draw(st.sampled_from(["value", "key"])): DELETE}


def _attr_type(draw: st.DrawFn, case: Case) -> Change:
    """softmax_lse_flag as an int or a string; a falsy one under MLA D 512, which refuses the
    lse (mla.no_extras reads a truthy flag as asked for)."""
    return {"softmax_lse_flag": draw(st.sampled_from([0, ""] if case.view().mla512
                                                     else [1, 0, "yes"]))}


#: dtypes no tensor of the op takes (op.tensors.DTYPES lists the known ones) that an array
#: still holds, so their cases materialise.
UNKNOWN_DTYPES = tuple(FOREIGN_DTYPES)


def _dtype_known(draw: st.DrawFn, case: Case) -> Change:
    """Any tensor the case holds (a tensor list whole), in an unknown dtype: the dtype rules
    of query, key and the rest judge known dtypes only."""
    names = [n for n in TENSOR_ARGS if case.params.get(n) is not None]
    name = draw(st.sampled_from(names))
    return {name: with_dtype(case.params[name], draw(st.sampled_from(UNKNOWN_DTYPES)))}


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
    """One entry of any value argument the case holds (a block table row's too) off int64: a
    half (x + 0.5), a whole float (float(x)) or past INT64_MAX (x + 2**63)."""
    names = [n for n in VALUE_ARGS if case.params.get(n)]
    if not names:
        reject()
    name = draw(st.sampled_from(names))
    how = draw(st.sampled_from(["half", "float", "past int64"]))
    vals = [list(r) for r in case.params[name]] if name == "block_table" else \
        [list(case.params[name])]
    row = vals[draw(st.integers(0, len(vals) - 1))]
    if not row:
        reject()
    i = draw(st.integers(0, len(row) - 1))
    x = row[i]
    row[i] = {"half": x + 0.5, "float": float(x), "past int64": abs(x) + (1 << 63)}[how]
    return {name: vals if name == "block_table" else vals[0]}


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
#: Breaking cases no backend call can carry (illegal/__init__.py says when a case cannot).
NOT_MATERIALISABLE = {
    "args.shape_sane",  # no array has a negative dimension
    "args.memory",  # host-sized by definition: above 2^34 elements
}

BREAKERS: dict[str, Breaker] = {
    "args.required": over_families(_required, "gqa_nz", "packed", "mla", "dense", "antiquant",
                                   "full_quant", "packed_mla"),
    "args.attr_type": over_families(_attr_type, "gqa_nz", "packed", "mla", "dense",
                                    "antiquant", "full_quant", "packed_mla"),
    "args.dtype_known": over_families(_dtype_known, "dense", "antiquant", "full_quant",
                                      "packed", "packed_mla", "mla", "gqa_nz"),
    "args.shape_sane": Breaker(_shape_sane, PLAIN_BNSD, alt=(AQ_BNSD, FQ_BNSD)),
    "args.strides_sane": over_families(_overlapping_view, "dense", "antiquant", "full_quant",
                                       "packed", "packed_mla", "mla", "gqa_nz"),
    # any base, and one of each family that always holds a value argument (paged: a block
    # table; packed: the lengths)
    "args.values_integral": Breaker(_values_integral, alt=(
        PAGED_DENSE, {"antiquant": "separate:0/0", "paged": True},
        *(FAMILY_BASE[f] for f in ("full_quant", "packed", "packed_mla", "mla", "gqa_nz")))),
    "args.memory": Breaker(_memory, PLAIN_BNSD, alt=(FQ_BNSD,)),
}
