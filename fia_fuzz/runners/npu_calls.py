"""What each Ascend front door of the op receives for one canonical call, as plain data.

The mapping is split from the device call so it can be checked without an
NPU: `to_api(api, call)` turns canonical kwargs (NumPy arrays, int lists) into
the positional and keyword arguments of that API, still as NumPy arrays,
Python lists and scalars; `refusal(api, view)` names what the API has no way
to express. The front doors (names as in torch_npu 2.13's
npu_native_functions_by_codegen.yaml and TorchAir's `air::` schema, seeds
003/004, fia-semantics.md §1):

- `npu`: torch_npu.npu_fused_infer_attention_score (canonical names; actual
  lengths are SymInt[] int lists; key/value single tensors).
- `npu-v2`: torch_npu.npu_fused_infer_attention_score_v2 (renamed keywords,
  no prefix, padding, combined antiquant or dequant_scale1/2).
- `torchair`: torchair.ops.npu_fused_infer_attention_score_v2 in graph mode;
  v2 names with actual_seq_qlen/kvlen as int64 device tensors (seed 004).
- `mindspore`: mindspore.ops.fused_infer_attention_score (canonical names
  without rope, sink or query dequant; layouts BSH/BSND/BNSD/BNSD_BSND; uint64
  dequant scales; key/value may be lists).

Every attribute is passed explicitly: the APIs' defaults differ from the
canonical ones (torch_npu and TorchAir default inner_precise to 0, the
canonical/REG_OP default is 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.call import CallView, int64_values
from fia_fuzz.op.params import ATTR_DEFAULTS, CANONICAL_TO_V2

APIS: dict[str, str] = {
    "npu": "torch_npu.npu_fused_infer_attention_score",
    "npu-v2": "torch_npu.npu_fused_infer_attention_score_v2",
    "torchair": "torchair.ops.npu_fused_infer_attention_score_v2",
    "mindspore": "mindspore.ops.fused_infer_attention_score",
}

#: Integer-list arguments (SymInt[] in torch_npu, int tuples in MindSpore).
LENGTH_ARGS = ("actual_seq_lengths", "actual_seq_lengths_kv", "actual_shared_prefix_len")
#: Value arguments passed as tensors, with their dtype (torch_npu schema, seed 003).
VALUE_TENSORS = {"block_table": np.int32, "query_padding_size": np.int64,
                 "kv_padding_size": np.int64}
#: KV-shaped tensors that may hold int4 values.
INT4_ARGS = ("key", "value", "key_shared_prefix", "value_shared_prefix")
#: uint64-carrying dequant scales [SEM §8].
UINT64_SCALES = ("dequant_scale1", "dequant_scale2")

_V1_ABSENT = {
    "learnable_sink": "torch_npu v1 has no learnable_sink (v2 only)",
    "dequant_scale_query": "torch_npu v1 has no dequant_scale_query (v2 only)",
}
_V2_ABSENT = {
    "key_shared_prefix": "v2 has no key_shared_prefix/value_shared_prefix tensors",
    "value_shared_prefix": "v2 has no key_shared_prefix/value_shared_prefix tensors",
    "actual_shared_prefix_len": "v2 has no actual_shared_prefix_len",
    "query_padding_size": "v2 has no query_padding_size (left padding)",
    "kv_padding_size": "v2 has no kv_padding_size (left padding)",
    "antiquant_scale": "v2 has no combined antiquant_scale (only dequant_scale_key/value)",
    "antiquant_offset": "v2 has no combined antiquant_offset",
    "dequant_scale1": "v2 has no dequant_scale1 (full quant is dequant_scale_query/key/value"
                      " + quant_scale_p, a different parametrisation)",
    "quant_scale1": "v2 has no quant_scale1 (its quant_scale_p is not the same scale)",
    "dequant_scale2": "v2 has no dequant_scale2",
}
_MS_ABSENT = {
    "query_rope": "MindSpore has no query_rope (seed 003)",
    "key_rope": "MindSpore has no key_rope (seed 003)",
    "key_rope_antiquant_scale": "MindSpore has no key_rope_antiquant_scale (seed 003)",
    "dequant_scale_query": "MindSpore has no dequant_scale_query (seed 003)",
    "learnable_sink": "MindSpore has no learnable_sink (seed 003)",
    "key_shared_prefix": "MindSpore documents the shared prefix as reserved, not enabled"
                         " (seed 003)",
    "value_shared_prefix": "MindSpore documents the shared prefix as reserved, not enabled"
                           " (seed 003)",
    "actual_shared_prefix_len": "MindSpore documents the shared prefix as reserved, not"
                                " enabled (seed 003)",
}
_MS_LAYOUTS = ("BSH", "BSND", "BNSD", "BNSD_BSND")

#: Scalar attributes of each API, canonical name -> the API's name.
_V1_ATTRS = [k for k in ATTR_DEFAULTS if k != "query_quant_mode"]
_V2_ATTRS = ["num_heads", "num_key_value_heads", "scale", "pre_tokens", "next_tokens",
             "input_layout", "sparse_mode", "block_size", "query_quant_mode",
             "key_antiquant_mode", "value_antiquant_mode", "inner_precise", "softmax_lse_flag"]


@dataclass(frozen=True)
class ApiCall:
    """Positional tensors and keywords one front door receives, device-free."""

    api: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


class Unexpressible(ValueError):
    """The canonical call uses something the API has no argument for."""


def refusal(api: str, view: CallView) -> str | None:
    """Why `api` cannot receive this call, or None."""
    if api not in APIS:
        raise KeyError(f"unknown API {api!r}; known: {sorted(APIS)}")
    absent = {"npu": _V1_ABSENT, "mindspore": _MS_ABSENT}.get(api, _V2_ABSENT)
    used = [name for name in absent if view.has(name)]
    if used:
        return f"{APIS[api]}: {absent[used[0]]}"
    if api == "npu" and view.attrs["query_quant_mode"]:
        return f"{APIS[api]}: torch_npu v1 has no query_quant_mode (v2 only)"
    if api in ("npu", "npu-v2", "torchair") and view.is_kv_list:
        return f"{APIS[api]}: its schema takes key/value as one Tensor, not a tensor list"
    if api in ("npu-v2", "torchair") and view.attrs["antiquant_mode"] and \
            view.has("antiquant_scale"):
        return f"{APIS[api]}: v2 has no antiquant_mode"
    if api == "mindspore":
        layout = view.attrs["input_layout"]
        if layout not in _MS_LAYOUTS:
            return f"{APIS[api]}: input_layout {layout!r} is not one of {_MS_LAYOUTS} (seed 003)"
        if any(_is_int4(view.spec(n)) for n in ("key", "value")):
            return f"{APIS[api]}: key/value dtypes are float16/bfloat16/int8 only (seed 003)"
    return None


def _is_int4(spec: Any) -> bool:
    return spec is not None and spec.dtype in ("int4", "int32")


def pack_int4(a: np.ndarray) -> np.ndarray:
    """int4 values as int32 words of 8 (element 0 in the lowest nibble; last dim / 8).

    torch has no int4 dtype; torch_npu and TorchAir take int4 KV as int32 words
    (TorchAir's converter bitcasts int32 KV to DT_INT4 with the last dim x 8).
    """
    if a.dtype == np.int32:
        return a
    v = a.astype(np.int8).astype(np.int64)
    groups = (v & 0xF).reshape(*v.shape[:-1], -1, 8).astype(np.uint64)
    words = (groups << (np.arange(8, dtype=np.uint64) * np.uint64(4))).sum(axis=-1)
    return words.astype(np.uint32).view(np.int32)


def encode_uint64_scale(a: np.ndarray) -> np.ndarray:
    """fp32 scales in the uint64 form: top 19 bits of the fp32, bit 46 set [SEM §8]."""
    if a.dtype == np.uint64:
        return a
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return (bits & np.uint64(0xFFFFE000)) | np.uint64(1 << 46)


def _tensor(name: str, value: Any, api: str) -> Any:
    if isinstance(value, (list, tuple)):
        return [_tensor(name, v, api) for v in value]
    a = np.asarray(value)
    if name in INT4_ARGS and api != "mindspore" and a.dtype == np.dtype(ml_dtypes.int4):
        return pack_int4(a)
    if name in UINT64_SCALES and api == "mindspore":
        return encode_uint64_scale(a)
    return a


def _attrs(call: dict[str, Any], names: list[str], rename: dict[str, str]) -> dict[str, Any]:
    out = {}
    for name in names:
        value = call.get(name)
        out[rename.get(name, name)] = ATTR_DEFAULTS[name] if value is None else value
    return out


def to_api(api: str, call: dict[str, Any]) -> ApiCall:
    """The arguments `api` receives for canonical `call` (Unexpressible if it cannot)."""
    view = CallView(call)
    why = refusal(api, view)
    if why:
        raise Unexpressible(why)
    v2 = api in ("npu-v2", "torchair")
    rename = CANONICAL_TO_V2 if v2 else {}
    kwargs: dict[str, Any] = {}
    for name, value in call.items():
        if value is None or name in ATTR_DEFAULTS or name in ("query", "key", "value"):
            continue
        if name == "antiquant_mode":
            continue
        key = rename.get(name, name)
        if name in (*LENGTH_ARGS, *VALUE_TENSORS) and not int64_values(value):
            kwargs[key] = value  # as written: the API's own argument parser judges it
        elif name in LENGTH_ARGS:
            ints = [int(x) for x in np.asarray(value).reshape(-1)]
            kwargs[key] = np.asarray(ints, np.int64) if api == "torchair" else ints
        elif name in VALUE_TENSORS:
            kwargs[key] = np.asarray(value, VALUE_TENSORS[name])
        else:
            kwargs[key] = _tensor(name, value, api)
    kwargs.update(_attrs(call, _V2_ATTRS if v2 else _V1_ATTRS, rename))
    # a missing one goes as None (args.required): the API's own parser refuses it
    args = tuple(None if call.get(n) is None else _tensor(n, call[n], api)
                 for n in ("query", "key", "value"))
    return ApiCall(APIS[api], args, kwargs)
