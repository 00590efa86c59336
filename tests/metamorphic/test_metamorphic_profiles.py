"""Metamorphic partners of a case drawn under a device rule profile are kept when that
profile (not only the docs) holds them legal."""

from __future__ import annotations

import pytest
from torch_devices import torch_runner

from fia_fuzz.metamorphic import check_relations
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles.atlas_a2_examples import PREFILL, call

pytest.importorskip("torch")


def test_partners_of_a_device_only_case_run_under_its_profile() -> None:
    h = TensorSpec((2, 16, 2 * 128), "float16")
    case = Case(params=call(PREFILL, query=TensorSpec((2, 4, 8 * 128), "float16"), key=h,
                            value=h, input_layout="BSH_BNSD"), rules="atlas-a2")
    rows = check_relations(case, torch_runner("torch-sdpa", "cpu"),
                           relations=["layout", "gqa_repeat"])
    outcomes = {(r["relation"], r["variant"]): r["outcome"] for r in rows}
    assert outcomes[("layout", "BSND_BNSD")] == "pass"  # a device-only partner
    assert outcomes[("gqa_repeat", "G4->G1")] == "pass"  # a partner legal in BSH_BNSD only
    assert set(outcomes.values()) == {"pass"}
