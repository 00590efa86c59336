import hashlib

import numpy as np
from hypothesis import given

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases


def _case() -> Case:
    q = TensorSpec((2, 8, 3, 64), "float16")
    kv = TensorSpec((2, 2, 5, 64), "float16")
    return Case(params={"query": q, "key": kv, "value": kv, "num_heads": 8,
                        "num_key_value_heads": 2, "input_layout": "BNSD"},
                fills={"query": {"dist": "normal", "scale": 1.0}}, seed=7)


@given(cases())
def test_json_round_trip_keeps_id(case: Case) -> None:
    back = Case.from_json(case.to_json())
    assert back == case
    assert back.case_id == case.case_id
    assert validate(**back.specs()) == validate(**case.specs())


def test_case_id_is_stable_across_runs() -> None:
    # Pinned: a change here invalidates every stored repro id, so it must be deliberate.
    assert _case().case_id == hashlib.sha256(_case().to_json().encode()).hexdigest()[:16]
    assert _case().case_id == "9e46b61e55b595a5"


def test_materialisation_is_bit_identical_and_pinned() -> None:
    a, b = _case().call(), _case().call()
    for name in ("query", "key", "value"):
        assert a[name].tobytes() == b[name].tobytes()
    digest = hashlib.sha256(b"".join(a[n].tobytes() for n in ("query", "key", "value")))
    assert digest.hexdigest()[:16] == "2e6dc856306a59ea"


def test_seed_changes_data() -> None:
    c = _case()
    other = Case(params=c.params, fills=c.fills, seed=c.seed + 1)
    assert not np.array_equal(c.call()["query"], other.call()["query"])


def _paged_case(fills: dict) -> Case:
    q = TensorSpec((2, 8, 1, 64), "float16")
    cache = TensorSpec((8, 16, 128), "float16")
    return Case(params={"query": q, "key": cache, "value": cache, "num_heads": 8,
                        "num_key_value_heads": 2, "input_layout": "BNSD",
                        "block_table": [[0, 1, 2, 3], [4, 5, 6, 7]], "block_size": 16,
                        "actual_seq_lengths_kv": [40, 64]}, fills=fills)


def test_value_arguments_take_the_schema_dtype_by_default() -> None:
    case = _paged_case({})
    assert validate(**case.specs()) == []
    call = case.call()
    assert call["block_table"].dtype == np.int32
    assert call["actual_seq_lengths_kv"] == [40, 64]


def test_value_dtype_override_reaches_validate_json_and_call() -> None:
    # how a Case states dtype.block_table / dtype.int64_values violations
    case = _paged_case({"block_table": {"dtype": "int64"},
                        "actual_seq_lengths_kv": {"dtype": "int32"}})
    assert sorted(v.rule for v in validate(**case.specs())) == ["dtype.block_table",
                                                                "dtype.int64_values"]
    assert Case.from_json(case.to_json()) == case
    call = case.call()
    assert call["block_table"].dtype == np.int64
    assert call["actual_seq_lengths_kv"].dtype == np.int32
    assert call["actual_seq_lengths_kv"].tolist() == [40, 64]


def test_values_that_are_not_int64_reach_the_call_as_written() -> None:
    # args.values_integral: an int array or int() would repair them into a legal call
    case = Case(params={**_paged_case({}).params, "actual_seq_lengths_kv": [40, 63.5],
                        "block_table": [[0, 1, 2, 3], [4, 5, 6, float(7)]]})
    call = case.call()
    assert call["actual_seq_lengths_kv"] == [40, 63.5]
    assert call["block_table"] == [[0, 1, 2, 3], [4, 5, 6, 7.0]]
    assert [v.rule for v in validate(**call)] == ["args.values_integral"]
    past = Case(params={**case.params, "block_table": [[0, 1, 2, 3], [4, 5, 6, 1 << 63]]})
    assert past.call()["block_table"][1][3] == 1 << 63


def test_mla_full_quant_features_name_its_output_and_no_antiquant() -> None:
    """MLA full quant returns bf16, and its key/value scales are not antiquant."""
    from fia_fuzz.op.outputs import output_specs
    from fia_fuzz.rules.rulebook.bases import BASES

    case = Case(params=dict(BASES["mla_int8"]))
    f = case.features()
    assert f["out_dtype"] == output_specs(case.view())[0].dtype == "bfloat16"
    assert (f["full_quant"], f["antiquant"], f["kv_quant_sym"], f["deq_dtype"]) == \
        (True, "none", "none", "float32")


def test_call_without_data_has_the_shapes_and_dtypes_and_no_memory() -> None:
    from fia_fuzz.op.params import TENSOR_ARGS
    from fia_fuzz.rules.rulebook.bases import BASES

    case = Case(params=dict(BASES["paged_decode"]))
    full, hollow = case.call(), case.call(data=False)
    assert full.keys() == hollow.keys()
    for name, a in full.items():
        b = hollow[name]
        if name in TENSOR_ARGS:
            assert (b.shape, b.dtype) == (a.shape, a.dtype), name
        else:
            assert np.array_equal(a, b), name
    assert hollow["key"].strides == (0,) * hollow["key"].ndim and not hollow["key"].any()
