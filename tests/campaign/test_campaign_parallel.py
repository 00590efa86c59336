"""Workers and shards partition one case stream: disjoint, complete, mergeable."""

import pandas as pd

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

#: The machinery under test, on the simple cases every backend here expresses.
PLAIN = ("--filter", "plain=true")


def _ids(run_dir) -> list[str]:
    return list(read_results(run_dir)["case_id"])


def test_two_workers_draw_disjoint_cases_covering_the_single_run(tmp_path) -> None:
    single, pair = tmp_path / "single", tmp_path / "pair"
    assert main(["campaign", *PLAIN, "--runner", "golden", "--max-cases", "16", "--out",
                 str(single)]) == 0
    assert main(["campaign", *PLAIN, "--runner", "golden", "--max-cases", "16", "--workers", "2",
                 "--devices", "0-1", "--out", str(pair)]) == 0
    df = read_results(pair)
    # the workers claim the stream's cases as they reach them (a worker that starts first
    # may run them all): which worker runs a case depends on timing, never whether it runs
    by_worker = [set(df[df["worker"] == w]["case_id"]) for w in (0, 1)]
    assert not by_worker[0] & by_worker[1]
    assert len(df) == 16 and df["case_id"].is_unique
    assert set(df["case_id"]) == set(_ids(single))
    assert (df["device"] == df["worker"]).all()  # worker w is bound to device w
    ran = sum(1 for ids in by_worker if ids)
    assert len(list((pair / "results").glob("*.parquet"))) == ran
    assert len(pd.read_parquet(pair / "results")) == 16  # any parquet reader opens it


def test_shards_together_cover_one_run_and_merge(tmp_path) -> None:
    single = tmp_path / "single"
    assert main(["campaign", *PLAIN, "--runner", "golden", "--max-cases", "14", "--out",
                 str(single)]) == 0
    shards = [tmp_path / f"shard{i}" for i in (0, 1)]
    for i, d in enumerate(shards):
        assert main(["campaign", *PLAIN, "--runner", "golden", "--max-cases", "14", "--shard",
                     f"{i}/2", "--out", str(d)]) == 0
    parts = [set(_ids(d)) for d in shards]
    assert parts[0] and parts[1] and not parts[0] & parts[1]
    assert parts[0] | parts[1] == set(_ids(single))
    merged = read_results(shards)
    assert len(merged) == 14 and set(merged["shard"]) == {"0/2", "1/2"}
    html = tmp_path / "merged.html"
    assert main(["report", *map(str, shards), "--html", str(html)]) == 0
    assert html.stat().st_size > 0
