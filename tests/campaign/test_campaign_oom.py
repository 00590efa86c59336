"""A case that exceeds --memory-limit is its own outcome (`oom`); the campaign goes on and
no other result is lost."""

import runner_doubles  # noqa: F401  (registers the test doubles)
from runner_doubles import HOG_CELL, STREAM_SEED

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results


def test_oom_is_recorded_and_the_campaign_goes_on(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--filter", "plain=true", *STREAM_SEED,
                 "--runner", "test-double-memory-hog",
                 "--max-cases", "16", "--memory-limit", "6G", "--no-shrink",
                 "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 16 and df["case_id"].is_unique
    hog = [(r["layout"], r["q_dtype"]) == HOG_CELL for _, r in df.iterrows()]
    assert any(hog) and not all(hog)
    for is_hog, (_, row) in zip(hog, df.iterrows(), strict=True):
        if is_hog:
            assert row["outcome"] == "oom", row
            assert "MemoryError" in row["error"]
        else:
            assert row["outcome"] == "ok" and row["verdict"] == "pass", row
    assert "oom" in capsys.readouterr().out  # in the campaign's outcome summary
