"""torch-sdpa and torch-math against the golden on strategy-drawn cases.

Whatever `cases()` draws is either refused by the runner with a reason or
run and judged; a case the golden cannot compute yet is recorded as a
Hypothesis event instead of compared.
"""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from torch_devices import DEVICES, torch_runner

from fia_fuzz.diff import judge
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.strategies import cases

pytest.importorskip("torch")


#: Filter sets the runners must run (not refuse): features that change the op's arithmetic.
FOCUS = {
    "mla_full_quant": {"rope_d": "512", "full_quant": True},
    "antiquant_prefix_int8": {"prefix": True, "kv_dtype": "int8"},
    "antiquant_prefix_int4": {"prefix": True, "kv_dtype": "int32"},
    "gqa_nz": {"cache": "NZ", "rope": False},
    "vllm_chunked_prefill": {"workload": "vllm_chunked"},
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["torch-sdpa", "torch-math"])
@given(case=cases(plain=True))
def test_torch_runners_agree_with_golden(name: str, device: str, case: Case) -> None:
    _agrees(name, device, case)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["torch-sdpa", "torch-math"])
@pytest.mark.parametrize("focus", list(FOCUS))
@settings(max_examples=10)
@given(data=st.data())
def test_torch_runners_agree_with_golden_on(name: str, focus: str, device: str,
                                            data: st.DataObject) -> None:
    case = data.draw(cases(**FOCUS[focus]))
    assert torch_runner(name, device).supports(case) == (True, "")
    _agrees(name, device, case)


def _agrees(name: str, device: str, case: Case) -> None:
    runner = torch_runner(name, device)
    assert runner.available()[0]
    ok, why = runner.supports(case)
    if not ok:
        assert why.startswith(name)
        event(f"refused: {why}")
        return
    call = case.call()
    try:
        truth = npu_fused_infer_attention_score(**call, precision="fp64")
        base = npu_fused_infer_attention_score(**call)
    except NotImplementedError as exc:
        event(f"golden: {exc}")
        return
    out, lse = runner.run(call)
    spec_out, spec_lse = output_specs(case.view())
    assert out.shape == spec_out.shape and str(out.dtype) == spec_out.dtype
    assert lse.shape == spec_lse.shape
    row = judge((out, lse), truth, base, spec_out.dtype, lse=bool(case.attr("softmax_lse_flag")))
    # a real kernel in fp16/bf16: within 2x the same-dtype golden's error plus one output ULP
    ulp = 2.0 ** -10 if spec_out.dtype == "float16" else 2.0 ** -7
    bound = 2 * row["out_base_max_abs"] + ulp * max(1.0, float(np.abs(truth[0]).max()))
    assert row["out_max_abs"] <= bound, row
