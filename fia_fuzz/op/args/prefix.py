"""key/value_shared_prefix, actual_shared_prefix_len: a KV prefix shared by every batch.

[SEM §6; V2 prefix] Batch 1, the key's layout and dtype, prepended to each
batch's KV; actual_shared_prefix_len (0 <= len <= prefix S) reads part of
it. Masks and pse span prefix + KV S. Forms: present per branch, and the
length's edge (0, partial, full).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, VALUE, Arg, Param, register
from fia_fuzz.op.shape_forms import safe
from fia_fuzz.op.tensors import TensorSpec


def classify(case: Any, v: Any) -> dict[str, Any]:
    p = case.params
    return {"prefix": p.get("key_shared_prefix") is not None,
            "prefix_len": "none" if p.get("key_shared_prefix") is None
            else "given" if p.get("actual_shared_prefix_len") is not None else "absent"}


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    p = case.params
    given = p.get("actual_shared_prefix_len")
    if p.get("key_shared_prefix") is None or given is None:
        len_form = "none"
    else:
        n = int(given[0])
        len_form = "0" if n == 0 else "full" if n == safe(lambda: v.prefix_S) else "partial"
    return {"key_shared_prefix_form": branch if p.get("key_shared_prefix") is not None
            else "none", "actual_shared_prefix_len_form": len_form}


def _like_key(c: Any) -> Any:
    return TensorSpec((1, *c.k0.shape[1:]), c.k0.dtype)


ARG = register(Arg(
    name="prefix",
    params=(Param("key_shared_prefix", TENSOR, alone=_like_key, partner="value_shared_prefix"),
            Param("value_shared_prefix", TENSOR, alone=_like_key),
            Param("actual_shared_prefix_len", VALUE, alone=lambda c: [1])),
    forms={"key_shared_prefix_form": ("none", "prefill", "decode"),
           "actual_shared_prefix_len_form": ("none", "0", "partial", "full")},
    implies={"key_shared_prefix_form": lambda v: {"prefix": True},
             "actual_shared_prefix_len_form": lambda v: {"prefix": True, "prefix_len": "given"}},
    form_of=form_of,
    features={"prefix": (False, True), "prefix_len": ("none", "absent", "given")},
    classify=classify,
    families=("dense", "antiquant"),
    absent={"prefix": False, "prefix_len": "none"},
    empty={"prefix": False, "prefix_len": "none"},
    rules=("prefix",),
    golden=("fia_fuzz.golden.prefix",),
    runners=("fia_fuzz.runners.composition.attend",),
))
