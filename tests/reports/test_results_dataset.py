"""The results dataset: appendable while running, one DataFrame across runs and shards."""

import math
import os

import pandas as pd
import pyarrow.parquet as pq

from fia_fuzz.reports import ResultWriter, read_results


def _row(i: int, **extra) -> dict:
    return {"case_id": f"c{i}", "runner": "r", "outcome": "ok", "out_max_abs": 0.1 * i, **extra}


def test_rows_are_readable_while_the_writer_is_open(tmp_path) -> None:
    w = ResultWriter(tmp_path, "run-s0-w0")
    w.write(_row(1))
    w.write(_row(2))
    live = read_results(tmp_path)
    assert list(live["case_id"]) == ["c1", "c2"]
    assert w.close() == tmp_path / "results" / "run-s0-w0.parquet"
    done = read_results(tmp_path)
    assert list(done["case_id"]) == ["c1", "c2"] and done["run_dir"].iloc[0] == str(tmp_path)


def test_nonfinite_and_mixed_values_survive_compaction(tmp_path) -> None:
    with ResultWriter(tmp_path, "x") as w:
        w.write(_row(1, lse_max_abs=math.inf, out_fa_ratio=math.nan, B=2, error=""))
        w.write(_row(2, lse_max_abs=1.5, out_fa_ratio=2.0, B=None, error=None,
                     worst=3))
        w.write(_row(3, worst="(0, 1)"))  # an int and a str in one column
    df = read_results(tmp_path)
    assert math.isinf(df["lse_max_abs"].iloc[0]) and math.isnan(df["out_fa_ratio"].iloc[0])
    assert list(df["worst"].iloc[1:]) == ["3", "(0, 1)"]


def test_a_line_cut_by_a_kill_is_dropped(tmp_path) -> None:
    w = ResultWriter(tmp_path, "k")
    w.write(_row(1))
    with open(w.journal, "a", encoding="utf-8") as fh:
        fh.write('{"case_id": "c2", "run')  # the process died mid-line
    assert list(read_results(tmp_path)["case_id"]) == ["c1"]


def test_runs_and_shards_merge_into_one_frame(tmp_path) -> None:
    for run in ("a", "b"):
        for shard in range(2):
            with ResultWriter(tmp_path / run, f"{run}-s{shard}") as w:
                for i in range(3):
                    w.write(_row(i, run_id=run, shard=f"{shard}/2"))
    df = read_results([tmp_path / "a", tmp_path / "b"])
    assert len(df) == 12
    assert df.groupby(["run_id", "shard"]).size().eq(3).all()
    assert read_results([tmp_path / "missing"]).empty


def test_a_resumed_journal_newer_than_its_parquet_is_read(tmp_path) -> None:
    with ResultWriter(tmp_path, "r") as w:
        w.write(_row(1))
    w2 = ResultWriter(tmp_path, "r")  # resume: appends to the same journal
    w2.write(_row(2))
    parquet = tmp_path / "results" / "r.parquet"
    os.utime(parquet, (1, 1))
    assert list(read_results(tmp_path)["case_id"]) == ["c1", "c2"]
    w2.close()
    assert isinstance(pd.read_parquet(parquet), pd.DataFrame)
    assert list(read_results(tmp_path)["case_id"]) == ["c1", "c2"]


def test_the_results_folder_is_one_parquet_dataset_whatever_its_files_hold(tmp_path) -> None:
    """A column one file lacks, one all null in one file and typed in another, ints in one
    and floats or strings in another: every parquet reader opens the folder as one table."""
    import pyarrow.dataset as ds

    with ResultWriter(tmp_path, "a") as w:
        w.write(_row(1, device=None, worst=3, draw_xor=1))
    with ResultWriter(tmp_path, "b") as w:
        w.write(_row(2, device=0.5, worst="(0, 1)", replay_result="still fails"))
    with ResultWriter(tmp_path, "c") as w:
        w.write(_row(3))
    assert sorted(os.listdir(tmp_path / "results")) == ["a.parquet", "b.parquet", "c.parquet"]
    df = pd.read_parquet(tmp_path / "results")
    assert sorted(df["case_id"]) == ["c1", "c2", "c3"]
    by_id = df.set_index("case_id")
    assert by_id.loc["c2", "device"] == 0.5 and by_id.loc["c2", "replay_result"] == "still fails"
    assert list(by_id.loc[["c1", "c2"], "worst"]) == ["3", "(0, 1)"]
    assert ds.dataset(tmp_path / "results").to_table().num_rows == 3
    assert len({str(pq.read_schema(p)) for p in (tmp_path / "results").iterdir()}) == 1


def test_a_killed_writers_journal_is_compacted_and_old_layouts_move(tmp_path) -> None:
    from fia_fuzz.reports.dataset import compact_journals

    w = ResultWriter(tmp_path, "killed")
    w.write(_row(1))  # never closed: killed
    legacy = tmp_path / "results" / "old.jsonl"  # a journal where older versions kept it
    legacy.write_text('{"case_id": "c9", "runner": "r", "outcome": "ok"}\n')
    assert sorted(read_results(tmp_path)["case_id"]) == ["c1", "c9"]  # report reads both
    assert compact_journals(tmp_path) == 2
    assert sorted(pd.read_parquet(tmp_path / "results")["case_id"]) == ["c1", "c9"]
    assert (tmp_path / "journal" / "old.jsonl").exists() and not legacy.exists()
    assert compact_journals(tmp_path) == 0
    assert sorted(read_results(tmp_path)["case_id"]) == ["c1", "c9"]
