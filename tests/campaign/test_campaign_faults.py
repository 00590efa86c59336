"""A crash, an abort, a hang and an exception in the runner are recorded, and the campaign
finishes every other case (issue 7 done-when)."""

import runner_doubles  # noqa: F401  (registers the test doubles)
from runner_doubles import STREAM_SEED

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

#: The machinery under test, on the simple cases every backend here expresses.
PLAIN = ("--filter", "plain=true")


def test_faults_become_rows_and_the_other_cases_finish(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", *PLAIN, *STREAM_SEED, "--runner", "test-double-faulty",
                 "--max-cases", "30",
                 "--case-timeout", "2s", "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 30 and df["case_id"].is_unique
    expect = {("BSH", "float16"): "crashed", ("BSH", "bfloat16"): "crashed",
              ("BSND", "bfloat16"): "timeout", ("BSND", "float16"): "error"}
    for _, row in df.iterrows():
        assert row["outcome"] == expect.get((row["layout"], row["q_dtype"]), "ok"), row
    assert {"crashed", "timeout", "error", "ok"} <= set(df["outcome"])
    errors = df[df["outcome"] == "error"]["error"]
    assert all("ValueError: injected exception" in e for e in errors)
    crashes = set(df[df["outcome"] == "crashed"]["error"])
    assert crashes <= {"worker died with SIGSEGV", "worker died with SIGABRT"}
    bundles = {p.name for p in (out / "bundles").iterdir()}
    assert set(df[df["outcome"] != "ok"]["case_id"]) == bundles
