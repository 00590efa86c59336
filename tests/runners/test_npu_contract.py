"""The NPU runners' arguments bind against the op's REAL schemas, with no NPU.

The torch_npu wheel is downloaded once, not installed (npu_wheel.py). Its
schemas are read from the zip:
`torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml` for the eager v1/v2
ops and TorchAir's `lib.define(...)` of `air::npu_fused_infer_attention_score_v2`,
and parsed with `torch._C.parse_schema`. MindSpore is checked with
`inspect.signature` where it is installed.
"""

from __future__ import annotations

import ast
import inspect
import zipfile
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from npu_wheel import TORCHAIR_V2, torch_npu_wheel, yaml_schema

from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.params import ALL_ARGS, CANONICAL_TO_V2
from fia_fuzz.runners import get_runner
from fia_fuzz.runners.npu_calls import APIS, ApiCall, Unexpressible, refusal, to_api
from fia_fuzz.strategies import cases

torch = pytest.importorskip("torch")

#: torch_npu release matching the locked torch (requirements.lock pins torch 2.13.0).
TORCH_NPU_VERSION = "2.13.0"


@pytest.fixture(scope="session")
def schemas() -> dict[str, Any]:
    """api -> parsed FunctionSchema, all read from the downloaded wheel."""
    with zipfile.ZipFile(torch_npu_wheel(TORCH_NPU_VERSION)) as z:
        found = {api: torch._C.parse_schema(yaml_schema(z, op)) for api, op in
                 (("npu", "npu_fused_infer_attention_score"),
                  ("npu-v2", "npu_fused_infer_attention_score_v2"))}
        air_src = z.read(TORCHAIR_V2).decode()
    defines = [node.args[0].value for node in ast.walk(ast.parse(air_src))
               if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "define"]
    assert len(defines) == 1, f"expected one lib.define in {TORCHAIR_V2}"
    found["torchair"] = torch._C.parse_schema(" ".join(defines[0].replace("\\", " ").split()))
    return found


def _fits(t: Any, v: Any) -> bool:
    """Would a value of this (mapped, NumPy-level) kind bind to schema type t?"""
    C = torch._C
    if isinstance(t, C.OptionalType):
        return v is None or _fits(t.getElementType(), v)
    if isinstance(t, C.TensorType):
        return isinstance(v, np.ndarray)
    if isinstance(t, C.ListType):
        return isinstance(v, list) and all(_fits(t.getElementType(), x) for x in v)
    if isinstance(t, (C.IntType, C.SymIntType)):
        return isinstance(v, int) and not isinstance(v, bool)
    if isinstance(t, C.FloatType):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if isinstance(t, C.BoolType):
        return isinstance(v, bool)
    if isinstance(t, C.StringType):
        return isinstance(v, str)
    return False


def bind(schema: Any, call: ApiCall) -> list[str]:
    """Everything that would not bind: arity, unknown names, wrong kinds, missing required."""
    problems = []
    positional = [a for a in schema.arguments if not a.kwarg_only]
    keywords = {a.name: a for a in schema.arguments if a.kwarg_only}
    if len(call.args) != len(positional):
        problems.append(f"{len(call.args)} positional, schema has {len(positional)}")
    for a, v in zip(positional, call.args, strict=False):
        if not _fits(a.type, v):
            problems.append(f"{a.name}: {type(v).__name__} does not fit {a.type}")
    for name, v in call.kwargs.items():
        if name not in keywords:
            problems.append(f"{name}: not a keyword of {schema.name}")
        elif not _fits(keywords[name].type, v):
            problems.append(f"{name}={v!r:.60} does not fit {keywords[name].type}")
    for name, a in keywords.items():
        if not a.has_default_value() and name not in call.kwargs:
            problems.append(f"{name}: required and not passed")
    return problems


# ---- canonical calls that reach every argument ---------------------------------

def _a(shape: tuple[int, ...], dtype: Any = np.float16) -> np.ndarray:
    return np.zeros(shape, dtype)


