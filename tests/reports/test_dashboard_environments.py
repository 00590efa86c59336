"""The dashboard shows the environments of a run: each distinct one with its rows, run
directories and shards, a value that differs between them marked; datasets written before
rows recorded an environment still read, as one `not recorded` group."""

from __future__ import annotations

import json

import pandas as pd

from fia_fuzz.reports import ResultWriter, read_results, render
from fia_fuzz.reports import aggregate as agg

LAPTOP = {"python": "3.11.7", "numpy": "2.4.6", "ml_dtypes": "0.7.0", "torch": "2.13.0+cpu",
          "torch_npu": None, "numba": "0.68.1", "openblas_core": "Haswell",
          "machine": "x86_64"}
ATLAS = {**LAPTOP, "numpy": "1.26.4", "torch": "2.5.1", "torch_npu": "2.5.1",
         "openblas_core": "ARMV8", "machine": "aarch64"}


def _row(i: int, env: dict | None, shard: str) -> dict:
    row = {"case_id": f"c{i}", "runner": "golden", "outcome": "ok", "run_id": "r",
           "shard": shard, "verdict": "pass"}
    if env is not None:
        row.update(environment=json.dumps(env, separators=(",", ":")),
                   input_digest=f"{i:016x}")
    return row


def _runs(tmp_path) -> list:
    """An old run dir (no environment column, compacted to parquet) and a run of two
    shards on two hosts."""
    old, new = tmp_path / "old", tmp_path / "new"
    with ResultWriter(old, "r-s0of1") as w:
        for i in range(2):
            w.write(_row(i, None, "0/1"))
    with ResultWriter(new, "r-s0of2") as w:
        for i in range(3):
            w.write(_row(10 + i, LAPTOP, "0/2"))
    with ResultWriter(new, "r-s1of2") as w:
        for i in range(4):
            w.write(_row(20 + i, ATLAS, "1/2"))
    assert (old / "results" / "r-s0of1.parquet").exists()
    return [old, new]


def test_each_environment_with_its_rows_and_places(tmp_path) -> None:
    old, new = _runs(tmp_path)
    envs = agg.environments(read_results([old, new]))
    assert list(envs["rows"]) == [4, 3, 2]
    atlas, laptop, unknown = (envs.iloc[i] for i in range(3))
    assert (atlas["numpy"], atlas["torch_npu"], atlas["machine"]) == ("1.26.4", "2.5.1",
                                                                       "aarch64")
    assert (laptop["numpy"], laptop["torch_npu"]) == ("2.4.6", "absent")
    assert atlas["where"] == f"{new} 1/2" and laptop["where"] == f"{new} 0/2"
    assert unknown[agg.ENVIRONMENT] == agg.NOT_RECORDED and unknown["where"] == f"{old} 0/1"


def test_a_dataset_without_environments_reads_and_renders(tmp_path) -> None:
    old, _ = _runs(tmp_path)
    df = read_results(old)
    assert "environment" not in df and len(df) == 2
    envs = agg.environments(df)
    assert list(envs[agg.ENVIRONMENT]) == [agg.NOT_RECORDED] and list(envs["rows"]) == [2]
    page = render(df, tmp_path / "old.html").read_text()
    assert "<h2>Environments</h2>" in page and agg.NOT_RECORDED in page
    assert agg.environments(pd.DataFrame()).empty


def test_the_page_marks_what_differs(tmp_path) -> None:
    page = render(read_results(_runs(tmp_path)), tmp_path / "d.html").read_text()
    table = page[page.index("<table id='environments'"):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 4  # the head and three environments
    assert "<td class=differs>1.26.4</td>" in table and "<td class=differs>ARMV8</td>" in table
    assert "<td>3.11.7</td>" in table  # the same Python everywhere: not marked
    assert f"<code>{tmp_path / 'new'} 1/2</code>" in table
