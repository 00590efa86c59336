"""Argument-level sanity: known keywords, Python types, sane dimensions.

These are not vendor constraints but the framework's promise that illegal
input is reported as a named violation before anything allocates or indexes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.op.call import INT64_MAX, INT64_MIN, CallView, is_int64
from fia_fuzz.op.params import ATTR_DEFAULTS, TENSOR_ARGS
from fia_fuzz.op.tensors import DTYPES, TensorSpec
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T

#: Refuse descriptions whose data would not fit a host (elements of q+k+v).
MAX_ELEMENTS = 1 << 34


@rule("args.unknown_keyword", "every keyword is a parameter of the op",
      src("MS", "fused_infer_attention_score signature"))
def args_unknown_keyword(c: CallView) -> str | None:
    if c.unknown:
        return f"unknown keyword argument(s) {c.unknown}"
    return None


@rule("args.required", "query, key and value are given",
      src("V4", "aclnnFusedInferAttentionScoreV4GetWorkspaceSize 参数说明"))
def args_required(c: CallView) -> str | None:
    missing = [n for n in ("query", "key", "value")
               if c.raw.get(n) is None or (isinstance(c.raw[n], (list, tuple)) and not c.raw[n])]
    if missing:
        return f"required argument(s) {missing} are None"
    return None


@rule("args.type", "tensor arguments are tensors, value arguments are ints or int tensors",
      src("MS", "关键字参数"))
def args_type(c: CallView) -> str | None:
    if c.bad:
        parts = [f"{n}={repr(b.value)[:60]}: {b.reason}" for n, b in sorted(c.bad.items())]
        return "; ".join(parts)
    return None


@rule("args.attr_type", "scalar attributes have their documented type (ints within int64)",
      src("V2", "算子原型 (REG_OP attrs)"))
def args_attr_type(c: CallView) -> str | None:
    bad = []
    for name, default in ATTR_DEFAULTS.items():
        v = c.attrs[name]
        if isinstance(default, bool):
            ok = isinstance(v, (bool, np.bool_))
        elif isinstance(default, int):
            ok = (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                  and INT64_MIN <= int(v) <= INT64_MAX)
        elif isinstance(default, float):
            ok = (isinstance(v, (int, float, np.integer, np.floating))
                  and not isinstance(v, bool) and bool(np.isfinite(v)))
        else:
            ok = isinstance(v, str)
        if not ok:
            bad.append(f"{name}={v!r} (expected {type(default).__name__})")
    return "; ".join(bad) or None


@rule("args.dtype_known", "every tensor dtype is one the op knows",
      src("V2", "算子原型 (REG_OP TensorType)"))
def args_dtype_known(c: CallView) -> str | None:
    bad = []
    for name in TENSOR_ARGS:
        s = c.specs.get(name)
        for t in s if isinstance(s, list) else [s]:
            if t is not None and t.dtype not in DTYPES:
                bad.append(f"{name}.dtype={t.dtype!r}")
    return ", ".join(bad) + f" not in {list(DTYPES)}" if bad else None


@rule("args.shape_sane", "every dimension is a non-negative int",
      src("SEM", "10. Limits"))
def args_shape_sane(c: CallView) -> str | None:
    bad = []
    for name in TENSOR_ARGS:
        s = c.specs.get(name)
        for t in s if isinstance(s, list) else [s]:
            if t is None:
                continue
            if not isinstance(t.shape, tuple) or any(
                    isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0
                    for d in t.shape):
                bad.append(f"{name}.shape={t.shape!r}")
    return "bad dimension(s): " + ", ".join(bad) if bad else None


@rule("args.strides_sane", "a strided view has one non-negative stride per dimension, a "
                          "non-negative offset, and no two elements at one address",
      src("V4", "参数说明 (非连续Tensor)"))
def args_strides_sane(c: CallView) -> str | None:
    bad = []
    for name in TENSOR_ARGS:
        s = c.specs.get(name)
        for t in s if isinstance(s, list) else [s]:
            if t is None or t.strides is None:
                continue
            why = _view_problem(t.shape, t.strides, t.offset)
            if why:
                bad.append(f"{name} strides={list(t.strides)} offset={t.offset}: {why}")
    return "; ".join(bad) or None


def _view_problem(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> str | None:
    if len(strides) != len(shape):
        return f"{len(strides)} strides for {len(shape)} dimensions"
    if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0
           for x in (*strides, offset)):
        return "strides and offset must be non-negative ints"
    reach = 1  # elements an inner dimension spans; the next stride must clear it
    for n, st in sorted(((n, st) for n, st in zip(shape, strides, strict=True) if n > 1),
                        key=lambda x: x[1]):
        if st < reach:
            return "elements overlap"
        reach = st * n
    return None


@rule("args.values_integral", "value-carrying arguments hold int64 integers only",
      src("MS", "actual_seq_lengths (int64)"))
def args_values_integral(c: CallView) -> str | None:
    bad = []
    for name, vals in c.values.items():
        if vals is None:
            continue
        odd = [v for v in vals if not is_int64(v)]
        if odd:
            bad.append(f"{name} holds non-integers or values outside int64 {odd[:4]!r}")
    return "; ".join(bad) or None


@rule("args.memory", "all tensor descriptions together fit in host memory",
      src("SEM", "10. Limits (S <= 20M, B <= 65536)"))
def args_memory(c: CallView) -> str | None:
    n = c.numel_budget
    if n > MAX_ELEMENTS:
        return f"query+key+value hold {n} elements, above the {MAX_ELEMENTS} this framework allows"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("args.unknown_keyword", "prefill", {"bogus": 1}),
    ("args.required", "prefill", {"value": None}),
    ("args.required", "kvlist", {"key": [], "value": []}),
    ("args.type", "prefill", {"pse_shift": "not a tensor"}),
    ("args.type", "padded", {"query_padding_size": 1.5}),
    ("args.attr_type", "prefill", {"num_heads": "8"}),
    ("args.attr_type", "prefill", {"scale": float("nan")}),
    ("args.attr_type", "masked", {"pre_tokens": 1 << 70}),
    ("args.dtype_known", "prefill", {"query": T(2, 8, 4, 64, dtype="complex64")}),
    ("args.shape_sane", "prefill", {"query": T(2, 8, -4, 64)}),
    ("args.shape_sane", "prefill", {"key": TensorSpec((2, 2, 16.5, 64), "float16")}),
    ("args.strides_sane", "strided", {"key": TensorSpec((2, 2, 16, 64), "float16",
                                                        (2048, 64, 64, 1), 0)}),
    ("args.strides_sane", "strided", {"value": TensorSpec((2, 2, 16, 64), "float16",
                                                          (4096, 2048, 128), 0)}),
    ("args.strides_sane", "strided", {"query": TensorSpec((2, 8, 4, 64), "float16",
                                                          (3072, 256, 64, 1), -1)}),
    ("args.values_integral", "masked", {"actual_seq_lengths": [1, float("nan")]}),
    ("args.values_integral", "masked", {"actual_seq_lengths_kv": [10, 1 << 64]}),
    ("args.memory", "prefill", {"query": T(65536, 8, 4096, 64), "key": T(65536, 2, 16, 64),
                                "value": T(65536, 2, 16, 64)}),
]