def _calls() -> dict[str, dict[str, Any]]:
    """Small canonical calls, one per feature family (values do not matter here)."""
    plain = {"query": _a((2, 3, 64)), "key": _a((2, 5, 64)), "value": _a((2, 5, 64)),
             "num_heads": 2}
    bnsd = {"query": _a((2, 4, 3, 16)), "key": _a((2, 2, 5, 16)), "value": _a((2, 2, 5, 16)),
            "num_heads": 4, "num_key_value_heads": 2, "input_layout": "BNSD"}
    decode = {**bnsd, "query": _a((2, 4, 1, 16))}
    int8_kv = {"key": _a((2, 2, 5, 64), np.int8), "value": _a((2, 2, 5, 64), np.int8),
               "query": _a((2, 4, 1, 64))}
    return {
        "plain": plain,
        "attrs": {**bnsd, "scale": 0.25, "pre_tokens": 3, "next_tokens": 0, "sparse_mode": 4,
                  "inner_precise": 0, "softmax_lse_flag": True,
                  "atten_mask": _a((2048, 2048), np.bool_), "pse_shift": _a((1, 4, 3, 5))},
        "lengths": {**bnsd, "actual_seq_lengths": [3, 2], "actual_seq_lengths_kv": [5, 1]},
        "left_padding": {**bnsd, "actual_seq_lengths": [2, 2], "actual_seq_lengths_kv": [4, 3],
                         "query_padding_size": np.array([1], np.int64),
                         "kv_padding_size": np.array([0, 1], np.int64)},
        "paged": {**decode, "key": _a((4, 16, 32)), "value": _a((4, 16, 32)),
                  "block_table": np.array([[0, 1], [2, 3]], np.int32), "block_size": 16,
                  "actual_seq_lengths_kv": [20, 9]},
        "prefix": {**bnsd, "key_shared_prefix": _a((1, 2, 4, 16)),
                   "value_shared_prefix": _a((1, 2, 4, 16)), "actual_shared_prefix_len": [3]},
        "antiquant_combined": {**bnsd, **int8_kv, "antiquant_scale": _a((2, 2, 1, 64)),
                               "antiquant_offset": _a((2, 2, 1, 64))},
        "antiquant_per_token": {**bnsd, **int8_kv, "antiquant_scale": _a((2, 2, 5), np.float32),
                                "antiquant_mode": 1},
        "antiquant_separate": {**bnsd, **int8_kv,
                               "key_antiquant_scale": _a((2, 2, 5), np.float32),
                               "value_antiquant_scale": _a((2, 2, 5), np.float32),
                               "key_antiquant_offset": _a((2, 2, 5), np.float32),
                               "value_antiquant_offset": _a((2, 2, 5), np.float32),
                               "key_antiquant_mode": 3, "value_antiquant_mode": 3},
        "int4": {**bnsd, "query": _a((2, 4, 1, 64)),
                 "key": _a((2, 2, 5, 64), ml_dtypes.int4),
                 "value": _a((2, 2, 5, 64), ml_dtypes.int4),
                 "key_antiquant_scale": _a((1, 2, 1, 64)),
                 "value_antiquant_scale": _a((1, 2, 1, 64))},
        "full_quant": {**bnsd, "query": _a((2, 4, 3, 32), np.int8),
                       "key": _a((2, 2, 5, 32), np.int8), "value": _a((2, 2, 5, 32), np.int8),
                       "dequant_scale1": _a((1,), np.uint64), "quant_scale1": _a((1,), np.float32),
                       "dequant_scale2": _a((1,), np.float32),
                       "quant_scale2": _a((1,), np.float32),
                       "quant_offset2": _a((1,), np.float32)},
        "post_quant": {**bnsd, "quant_scale2": _a((4, 16), np.float32),
                       "quant_offset2": _a((4, 16), np.float32)},
        "rope": {**decode, "query": _a((2, 4, 1, 512)), "key": _a((2, 1, 5, 512)),
                 "value": _a((2, 1, 5, 512)), "num_key_value_heads": 1,
                 "query_rope": _a((2, 4, 1, 64)), "key_rope": _a((2, 1, 5, 64)),
                 "key_rope_antiquant_scale": _a((1,), np.float32)},
        "sink": {**bnsd, "learnable_sink": _a((4,), np.float32)},
        "query_quant": {**bnsd, "dequant_scale_query": _a((2, 4, 3), np.float32),
                        "query_quant_mode": 3},
        "packed": {"query": _a((6, 2, 16)), "key": _a((9, 2, 16)), "value": _a((9, 2, 16)),
                   "num_heads": 2, "input_layout": "TND_NTD", "actual_seq_lengths": [2, 6],
                   "actual_seq_lengths_kv": [4, 9]},
        "tensor_list": {**plain, "query": _a((2, 1, 64)), "key": [_a((1, 5, 64)), _a((1, 7, 64))],
                        "value": [_a((1, 5, 64)), _a((1, 7, 64))]},
    }


