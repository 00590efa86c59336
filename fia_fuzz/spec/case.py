"""The case model: one call of the op, data-free, with a recipe for its data.

A Case is what strategies draw, campaigns record, bundles store and users
paste into bug reports. It holds the canonical keyword arguments with
TensorSpecs in place of tensors (so `validate(**case.params)` works as is),
a fill recipe per tensor and a seed. `call()` materialises it
deterministically; `case_id` is a hash of its canonical JSON, stable across
machines and runs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.params import ALL_ARGS, ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.spec.rules import Undetermined
from fia_fuzz.spec.tensors import TensorSpec
from fia_fuzz.spec.values import default_fill, materialise

#: dtype of the value-carrying arguments when passed as tensors (torch_npu schema).
VALUE_TENSOR_DTYPES = {"block_table": np.int32, "query_padding_size": np.int64,
                       "kv_padding_size": np.int64}
SCHEMA_VERSION = 1


def _encode(name: str, value: Any) -> Any:
    if name in TENSOR_ARGS:
        if isinstance(value, (list, tuple)):
            return [v.to_dict() for v in value]
        return value.to_dict()
    if name in VALUE_ARGS:
        return [list(r) for r in value] if name == "block_table" else list(value)
    return value


def _decode(name: str, value: Any) -> Any:
    if name in TENSOR_ARGS:
        if isinstance(value, list):
            return [TensorSpec.from_dict(v) for v in value]
        return TensorSpec.from_dict(value)
    if name in VALUE_ARGS:
        return [list(r) for r in value] if name == "block_table" else list(value)
    return value


@dataclass(frozen=True)
class Case:
    """Canonical kwargs (TensorSpec for tensors), fill recipes and a data seed."""

    params: dict[str, Any]
    fills: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.params) - set(ALL_ARGS))
        if unknown:
            raise ValueError(f"Case has unknown parameter(s) {unknown}")

    # ---- identity and serialisation -------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "version": SCHEMA_VERSION,
            "params": {k: _encode(k, v) for k, v in sorted(self.params.items())
                       if v is not None},
            "fills": {k: dict(sorted(v.items())) for k, v in sorted(self.fills.items())},
            "seed": int(self.seed),
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent,
                          separators=(",", ":") if indent is None else None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        params = {k: _decode(k, v) for k, v in d["params"].items()}
        return cls(params=params, fills={k: dict(v) for k, v in d.get("fills", {}).items()},
                   seed=int(d.get("seed", 0)))

    @classmethod
    def from_json(cls, text: str) -> Case:
        return cls.from_dict(json.loads(text))

    @property
    def case_id(self) -> str:
        """16 hex digits of the SHA-256 of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.case_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Case) and self.to_json() == other.to_json()

    # ---- use ----------------------------------------------------------------
    def specs(self) -> dict[str, Any]:
        """The canonical kwargs with TensorSpecs, ready for `validate(**case.specs())`."""
        return dict(self.params)

    def fill(self, name: str) -> dict[str, Any]:
        spec = self.params[name]
        first = spec[0] if isinstance(spec, list) else spec
        return self.fills.get(name) or default_fill(name, first)

    def call(self) -> dict[str, Any]:
        """The canonical kwargs with NumPy arrays; bit-identical for the same case."""
        out: dict[str, Any] = {}
        for name, value in self.params.items():
            if value is None:
                continue
            if name in TENSOR_ARGS:
                if isinstance(value, list):
                    out[name] = [materialise(s, self.fill(name), self.seed, name, i)
                                 for i, s in enumerate(value)]
                else:
                    out[name] = materialise(value, self.fill(name), self.seed, name)
            elif name in VALUE_TENSOR_DTYPES:
                out[name] = np.asarray(value, dtype=VALUE_TENSOR_DTYPES[name])
            elif name in VALUE_ARGS:
                out[name] = [int(v) for v in value]
            else:
                out[name] = value
        return out

    def view(self) -> CallView:
        return CallView(self.specs())

    def attr(self, name: str) -> Any:
        return self.params.get(name, ATTR_DEFAULTS.get(name))

    def features(self) -> dict[str, Any]:
        """Flat, report-ready description of which features this case exercises."""
        return case_features(self)


def _safe(fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except (Undetermined, KeyError, ValueError, TypeError):
        return default


def _length_form(values: list[int] | None, batch: int | None) -> str:
    if values is None:
        return "absent"
    if len(values) == 1:
        return "one"
    if batch is not None and len(values) == batch:
        return "per_batch"
    return "longer"


def case_features(case: Case) -> dict[str, Any]:
    v = case.view()
    p = case.params
    q = v.spec("query")
    k = v.spec("key")
    b = _safe(lambda: v.B)
    s1 = _safe(lambda: v.S1)
    feats: dict[str, Any] = {
        "layout": case.attr("input_layout"),
        "in_layout": _safe(lambda: v.in_layout),
        "out_layout": _safe(lambda: v.out_layout),
        "q_dtype": q.dtype if q else None,
        "kv_dtype": k.dtype if k else None,
        "branch": None if s1 is None else ("decode" if _safe(lambda: v.decode) else "prefill"),
        "B": b,
        "N": _safe(lambda: v.N),
        "KV_N": _safe(lambda: v.KV_N),
        "G": _safe(lambda: v.G),
        "S1": s1,
        "S2": _safe(lambda: v.S2),
        "D": _safe(lambda: v.D),
        "Dv": _safe(lambda: v.Dv),
        "kv_list": v.is_kv_list,
        "paged": v.paged,
        "block_size": case.attr("block_size") if v.paged else 0,
        "sparse_mode": case.attr("sparse_mode"),
        "mask": p["atten_mask"].dtype if p.get("atten_mask") is not None else "none",
        "pse": p.get("pse_shift") is not None,
        "actual_q": _length_form(p.get("actual_seq_lengths"), b),
        "actual_kv": _length_form(p.get("actual_seq_lengths_kv"), b),
        "q_padding": p.get("query_padding_size") is not None,
        "kv_padding": p.get("kv_padding_size") is not None,
        "prefix": p.get("key_shared_prefix") is not None,
        "rope": p.get("query_rope") is not None,
        "antiquant": _antiquant_form(p, case),
        "full_quant": q is not None and q.dtype == "int8",
        "post_quant": p.get("quant_scale2") is not None,
        "sink": p.get("learnable_sink") is not None,
        "lse": bool(case.attr("softmax_lse_flag")),
        "inner_precise": case.attr("inner_precise"),
        "q_dist": case.fill("query").get("dist") if q else None,
    }
    return feats


def _antiquant_form(p: dict[str, Any], case: Case) -> str:
    if p.get("key_antiquant_scale") is not None:
        return f"separate:{case.attr('key_antiquant_mode')}/{case.attr('value_antiquant_mode')}"
    if p.get("antiquant_scale") is not None:
        return f"combined:{case.attr('antiquant_mode')}"
    return "none"
