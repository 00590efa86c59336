"""--negative sends illegal cases and records how the backend answered (issue 9)."""

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results
from fia_fuzz.spec import RULES


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
                 "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 2 and set(df["outcome"]) <= {"accepted", "rejected"}
    accepted = df[df["outcome"] == "accepted"]
    assert (accepted["accepted_shapes"] != "").all()
