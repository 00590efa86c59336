"""The consistent edits the breakers rely on keep a legal case legal when the new value is."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases
from fia_fuzz.strategies.edits import apply, grow_blocks, repage, split_blocks

#: Paged decode with PA-managed scales (mode 4/5 follow the block size) or plain float KV.
#: No mask or pse: growing blocks or compacting the table moves S2, which their last dim spans.
PAGED_DECODE = st.one_of(cases(antiquant="separate:4/4", mask="none", pse=False),
                         cases(antiquant="separate:5/5", mask="none", pse=False),
                         cases(paged=True, branch="decode", antiquant="none", rope=False,
                               mask="none", pse=False))


SLOW_FILTERED = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def _legal(case: Case) -> bool:
    return validate(**case.specs()) == []


@settings(max_examples=15, suppress_health_check=SLOW_FILTERED)
@given(PAGED_DECODE)
def test_split_blocks_keeps_the_case_legal(case: Case) -> None:
    bs = case.params["block_size"]
    unit = 32 if case.params["key"].dtype == "int8" else 16
    k = 2 if (bs // 2) % unit == 0 else 1
    out = apply(case, split_blocks(case, k))
    assert out.params["block_size"] == bs // k
    assert len(out.params["block_table"][0]) == k * len(case.params["block_table"][0])
    assert _legal(out)


@settings(max_examples=15, suppress_health_check=SLOW_FILTERED)
@given(PAGED_DECODE)
def test_grow_blocks_and_repage_keep_the_case_legal(case: Case) -> None:
    bs = case.params["block_size"]
    grown = apply(case, grow_blocks(case, 512 if bs < 512 else bs))
    assert _legal(grown)
    compact = apply(case, repage(case))
    assert _legal(compact)
    # one block per batch at least (a drawn table may share one block between empty batches)
    assert compact.params["key"].shape[0] <= max(case.params["key"].shape[0],
                                                 len(case.params["block_table"]))


def test_a_tensor_turned_integer_or_bool_drops_its_float_fill() -> None:
    # a searched dtype mutation (sink.dtype, antiquant.*_dtype, ...) kept the float recipe,
    # and the broken case could not be materialised
    from fia_fuzz.op.tensors import TensorSpec
    from fia_fuzz.strategies.edits import FILLS

    sink = TensorSpec((4,), "float32")
    case = Case(params={"query": TensorSpec((1, 4, 1, 16), "float16"),
                        "key": TensorSpec((1, 4, 8, 16), "float16"),
                        "value": TensorSpec((1, 4, 8, 16), "float16"), "num_heads": 4,
                        "learnable_sink": sink},
                fills={"learnable_sink": {"dist": "uniform", "scale": 2.0}}, seed=3)
    for dtype in ("int8", "int32", "int64", "uint8", "bool"):
        out = apply(case, {"learnable_sink": TensorSpec(sink.shape, dtype)})
        assert "learnable_sink" not in out.fills
        assert str(out.call()["learnable_sink"].dtype) == dtype
    kept = apply(case, {"learnable_sink": TensorSpec(sink.shape, "float16")})
    assert kept.fills == case.fills          # a float dtype keeps its recipe
    own = {"dist": "int", "low": 1, "high": 4}
    given = apply(case, {"learnable_sink": TensorSpec(sink.shape, "int32"),
                         FILLS: {"learnable_sink": own}})
    assert given.fills == {"learnable_sink": own}   # a change's own recipe wins
