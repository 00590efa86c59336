"""The contract check catches planted marshalling bugs: each plant must be reported on every
drawn case where it changes what reaches the library."""

from __future__ import annotations

import dataclasses

import pytest
from aclnn_stub import Stub, contract_problems, read_log

from fia_fuzz.runners import get_runner
from fia_fuzz.runners.aclnn import runner as aclnn_runner
from fia_fuzz.runners.aclnn.prototypes import INTERFACES
from fia_fuzz.runners.aclnn.tensors import contiguous_strides
from fia_fuzz.strategies.sample import draw_cases


def _problems(stub: Stub, monkeypatch: pytest.MonkeyPatch, name: str, case) -> list[str]:
    log = stub.new_log(monkeypatch)
    call = case.call()
    result = get_runner(name).run(call)
    return contract_problems(name, call, read_log(log), result, stub.live(), stub.abuse())


def _supported(name: str, n: int, seed: int, **filters):
    runner = get_runner(name)
    return [c for c in draw_cases(n, seed=seed, **filters) if runner.supports(c)[0]]


def test_swapped_pre_and_next_tokens_are_caught(stub: Stub,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    iface = INTERFACES["aclnn-v4"]
    swap = {"pre_tokens": "next_tokens", "next_tokens": "pre_tokens"}
    planted = dataclasses.replace(iface, params=tuple(
        dataclasses.replace(p, canonical=swap.get(p.canonical, p.canonical))
        for p in iface.params))
    monkeypatch.setitem(INTERFACES, "aclnn-v4", planted)
    cases = [c for c in _supported("aclnn-v4", 12, 7, band="small")
             if c.attr("pre_tokens") != c.attr("next_tokens")]
    assert len(cases) >= 4
    for case in cases:
        problems = _problems(stub, monkeypatch, "aclnn-v4", case)
        assert any("(preTokens)" in p for p in problems), problems
        assert any("(nextTokens)" in p for p in problems), problems


def test_a_dropped_stride_is_caught(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    real = aclnn_runner.plan_tensor

    def drop_strides(name, value, paged=False):  # the plant: a view loses its strides
        plan = real(name, value, paged)
        plan.strides = contiguous_strides(plan.shape)
        return plan

    monkeypatch.setattr(aclnn_runner, "plan_tensor", drop_strides)
    for name in ("aclnn-v4", "aclnn-v2", "aclnn-ifa-v4"):
        filters = {"branch": "decode"} if name == "aclnn-ifa-v4" else {}
        cases = _supported(name, 6, 11, view="strided", **filters)
        assert cases, name
        for case in cases:
            problems = _problems(stub, monkeypatch, name, case)
            assert any(".strides" in p for p in problems), problems
            assert any(".checksum" in p for p in problems), problems  # the elements read too


def test_a_leaked_int_array_is_caught(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    real_close = aclnn_runner._Session.close

    def leaky_close(self):  # the plant: int arrays are never destroyed
        self.arrays = []
        real_close(self)

    monkeypatch.setattr(aclnn_runner._Session, "close", leaky_close)
    cases = [c for c in _supported("aclnn-v4", 10, 5, paged=True)]
    assert cases
    problems = _problems(stub, monkeypatch, "aclnn-v4", cases[0])
    assert any("leak" in p and "'int_array': 1" in p for p in problems), problems
