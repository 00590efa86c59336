"""dequant_scale1 / quant_scale1 / dequant_scale2: full int8 quantisation of q/k/v.

[V4 §INT8, SEM §8] int8 query, key and value with per-tensor dequant
scales of Q.K^T and P.V and the quant scale of P (float32, or uint64 packed
scales). Features: `full_quant` (an int8 query) and the dequant scales'
dtype (`deq_dtype`, which MLA's dequant_scale_query also sets).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.tensors import TensorSpec

_SCALE = TensorSpec((1,), "float32")


def _deq_dtype(p: dict[str, Any]) -> str:
    for name in ("dequant_scale1", "dequant_scale_query"):
        if p.get(name) is not None:
            return p[name].dtype
    return "none"


def classify(case: Any, v: Any) -> dict[str, Any]:
    q = v.spec("query")
    return {"full_quant": q is not None and q.dtype == "int8",
            "deq_dtype": _deq_dtype(case.params)}


_OFF = {"full_quant": (False,), "deq_dtype": ("none",)}

ARG = register(Arg(
    name="full_quant",
    params=(Param("dequant_scale1", TENSOR, alone=lambda c: _SCALE),
            Param("quant_scale1", TENSOR, alone=lambda c: _SCALE),
            Param("dequant_scale2", TENSOR, alone=lambda c: _SCALE)),
    features={"full_quant": (False, True), "deq_dtype": ("none", "float32", "uint64")},
    classify=classify,
    scope={"dense": _OFF, "antiquant": _OFF, "full_quant": {"full_quant": (True,)},
           "packed": _OFF, "mla": {"full_quant": (False, True),
                                   "deq_dtype": ("none", "float32")},
           "gqa_nz": _OFF, "workloads": {"full_quant": (False,)}},
    rules=("quant",),
    golden=("fia_fuzz.golden.quant",),
    runners=("fia_fuzz.runners.composition.limits",),
))
