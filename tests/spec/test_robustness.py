"""Bad input of any kind gives Violations: never an exception, never an allocation."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.spec import IllegalCall, TensorSpec, infer_outputs, validate
from fia_fuzz.spec.params import ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.spec.rulebook.examples import BASES, call
from fia_fuzz.spec.tensors import DTYPES

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
