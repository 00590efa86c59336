"""A planted bug that only a kernel route exposes: the split-fuse double is wrong only on
the TND split-fuse route when a request's KV holds one key past a full 512-key stack
(runner_doubles.ROUTE_CELL). A CI-sized nightly campaign, which aims at the routes'
cells, finds it and shrinks it to a call still on that route and boundary; an unfiltered
smoke campaign of the same size, which draws the documented space alone, does not."""

from __future__ import annotations

import json

import runner_doubles  # noqa: F401  (registers the doubles)
from runner_doubles import ROUTE_CELL

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

RUNNER = "test-double-split-fuse-stack-edge"
#: Cases of the campaign: the nightly stream of seed 57 reaches the cell at its 10th case
#: (retune with the stream: runner_doubles.SEED's note)
CASES, SEED = "42", "57"


def _campaign(tmp_path, profile: str):  # noqa: ANN202  (a DataFrame and the shrink notes)
    out = tmp_path / profile
    assert main(["campaign", "--profile", profile, "--seed", SEED, "--runner", RUNNER,
                 "--max-cases", CASES, "--out", str(out)]) in (0, 1)
    notes = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    return read_results(out), notes


def test_a_nightly_campaign_finds_the_route_bug_and_shrinks_it_on_its_route(tmp_path
                                                                            ) -> None:
    df, notes = _campaign(tmp_path, "nightly")
    failed = df[df["verdict"] == "fail"]
    assert len(failed) and set(failed["route_edge"]) == {ROUTE_CELL[1]}
    assert notes and all(n["minimal_fails"] for n in notes)
    shrunk = df[df["origin"] == "shrunk"]
    assert len(shrunk)
    assert set(zip(shrunk["route"], shrunk["route_edge"], strict=True)) == {ROUTE_CELL}
    assert all(n["size_minimal"] <= n["size_found"] for n in notes)


def test_a_smoke_campaign_of_the_same_size_misses_it(tmp_path) -> None:
    df, notes = _campaign(tmp_path, "smoke")
    assert len(df) >= int(CASES)
    assert not (df["route_edge"] == ROUTE_CELL[1]).any()
    assert (df["verdict"] != "fail").all() and notes == []

