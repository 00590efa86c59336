"""The results dataset: one row per case x runner, appended as results come.

Each writer owns one journal file (`results/<stem>.jsonl`), appends a line
per finished case and flushes it to disk, so a crash or kill loses no
finished result. `close()` compacts the journal into `results/<stem>.parquet`
(written to a temporary name, then renamed). Readers take the parquet file
where one exists and the journal otherwise, across any number of run
directories and shards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

RESULTS = "results"


def _plain(x: Any) -> Any:
    """A JSON-ready scalar; NaN and +-inf stay floats (json writes NaN/Infinity)."""
    if isinstance(x, np.generic):
        return x.item()
    return x


def _parquet_ready(df: pd.DataFrame) -> pd.DataFrame:
    """Columns pyarrow can write: an object column mixing types becomes strings."""
    for col in df.columns:
        if df[col].dtype != object:
            continue
        kinds = {type(v) for v in df[col] if v is not None and v == v}
        if len(kinds) > 1:
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    return df


class ResultWriter:
    """Append-only writer of result rows for one (run, shard, worker)."""

    def __init__(self, out_dir: str | os.PathLike[str], stem: str):
        self.dir = Path(out_dir) / RESULTS
        self.dir.mkdir(parents=True, exist_ok=True)
        self.journal = self.dir / f"{stem}.jsonl"
        self.parquet = self.dir / f"{stem}.parquet"
        self._fh = open(self.journal, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps({k: _plain(v) for k, v in row.items()}) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> Path | None:
        """Compact the journal into parquet; returns the parquet path (None if empty)."""
        self._fh.close()
        df = read_journal(self.journal)
        if df.empty:
            return None
        tmp = self.parquet.with_suffix(".parquet.tmp")
        _parquet_ready(df).to_parquet(tmp, index=False)
        os.replace(tmp, self.parquet)
        return self.parquet

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_journal(path: Path) -> pd.DataFrame:
    """The complete lines of a journal (a line cut by a kill mid-write is dropped)."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill mid-write; every complete line is kept
    return pd.DataFrame(rows)


def result_files(run_dirs: list[str | os.PathLike[str]]) -> list[Path]:
    """The file to read per stem: the parquet if compacted and not older than the
    journal (a resumed writer appends to the journal again), else the journal."""
    files: list[Path] = []
    for d in run_dirs:
        rdir = Path(d) / RESULTS
        if not rdir.is_dir():
            continue
        stems = {p.name.split(".")[0] for p in rdir.iterdir()
                 if p.suffix in (".jsonl", ".parquet")}
        for stem in sorted(stems):
            pq, journal = rdir / f"{stem}.parquet", rdir / f"{stem}.jsonl"
            fresh = pq.exists() and (not journal.exists()
                                     or pq.stat().st_mtime >= journal.stat().st_mtime)
            files.append(pq if fresh else journal)
    return files


def read_results(run_dirs: list[str | os.PathLike[str]] | str | os.PathLike[str]
                 ) -> pd.DataFrame:
    """Every result row of the given run directories as one DataFrame."""
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    frames = []
    for f in result_files(list(run_dirs)):
        frame = pd.read_parquet(f) if f.suffix == ".parquet" else read_journal(f)
        if not frame.empty:
            frames.append(frame.assign(run_dir=str(f.parent.parent)))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)