CALLS = _calls()
TORCH_APIS = ("npu", "npu-v2", "torchair")


def _map(api: str, call: dict[str, Any]) -> ApiCall | str:
    try:
        return to_api(api, call)
    except Unexpressible as exc:
        return str(exc)


@pytest.mark.parametrize("api", TORCH_APIS)
@pytest.mark.parametrize("feature", sorted(CALLS))
def test_mapped_arguments_bind_to_the_real_schema(schemas: dict[str, Any], api: str,
                                                  feature: str) -> None:
    mapped = _map(api, CALLS[feature])
    if isinstance(mapped, str):
        assert APIS[api] in mapped   # refused, with the API and the reason named
        return
    assert bind(schemas[api], mapped) == []


def test_binding_catches_wrong_names_and_kinds(schemas: dict[str, Any]) -> None:
    v1 = to_api("npu", CALLS["lengths"])            # v1 keywords against the v2 schema
    problems = bind(schemas["npu-v2"], v1)
    assert any("actual_seq_lengths:" in p for p in problems)
    assert any("num_heads:" in p for p in problems)
    v2 = to_api("npu-v2", CALLS["plain"])
    bad = ApiCall(v2.api, v2.args, {**v2.kwargs, "inner_precise": True, "softmax_scale": "1"})
    assert len(bind(schemas["npu-v2"], bad)) == 2
    assert bind(schemas["npu"], ApiCall(v1.api, v1.args[:2], v1.kwargs))


@pytest.mark.parametrize("api", TORCH_APIS)
def test_every_canonical_argument_is_mapped_or_refused(schemas: dict[str, Any],
                                                       api: str) -> None:
    names = {a.name for a in schemas[api].arguments}
    rename = CANONICAL_TO_V2 if api != "npu" else {}
    for canonical in ALL_ARGS:
        if rename.get(canonical, canonical) in names or canonical == "antiquant_mode":
            continue
        probe = {**CALLS["plain"], canonical: _a((1,), np.float32)}
        if canonical in ("query_quant_mode",):
            probe[canonical] = 3
        why = refusal(api, CallView(probe))
        assert why, f"{api}: canonical {canonical!r} has no schema argument and is not refused"


@pytest.mark.parametrize("feature,api,needle", [
    ("tensor_list", "npu", "tensor list"), ("sink", "npu", "learnable_sink"),
    ("query_quant", "npu", "dequant_scale_query"), ("prefix", "npu-v2", "prefix"),
    ("left_padding", "torchair", "padding"), ("antiquant_combined", "npu-v2", "combined"),
    ("full_quant", "npu-v2", "dequant_scale1"), ("rope", "mindspore", "rope"),
    ("packed", "mindspore", "TND_NTD"), ("int4", "mindspore", "dtypes"),
])
def test_refusals_name_the_feature(feature: str, api: str, needle: str) -> None:
    mapped = _map(api, CALLS[feature])
    assert isinstance(mapped, str) and needle in mapped


