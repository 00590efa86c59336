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
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

RESULTS = "results"


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x


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
        df.to_parquet(tmp, index=False)
        os.replace(tmp, self.parquet)
        return self.parquet

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_journal(path: Path) -> pd.DataFrame:
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
    """The file to read per stem: parquet if compacted, else the journal."""
    files: list[Path] = []
    for d in run_dirs:
        rdir = Path(d) / RESULTS
        if not rdir.is_dir():
            continue
        stems = {p.name.split(".")[0] for p in rdir.iterdir()
                 if p.suffix in (".jsonl", ".parquet")}
        for stem in sorted(stems):
            pq = rdir / f"{stem}.parquet"
            files.append(pq if pq.exists() else rdir / f"{stem}.jsonl")
    return files


def read_results(run_dirs: list[str | os.PathLike[str]] | str | os.PathLike[str]
                 ) -> pd.DataFrame:
    """Every result row of the given run directories as one DataFrame."""
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    frames = []
    for f in result_files(list(run_dirs)):
        frames.append(pd.read_parquet(f) if f.suffix == ".parquet" else read_journal(f))
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)
