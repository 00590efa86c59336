"""A time budget is respected within 5%; under a budget, steering rounds run (issue 9)."""

import time

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

#: The machinery under test, on the simple cases every backend here expresses.
PLAIN = ("--filter", "plain=true")

BUDGET_S = 20.0


def test_budget_is_respected_within_five_percent(tmp_path) -> None:
    out = tmp_path / "run"
    t0 = time.time()
    assert main(["campaign", *PLAIN, "--runner", "golden", "--budget", f"{BUDGET_S:g}s",
                 "--out", str(out)]) == 0
    elapsed = time.time() - t0
    assert 0.95 * BUDGET_S <= elapsed <= 1.05 * BUDGET_S, elapsed
    df = read_results(out)
    assert len(df) > 0 and df["case_id"].is_unique
    assert {"explore", "steer"} <= set(df["origin"])  # hill-climbing rounds under a budget
    assert df["timestamp"].max() - t0 <= 1.05 * BUDGET_S
