"""Bad input of any kind gives Violations: never an exception, never an allocation."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.op.params import ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.tensors import DTYPES, TensorSpec
from fia_fuzz.rules.rule import IllegalCall
from fia_fuzz.rules.rulebook.bases import BASES, call
from fia_fuzz.rules.validate import infer_outputs, validate

JUNK = st.one_of(
    st.none(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True), st.text(max_size=4),
    st.booleans(), st.lists(st.one_of(st.integers(-5, 1 << 66), st.floats()), max_size=5),
    st.builds(TensorSpec, st.lists(st.integers(-3, 1 << 40), max_size=6).map(tuple),
              st.sampled_from(DTYPES + ("complex64", ""))),
)
NAMES = st.sampled_from(TENSOR_ARGS + VALUE_ARGS + tuple(ATTR_DEFAULTS) + ("bogus",))


@given(base=st.sampled_from(sorted(BASES)), junk=st.dictionaries(NAMES, JUNK, max_size=4))
def test_junk_arguments_never_raise(base: str, junk: dict[str, Any]) -> None:
    kw = {**BASES[base], **junk}
    violations = validate(**kw)
    for v in violations:
        assert v.rule and v.message and v.source
    if violations:
        with pytest.raises(IllegalCall):
            infer_outputs(**kw)


@pytest.mark.parametrize("over, rule", [
    ({"query": TensorSpec((1 << 40, 1 << 40, 1, 64), "float16")}, "args.memory"),
    ({"atten_mask": TensorSpec((1 << 62, 1 << 62), "bool")}, "args.memory"),
    ({"query": TensorSpec("abc", "float16")}, "args.shape_sane"),
    ({"key": [TensorSpec((1, 16, 128), "float16"), "x"]}, "args.type"),
    ({"num_heads": np.int64(8), "actual_seq_lengths": np.array([1, 2])}, None),
    ({"block_table": [[0, 1], [2]]}, None),
])
def test_bad_values_report_a_rule(over: dict[str, Any], rule: str | None) -> None:
    ids = [v.rule for v in validate(**call("masked", **over))]
    if rule is not None:
        assert rule in ids, ids


def test_a_malformed_value_is_not_blamed_on_the_key() -> None:
    # BSH key H=128 fits KV_N=2; only the value's unknown dtype is wrong
    ids = [v.rule for v in validate(**call("decode", value=TensorSpec((2, 16, 128),
                                                                       "float64")))]
    assert ids == ["args.dtype_known"], ids


def test_huge_descriptions_are_not_allocated() -> None:
    tracemalloc.start()
    validate(**call("prefill", query=TensorSpec((1 << 20, 8, 1 << 20, 64), "float16")))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20


def test_accepts_arrays_and_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    q = np.zeros((1, 2, 3, 16), np.float16)
    k = torch.zeros((1, 2, 5, 16), dtype=torch.float16)
    assert validate(q, k, k, num_heads=2, input_layout="BNSD") == []
    bt = torch.tensor([[0, 1]], dtype=torch.int32)
    kv = torch.zeros((2, 16, 32), dtype=torch.float16)
    assert validate(torch.zeros((1, 1, 32), dtype=torch.float16), kv, kv, num_heads=2,
                    block_table=bt, block_size=16, actual_seq_lengths_kv=[20]) == []


def _mutate(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, TensorSpec):
        shape = list(value.shape)
        how = data.draw(st.sampled_from(["dim", "drop", "add", "dtype"]))
        if how == "dim" and shape:
            i = data.draw(st.integers(0, len(shape) - 1))
            shape[i] = data.draw(st.sampled_from([0, 1, 2, 3, 16, 17, 64, 2048, shape[i] * 2]))
        elif how == "drop":
            shape = shape[:-1]
        elif how == "add":
            shape.append(data.draw(st.sampled_from([1, 2])))
        dtype = data.draw(st.sampled_from(DTYPES)) if how == "dtype" else value.dtype
        return TensorSpec(tuple(shape), dtype)
    if isinstance(value, list) and value and isinstance(value[0], TensorSpec):
        return [_mutate(v, data) for v in value][: data.draw(st.integers(0, 3))]
    if isinstance(value, list):
        return data.draw(st.lists(st.integers(-2, 300), max_size=4))
    if isinstance(value, str):
        return data.draw(st.sampled_from(["BSH", "BSND", "BNSD", "TND", "NTD", "BNSD_BSND",
                                          "TND_NTD", "NTD_TND", "BSH_NBSD", "BNSD_NBSD"]))
    if isinstance(value, int) and not isinstance(value, bool):
        return data.draw(st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 16, 128, value * 2]))
    return value


@given(base=st.sampled_from(sorted(BASES)), data=st.data())
def test_mutated_calls_are_judged_by_rules_not_by_the_fallback(base: str, data) -> None:
    """A bad shape or value is reported by a rule; no check crashes into the generic fallback."""
    kw = dict(BASES[base])
    for name in data.draw(st.lists(st.sampled_from(sorted(kw)), min_size=1, max_size=3)):
        kw[name] = _mutate(kw[name], data)
    for v in validate(**kw):
        assert "could not be read" not in v.message, str(v)