def test_value_dtypes_the_schemas_cannot_show() -> None:
    v1 = to_api("npu", CALLS["paged"])
    assert v1.kwargs["block_table"].dtype == np.int32
    assert v1.kwargs["actual_seq_lengths_kv"] == [20, 9]
    air = to_api("torchair", CALLS["lengths"])
    assert air.kwargs["actual_seq_qlen"].dtype == np.int64       # device tensors (seed 004)
    assert air.kwargs["actual_seq_kvlen"].tolist() == [5, 1]
    pad = to_api("npu", CALLS["left_padding"])
    assert pad.kwargs["query_padding_size"].dtype == np.int64
    # torch has no int4: torch_npu/TorchAir take int32 words of 8 (last dim / 8)
    i4 = to_api("npu-v2", CALLS["int4"])
    assert i4.args[1].dtype == np.int32 and i4.args[1].shape == (2, 2, 5, 8)
    # every attribute explicit: torch_npu's inner_precise default (0) is not the canonical 1
    assert to_api("npu", CALLS["plain"]).kwargs["inner_precise"] == 1
    assert to_api("npu-v2", CALLS["plain"]).kwargs["inner_precise"] == 1


def test_what_a_negative_call_breaks_reaches_the_api_unrepaired() -> None:
    # args.values_integral and args.required: the API's own parser must see them
    odd = to_api("npu", {**CALLS["paged"], "actual_seq_lengths_kv": [20, 8.5],
                         "block_table": [[0, 1.5]]})
    assert odd.kwargs["actual_seq_lengths_kv"] == [20, 8.5]
    assert odd.kwargs["block_table"] == [[0, 1.5]]
    missing = to_api("npu-v2", {k: v for k, v in CALLS["plain"].items() if k != "value"})
    assert missing.args[2] is None and missing.args[0] is not None


def test_int4_packing_puts_element_0_in_the_lowest_nibble() -> None:
    from fia_fuzz.runners.npu_calls import pack_int4

    vals = np.array([[1, -1, 2, -8, 7, 0, 3, -2]], np.int8).astype(ml_dtypes.int4)
    word = int(pack_int4(vals).view(np.uint32)[0, 0])
    assert [(word >> (4 * i)) & 0xF for i in range(8)] == [1, 15, 2, 8, 7, 0, 3, 14]


def test_uint64_scale_encoding_for_mindspore() -> None:
    ms = to_api("mindspore", CALLS["full_quant"])
    enc = ms.kwargs["dequant_scale2"]     # float32 in, uint64 out [SEM §8]
    assert enc.dtype == np.uint64 and int(enc[0]) == 1 << 46
    from fia_fuzz.runners.npu_calls import encode_uint64_scale

    word = int(encode_uint64_scale(np.array([0.1], np.float32))[0])
    assert word >> 46 == 1 and word & 0x1FFF == 0
    assert word & 0xFFFFFFFF == np.array([0.1], np.float32).view(np.uint32)[0] & 0xFFFFE000


@given(case=cases())
def test_drawn_cases_bind(schemas: dict[str, Any], case: Case) -> None:
    call = case.call()
    for api in TORCH_APIS:
        mapped = _map(api, call)
        if not isinstance(mapped, str):
            assert bind(schemas[api], mapped) == []


def test_mindspore_signature() -> None:
    ms = pytest.importorskip(
        "mindspore", reason="mindspore is not installed here: its signature is checked only "
                            "where the package exists (inspect.signature)")
    sig = inspect.signature(ms.ops.fused_infer_attention_score)
    for call in CALLS.values():
        mapped = _map("mindspore", call)
        if isinstance(mapped, str):
            continue
        sig.bind(*mapped.args, **mapped.kwargs)


def test_npu_runners_say_why_not_here() -> None:
    for name in APIS:
        ok, why = get_runner(name).available()
        assert not ok and name in why
