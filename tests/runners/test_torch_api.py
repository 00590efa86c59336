"""torch-api-<backend>: the golden's verdict on drawn cases, and the forms SDPA receives.

The runners hand the public `scaled_dot_product_attention` bool masks broadcast
by stride 0, `is_causal`, `enable_gqa`, strided views and unequal head dims as
they are; a spy on the public function checks that those forms arrive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from torch_devices import CUDA, DEVICES, NO_CUDA, torch_runner

from fia_fuzz.diff import judge
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.tensors import describe
from fia_fuzz.rules.rulebook.bases import BASES
from fia_fuzz.strategies import cases

torch = pytest.importorskip("torch")

CPU_NAMES = ["torch-api-math", "torch-api-flash"]
CUDA_ONLY = [pytest.param(n, marks=[CUDA, NO_CUDA]) for n in ("torch-api-efficient",
                                                               "torch-api-cudnn")]
#: Drawn forms each backend must take (or refuse by name): masks, GQA, views, head dims.
FOCUS = {
    "plain": {"plain": True},
    "causal": {"sparse_mode": 3},
    "band": {"sparse_mode": 4},
    "masked_row": {"values": "masked_row"},
    "gqa": {"gqa": "gqa"},
    "strided": {"view": "strided"},
}
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _agrees(name: str, device: str, case: Case) -> None:
    runner = torch_runner(name, device)
    assert runner.available() == (True, "")
    ok, why = runner.supports(case)
    if not ok:
        assert why.startswith(name + ": ") and len(why) > len(name) + 10
        event(f"refused: {why}")
        return
    call = case.call()
    try:
        truth = npu_fused_infer_attention_score(**call, precision="fp64")
        base = npu_fused_infer_attention_score(**call)
    except NotImplementedError as exc:
        event(f"golden: {exc}")
        return
    try:
        out, lse = runner.run(call)
    except NotImplementedError as exc:   # torch's own kernel refused it, with its reasons
        assert device.startswith("cuda") and str(exc).startswith(name + ": "), exc
        event(f"refused at run time: {exc}")
        return
    spec_out, spec_lse = output_specs(case.view())
    assert out.shape == spec_out.shape and str(out.dtype) == spec_out.dtype
    assert lse.shape == spec_lse.shape
    if not np.asarray(truth[0]).size:
        return
    row = judge((out, lse), truth, base, spec_out.dtype, lse=bool(case.attr("softmax_lse_flag")))
    ulp = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}.get(spec_out.dtype, 2.0 ** -20)
    bound = 2 * row["out_base_max_abs"] + ulp * max(1.0, float(np.abs(truth[0]).max()))
    assert row["out_max_abs"] <= bound, row
    assert row["verdict"] != "fail" or "nonfinite" not in str(row), row


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CPU_NAMES)
@pytest.mark.parametrize("focus", list(FOCUS))
@SETTINGS
@given(data=st.data())
def test_api_runners_agree_with_golden(name: str, focus: str, device: str,
                                       data: st.DataObject) -> None:
    _agrees(name, device, data.draw(cases(**FOCUS[focus])))


@pytest.mark.parametrize("name", CUDA_ONLY)
@pytest.mark.parametrize("focus", list(FOCUS))
@SETTINGS
@given(data=st.data())
def test_cuda_only_api_runners_agree_with_golden(name: str, focus: str,
                                                 data: st.DataObject) -> None:
    _agrees(name, "cuda", data.draw(cases(**FOCUS[focus])))


# -- the forms reaching the public API ------------------------------------------------

def _base(**over: Any) -> dict[str, Any]:
    rng = np.random.default_rng(3)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float16)

    b, n, kvn, s1, s2, d = 2, 4, 4, 6, 9, 32
    call = {"query": r(b, n, s1, d), "key": r(b, kvn, s2, d), "value": r(b, kvn, s2, d),
            "num_heads": n, "num_key_value_heads": kvn, "input_layout": "BNSD",
            "scale": 0.2, "softmax_lse_flag": True}
    call.update(over)
    return call


def _record(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    real = torch.nn.functional.scaled_dot_product_attention

    def spy(q: Any, k: Any, v: Any, attn_mask: Any = None, **kw: Any) -> Any:
        seen.append({"q": q, "k": k, "v": v, "mask": attn_mask, **kw})
        return real(q, k, v, attn_mask=attn_mask, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    return seen


def _check(name: str, device: str, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    runner = torch_runner(name, device)
    why = runner._refusal(CallView(call))
    if why and device.startswith("cuda"):   # a CUDA backend's stated limit (CPU takes all)
        pytest.skip(f"{name} on {device}: {why}")
    out, lse = runner.run(call)
    truth = npu_fused_infer_attention_score(**call, precision="fp64")
    err = np.abs(np.asarray(out, np.float64) - truth[0]).max()
    assert err <= 2.0 ** -8 * max(1.0, float(np.abs(truth[0]).max())), err
    lse_t = np.asarray(truth[1], np.float64)
    fin = np.isfinite(lse_t)
    assert np.array_equal(np.isinf(lse), np.isinf(lse_t))
    assert np.allclose(lse[fin], lse_t[fin], atol=1e-3)
    return out, lse


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CPU_NAMES)
def test_bool_mask_goes_inverted_and_broadcast(name: str, device: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    mask = np.random.default_rng(1).random((6, 9)) < 0.4
    mask[2] = True   # a fully masked row: whatever the kernel returns is compared
    seen = _record(monkeypatch)
    out, lse = _check(name, device, _base(atten_mask=mask, sparse_mode=1))
    m = seen[0]["mask"]
    assert m.dtype == torch.bool and tuple(m.shape) == (2, 4, 6, 9)
    assert m.stride()[:2] == (0, 0)   # expanded over batches and heads, not materialised
    assert torch.equal(m[0, 0].cpu(), torch.from_numpy(~mask))
    assert seen[0]["is_causal"] is False and seen[0]["enable_gqa"] is False
    assert (out[:, :, 2] == 0).all() and np.isinf(lse[:, :, 2]).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CPU_NAMES)
def test_causal_modes(name: str, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    m2048 = np.triu(np.ones((2048, 2048), bool), 1)
    seen = _record(monkeypatch)
    _check(name, device, _base(atten_mask=m2048, sparse_mode=2))
    assert seen[-1]["is_causal"] is True and seen[-1]["mask"] is None
    _check(name, device, _base(atten_mask=m2048, sparse_mode=3))   # right-down, 6 x 9
    assert seen[-1]["is_causal"] is False and seen[-1]["mask"].dtype == torch.bool
    assert seen[-1]["mask"].stride()[:2] == (0, 0)
    square = _base(atten_mask=m2048, sparse_mode=3)
    square["key"], square["value"] = square["key"][:, :, :6], square["value"][:, :, :6]
    _check(name, device, square)
    assert seen[-1]["is_causal"] is True and seen[-1]["mask"] is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CPU_NAMES)
def test_gqa_goes_as_enable_gqa(name: str, device: str,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    call = _base(num_key_value_heads=2)
    call["key"], call["value"] = call["key"][:, :2].copy(), call["value"][:, :2].copy()
    seen = _record(monkeypatch)
    _check(name, device, call)
    assert seen[0]["enable_gqa"] is True and seen[0]["k"].shape[1] == 2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CPU_NAMES)
def test_strided_views_arrive_as_views(name: str, device: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    case = Case(params=dict(BASES["strided"]), seed=11)
    assert torch_runner(name, device).supports(case) == (True, "")
    seen = _record(monkeypatch)
    _check(name, device, case.call())
    k = seen[0]["k"]
    assert not k.is_contiguous()
    assert not seen[0]["q"].is_contiguous() or case.params["query"].strides is None


@pytest.mark.parametrize("device", DEVICES)
def test_bsh_layout_is_a_view_and_head_dims_are_stated(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    call = _base(input_layout="BSH", query=rng.standard_normal((2, 6, 4 * 32)).astype(np.float16),
                 key=rng.standard_normal((2, 9, 4 * 32)).astype(np.float16),
                 value=rng.standard_normal((2, 9, 4 * 32)).astype(np.float16))
    seen = _record(monkeypatch)
    out, _ = _check("torch-api-math", device, call)
    assert out.shape == (2, 6, 4 * 32)
    q = seen[0]["q"]
    assert tuple(q.shape) == (2, 4, 6, 32) and not q.is_contiguous()
    # unequal key/value head dims are legal only with rope (refused); the backend split
    # is stated anyway: math takes them, flash refuses them by name
    call["value"] = rng.standard_normal((2, 9, 4 * 16)).astype(np.float16)
    assert torch_runner("torch-api-math", device)._refusal(CallView(call)) == ""
    why = torch_runner("torch-api-flash", device)._refusal(CallView(call))
    assert "head dim 32 != value head dim 16" in why


def test_actual_lengths_run_per_batch_on_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _record(monkeypatch)
    call = _base(actual_seq_lengths=[6, 3], actual_seq_lengths_kv=[9, 0])
    out, lse = _check("torch-api-flash", "cpu", call)
    assert len(seen) == 1 and tuple(seen[0]["q"].shape) == (1, 4, 6, 32)
    assert (out[1] == 0).all() and np.isinf(lse[1]).all()


def test_refusals_name_the_feature() -> None:
    pse = Case(params={**dict(BASES["strided"]),
                       "pse_shift": BASES["strided"]["query"].contiguous()}, seed=1)
    for name in CPU_NAMES:
        ok, why = torch_runner(name, "cpu").supports(pse)
        assert not ok and why.startswith(f"{name}: pse_shift")
    for name in ("torch-api-efficient", "torch-api-cudnn"):
        ok, why = torch_runner(name, "cpu").available()
        assert not ok and "does not exist on cpu" in why


def test_a_kernel_refused_at_run_time_is_unsupported_not_an_error(monkeypatch) -> None:
    """torch's "No available kernel" is the backend's own refusal: the runner raises
    NotImplementedError with torch's reasons and a campaign row says unsupported."""
    from fia_fuzz.campaign.evaluate import evaluate

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("No available kernel. Aborting execution.")

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", refuse)
    runner = torch_runner("torch-api-flash", "cpu")
    with pytest.raises(NotImplementedError, match="torch-api-flash: torch has no FLASH"):
        runner.run(_base())
    case = Case(params={k: describe(v) if isinstance(v, np.ndarray) else v
                        for k, v in _base().items()})
    row = evaluate(case, runner)
    assert row["outcome"] == "unsupported" and row["error"].startswith("torch-api-flash: ")
