"""--negative sends illegal cases and records how the backend answered."""

import pytest
import runner_doubles  # noqa: F401  (registers the test doubles)

from fia_fuzz.campaign.accepted import ACCEPTED
from fia_fuzz.cli import main
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.lenient import Undefined, unchecked_golden
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.reports import read_results
from fia_fuzz.rules.rule import RULES, IllegalCall


def test_negative_campaign_records_rejections_naming_the_rule(tmp_path) -> None:
    out = tmp_path / "neg"
    assert main(["campaign", "--runner", "golden", "--negative", "--max-cases", "4",
                 "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 4 and set(df["mode"]) == {"negative"}
    assert set(df["outcome"]) == {"rejected"}
    assert set(df["broken_rules"]) <= set(RULES)
    assert all(rule in e for rule, e in zip(df["broken_rules"], df["error"], strict=True))
    assert not (out / "bundles").exists()


def test_negative_campaign_flags_a_backend_that_silently_accepts(tmp_path) -> None:
    out = tmp_path / "neg"
    assert main(["campaign", "--runner", "torch-math", "--negative", "--max-cases", "2",
                 "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 2 and set(df["outcome"]) <= {*ACCEPTED, "rejected"}
    accepted = df[df["outcome"].isin(ACCEPTED)]
    assert (accepted["accepted_shapes"] != "").all()
    # what reached the backend was materialised, and its digest recorded
    assert not accepted.empty and accepted["input_digest"].str.fullmatch("[0-9a-f]{16}").all()


def _empty_output(case_json: str) -> bool:
    try:
        return output_specs(Case.from_json(case_json).view())[0].numel == 0
    except Exception:   # an illegal call whose outputs cannot be inferred
        return False


@pytest.mark.parametrize("runner, kinds", [
    ("test-double-accepting", {"accepted-correct", "accepted-undefined"}),
    ("test-double-accepting-wrong", {"accepted-wrong", "accepted-undefined"}),
])
def test_accepted_calls_are_judged_correct_wrong_or_undefined(tmp_path, runner, kinds) -> None:
    out = tmp_path / "neg"
    # not shrunk: shrinking a negative failure is test_campaign_negative_planted's
    assert main(["campaign", "--runner", runner, "--negative", "--max-cases", "24",
                 "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    # a wrong answer to a call whose output is empty is still right: nothing to be off
    empty = df["case_json"].map(_empty_output)
    assert set(df[~empty]["outcome"]) - {"accepted-correct"} == kinds - {"accepted-correct"}
    assert set(df[empty]["outcome"]) <= {"accepted-correct", "accepted-undefined"}
    if "accepted-wrong" in kinds:   # a wrong answer the policy only warns on (e.g. beside
        # non-finite outputs) is judged correct; nearly all are caught (one in ten, or one)
        defined = df[~empty & (df["outcome"] != "accepted-undefined")]
        assert (defined["outcome"] == "accepted-correct").sum() <= max(1, len(defined) // 10)
    else:
        assert "accepted-correct" in set(df["outcome"])
    for _, r in df.iterrows():
        case = Case.from_json(r["case_json"])
        try:  # the lenient route decides; strict validation still refuses every one
            unchecked_golden(**case.call())
            defined = True
        except Undefined:
            defined = False
        with pytest.raises(IllegalCall):
            npu_fused_infer_attention_score(**case.call())
        if not defined:
            assert r["outcome"] == "accepted-undefined" and r["accepted_detail"]
        elif r["outcome"] == "accepted-wrong":
            assert r["verdict"] == "fail" and r["accepted_detail"]
        else:
            assert r["outcome"] == "accepted-correct" and r["verdict"] != "fail"
