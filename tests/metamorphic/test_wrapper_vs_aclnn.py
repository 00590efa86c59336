"""wrapper_vs_aclnn: a framework front door against the aclnn interface it wraps.

No NPU here, so the plumbing runs on doubles (named as such): a "wrapper" and
a "kernel" that both compute the golden, the wrapper optionally with a planted
marshalling bug (it drops `scale`, so the kernel sees the default 1.0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.metamorphic import check_relations
from fia_fuzz.metamorphic.variants import VARIANTS
from fia_fuzz.op.case import Case
from fia_fuzz.runners import Runner

from .sources import make_case


class _GoldenDouble(Runner):
    def __init__(self, name: str, drop_scale: bool = False):
        self.name, self.drop_scale = name, drop_scale

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        if self.drop_scale:
            call = {k: v for k, v in call.items() if k != "scale"}
        return npu_fused_infer_attention_score(**call)


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VARIANTS, "aclnn", {
        **VARIANTS["aclnn"],
        "test-double-wrapper": lambda: _GoldenDouble("test-double-aclnn"),
        "test-double-bad-wrapper": lambda: _GoldenDouble("test-double-aclnn"),
    })


def test_a_faithful_wrapper_agrees_with_its_kernel(doubles: None) -> None:
    rows = check_relations(make_case("BNSD"), _GoldenDouble("test-double-wrapper"),
                           ["wrapper_vs_aclnn"])
    assert [(r["variant"], r["partner_runner"], r["outcome"]) for r in rows] == \
        [("aclnn", "test-double-aclnn", "pass")]
    assert rows[0]["out_max_abs_diff"] == 0 and "signature" not in rows[0]


def test_a_marshalling_bug_is_a_wrapper_finding_with_its_own_signature(doubles: None) -> None:
    # the source runs through the wrapper (drop_scale), the partner straight to the kernel
    wrapper = _GoldenDouble("test-double-bad-wrapper", drop_scale=True)
    rows = check_relations(make_case("BNSD"), wrapper, ["wrapper_vs_aclnn"])
    [row] = rows
    assert row["outcome"] == "fail" and row["out_max_abs_diff"] > 0
    assert row["signature"] == ("wrapper test-double-bad-wrapper vs test-double-aclnn: "
                                "BNSD/float16/prefill: attention_out, softmax_lse")
    other = check_relations(make_case("BNSD", seed=9), wrapper, ["wrapper_vs_aclnn"])[0]
    assert other["signature"] == row["signature"]  # one bug, one signature


def test_without_cann_the_aclnn_partner_is_unsupported_with_the_reason(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    npu_double = _GoldenDouble("npu")  # stands for torch_npu's front door
    [row] = check_relations(make_case("BNSD"), npu_double, ["wrapper_vs_aclnn"])
    assert row["outcome"] == "unsupported"
    assert "aclnn variant 'aclnn-v4' unavailable: aclnn-v4: libascendcl.so not found" \
        in row["detail"]
    [row] = check_relations(make_case("BNSD"), _GoldenDouble("golden"), ["wrapper_vs_aclnn"])
    assert row["outcome"] == "unsupported" and "has no aclnn variant" in row["detail"]
