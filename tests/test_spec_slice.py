import numpy as np
import pytest

from fia_fuzz.spec import RULES, IllegalCall, TensorSpec, infer_outputs, validate


def _legal(**over):
    q = TensorSpec((2, 8, 4, 64), "float16")
    kv = TensorSpec((2, 2, 16, 64), "float16")
    kw = {"query": q, "key": kv, "value": kv, "num_heads": 8, "num_key_value_heads": 2,
          "input_layout": "BNSD"}
    kw.update(over)
    return kw


def test_minimal_legal_call_passes() -> None:
    assert validate(**_legal()) == []


@pytest.mark.parametrize("over, rule", [
    ({"num_key_value_heads": 3}, "gqa.divisible"),
    ({"query": TensorSpec((2, 130, 4, 64), "float16"), "num_heads": 130,
      "num_key_value_heads": 2}, "gqa.ratio_max_64"),
    ({"query": TensorSpec((2, 8, 4, 64), "float32")}, "dtype.query"),
    ({"input_layout": "XYZ"}, "layout.known"),
    ({"bogus": 1}, "args.unknown_keyword"),
    ({"num_heads": "8"}, "args.attr_type"),
    ({"query": TensorSpec((2, 8, -4, 64), "float16")}, "args.shape_sane"),
    ({"query": TensorSpec((2, 8, 4, 64), "complex64")}, "args.dtype_known"),
    ({"actual_seq_lengths": [1, float("nan")]}, "args.values_integral"),
    ({"query": TensorSpec((2, 8, 1 << 30, 1 << 10), "float16")}, "args.memory"),
])
def test_breaking_one_rule_names_it(over, rule) -> None:
    assert rule in RULES
    ids = [v.rule for v in validate(**_legal(**over))]
    assert rule in ids, ids


def test_infer_outputs_shapes() -> None:
    out, lse = infer_outputs(**_legal(softmax_lse_flag=True, input_layout="BNSD"))
    assert out == TensorSpec((2, 8, 4, 64), "float16")
    assert lse == TensorSpec((2, 8, 4, 1), "float32")


def test_infer_outputs_raises_illegal_call_with_all_violations() -> None:
    with pytest.raises(IllegalCall) as err:
        infer_outputs(**_legal(num_key_value_heads=3, bogus=1))
    assert {v.rule for v in err.value.violations} >= {"gqa.divisible", "args.unknown_keyword"}
    assert isinstance(err.value, ValueError)


def test_accepts_arrays_and_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    q = np.zeros((1, 2, 3, 16), np.float16)
    k = torch.zeros((1, 2, 5, 16), dtype=torch.float16)
    assert validate(q, k, k, num_heads=2, input_layout="BNSD") == []
