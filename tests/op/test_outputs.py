"""infer_outputs: attention_out shape per output layout and dtype; softmax_lse shape."""

from __future__ import annotations

import pytest

from fia_fuzz.op.call import CallView
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rule import IllegalCall
from fia_fuzz.rules.rulebook.bases import call
from fia_fuzz.rules.validate import infer_outputs


def T(*shape: int, dtype: str = "float16") -> TensorSpec:  # noqa: N802
    return TensorSpec(shape, dtype)


@pytest.mark.parametrize("base, over, out, lse", [
    ("prefill", {}, T(2, 8, 4, 64), T(2, 8, 4, 1, dtype="float32")),
    ("prefill", {"input_layout": "BNSD_BSND"}, T(2, 4, 8, 64), T(2, 8, 4, 1, dtype="float32")),
    ("decode", {}, T(2, 1, 512), T(2, 8, 1, 1, dtype="float32")),
    ("decode", {"input_layout": "BSND", "query": T(2, 1, 8, 64), "key": T(2, 16, 2, 64),
                "value": T(2, 16, 2, 64)}, T(2, 1, 8, 64), T(2, 8, 1, 1, dtype="float32")),
    ("tnd", {}, T(10, 8, 128, dtype="bfloat16"), T(10, 8, 1, dtype="float32")),
    ("tnd_rope", {}, T(6, 4, 128, dtype="bfloat16"), T(6, 4, 1, dtype="float32")),
    ("int8", {}, T(1, 2, 4, 64, dtype="int8"), T(1, 2, 4, 1, dtype="float32")),
    ("int8", {"quant_scale2": None, "quant_offset2": None}, T(1, 2, 4, 64),
     T(1, 2, 4, 1, dtype="float32")),
    ("post_quant", {}, T(1, 2, 4, 64, dtype="int8"), T(1, 2, 4, 1, dtype="float32")),
    ("paged_decode", {}, T(2, 8, 1, 64), T(2, 8, 1, 1, dtype="float32")),
    ("aq_prefill", {}, T(2, 2, 4, 64, dtype="bfloat16"), T(2, 2, 4, 1, dtype="float32")),
])
def test_output_shapes_and_dtypes(base, over, out, lse) -> None:
    got = infer_outputs(**call(base, softmax_lse_flag=True, **over))
    assert got == (out, lse)


def test_mla_outputs_use_the_output_layout_and_value_dim() -> None:
    out, lse = infer_outputs(**call("mla_nz"))
    assert out == T(8, 1, 4, 512) and lse == T(0, dtype="float32")
    out, _ = infer_outputs(**call("mla"))
    assert out == T(2, 1, 8, 512, dtype="bfloat16")


def test_tnd_ntd_output_is_ntd() -> None:
    out, _ = infer_outputs(**call(
        "tnd_rope", input_layout="TND_NTD", query=T(6, 32, 512, dtype="bfloat16"),
        query_rope=T(6, 32, 64, dtype="bfloat16"), key=T(4, 128, 512, dtype="bfloat16"),
        value=T(4, 128, 512, dtype="bfloat16"), key_rope=T(4, 128, 64, dtype="bfloat16"),
        num_heads=32, num_key_value_heads=1, block_table=[[0], [1]], block_size=128,
        actual_seq_lengths=[2, 6], actual_seq_lengths_kv=[5, 7], sparse_mode=3))
    assert out == T(32, 6, 512, dtype="bfloat16")


def test_lse_flag_false_gives_an_empty_placeholder() -> None:
    """torch_npu returns an empty (0,) lse without the flag, not the documented [1]."""
    _, lse = infer_outputs(**call("prefill"))
    assert lse == T(0, dtype="float32")


def test_int8_query_output_takes_the_query_rope_dtype() -> None:
    """As torch_npu's meta functions: query_rope's dtype, float16 without rope."""
    base = call("mla_int8")
    assert output_specs(CallView(base))[0].dtype == "bfloat16"
    fp16_rope = {**base, "query_rope": TensorSpec(base["query_rope"].shape, "float16")}
    assert output_specs(CallView(fp16_rope))[0].dtype == "float16"   # rope.dtype forbids it
    out, _ = infer_outputs(**call("int8", quant_scale2=None, quant_offset2=None))
    assert out.dtype == "float16"


def test_illegal_call_raises_with_every_violation() -> None:
    with pytest.raises(IllegalCall) as err:
        infer_outputs(**call("prefill", num_key_value_heads=3, bogus=1))
    assert {v.rule for v in err.value.violations} >= {"gqa.divisible", "args.unknown_keyword"}
    assert isinstance(err.value, ValueError)
    assert "gqa.divisible" in str(err.value)
