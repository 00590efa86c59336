"""cases(rules="atlas-a2"): every draw is legal on the device profile, each region only the
device admits is drawn, and a draw of each runs through the golden model and torch-sdpa
and agrees."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument

from fia_fuzz.campaign.evaluate import evaluate
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles.atlas_a2_examples import MLA, NEGATIVE, PREFILL, call
from fia_fuzz.rules.rule import IllegalCall
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.runners import get_runner
from fia_fuzz.strategies import cases, illegal_cases
from fia_fuzz.strategies.cases import build
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.device_a2 import NAME, REGIONS, adapt
from fia_fuzz.strategies.draft import PROFILES

pytest.importorskip("torch")


def _first_per_region(limit: int = 400) -> dict[str, Case]:
    """The first draw of the device family reaching each region (a fixed random stream)."""
    rng, found = random.Random(0), {}
    for _ in range(limit):
        try:
            case = build(RandomChooser(rng, {}), PROFILES["smoke"], ["device_a2"], {}, NAME)
        except Dead:
            continue
        for name, reached in REGIONS.items():
            if name not in found and reached(case):
                found[name] = case
        if len(found) == len(REGIONS):
            break
    return found


FIRST = _first_per_region()


@pytest.mark.parametrize("region", list(REGIONS))
def test_region_draw_is_legal_and_golden_agrees_with_torch_sdpa(region: str) -> None:
    case = FIRST[region]
    assert case.rules == NAME and case_violations(case) == []
    assert case.view() is not None and Case.from_json(case.to_json()) == case
    row = evaluate(case, get_runner("torch-sdpa"))
    assert row["outcome"] == "ok", row.get("error")
    assert row["rules"] == NAME
    assert row["verdict"] == "pass", row.get("reason_flash-attention")


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(cases(rules=NAME))
def test_device_profile_draws_are_legal_under_it(case: Case) -> None:
    assert case.rules == NAME
    assert case_violations(case) == []


def test_documented_draws_take_the_device_form() -> None:
    docs = Case(params=call(MLA, atten_mask=TensorSpec((2048, 2048), "bool")))
    assert [v.rule for v in case_violations(Case(params=docs.params, rules=NAME))] == ["a2.mask_2d"]
    adapted = adapt(docs)
    assert adapted.params["atten_mask"].shape == (1, 2048, 2048) and case_violations(adapted) == []
    sink = Case(params=call(PREFILL, learnable_sink=TensorSpec((8,), "float32")))
    assert adapt(sink).params["learnable_sink"].dtype == "bfloat16"


def test_golden_computes_a_device_only_call_only_under_its_profile() -> None:
    kw = {k: v for k, v in Case(params=call(
        PREFILL, query=TensorSpec((2, 4, 8 * 128), "float16"),
        key=TensorSpec((2, 16, 2 * 128), "float16"), value=TensorSpec((2, 16, 2 * 128), "float16"),
        input_layout="BSH_BNSD")).call().items()}
    out, _ = npu_fused_infer_attention_score(**kw, rules=NAME)
    assert out.shape == (2, 8, 4, 128) and np.isfinite(out).all()
    with pytest.raises(IllegalCall, match="layout.known"):
        npu_fused_infer_attention_score(**kw)


def test_golden_refuses_the_tree_mask() -> None:
    c = Case(params=call(MLA, sparse_mode=9, atten_mask=TensorSpec((1, 64, 128), "bool")),
             rules=NAME)
    assert case_violations(c) == []
    with pytest.raises(NotImplementedError, match="sparse_mode 9"):
        npu_fused_infer_attention_score(**c.call(), rules=NAME)
    assert not get_runner("torch-sdpa").supports(c)[0]


@pytest.mark.parametrize("rule_id", sorted({rid for _, rid, _ in NEGATIVE
                                             if rid.startswith("a2.")}))
def test_illegal_cases_break_each_device_rule(rule_id: str) -> None:
    @settings(max_examples=3, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(illegal_cases(rule_id, rules=NAME))
    def check(case: Case) -> None:
        assert case.rules == NAME and [v.rule for v in case_violations(case)] == [rule_id]

    check()


def test_illegal_cases_refuse_a_rule_the_profile_does_not_hold() -> None:
    with pytest.raises(InvalidArgument, match="not held"):
        illegal_cases("tnd.causal_lengths", rules=NAME)
    with pytest.raises(InvalidArgument, match="unknown rule profile"):
        illegal_cases(rules="atlas-a9")
