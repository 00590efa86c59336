"""The results dataset: one row per case x runner, appended as results come.

Each writer owns one journal file (`results/<stem>.jsonl`), appends a line
per finished case and flushes it to disk, so a crash or kill loses no
finished result. `close()` compacts the journal into `results/<stem>.parquet`
(written to a temporary name, then renamed). Readers take the parquet file
where one exists and the journal otherwise, across any number of run
directories and shards. A damaged journal line (a torn write, invalid bytes
from two hosts appending to one file) is skipped and reported by its file and
line number; every other row is kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fia_fuzz.files.cases import InputError

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


def read_journal(path: Path, damaged: list[str] | None = None) -> pd.DataFrame:
    """The intact rows of a journal; `damaged` gets "path:line" of each line skipped.

    A line is damaged when it is not UTF-8 or not one JSON object (cut by a
    kill mid-write, or bytes of another writer): it is skipped, so the case it
    held counts as not done and a resume runs it again.
    """
    rows = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                row = None
            if isinstance(row, dict):
                rows.append(row)
            elif damaged is not None:
                damaged.append(f"{path}:{lineno}")
    return pd.DataFrame(rows)


def damage_warning(damaged: list[str]) -> str | None:
    """One line naming the damaged journal lines that were skipped, or None."""
    if not damaged:
        return None
    shown = ", ".join(damaged[:5]) + (f" and {len(damaged) - 5} more" if len(damaged) > 5 else "")
    return (f"warning: skipped {len(damaged)} damaged result line(s) (not UTF-8 or not JSON; "
            f"their cases count as not run): {shown}")


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


def read_results(run_dirs: list[str | os.PathLike[str]] | str | os.PathLike[str],
                 damaged: list[str] | None = None) -> pd.DataFrame:
    """Every result row of the given run directories as one DataFrame.

    `damaged` collects the journal lines skipped (see `read_journal`); an
    unreadable parquet file raises InputError naming it.
    """
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    frames = []
    for f in result_files(list(run_dirs)):
        if f.suffix == ".parquet":
            try:
                frame = pd.read_parquet(f)
            except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
                raise InputError(f"{f}: cannot read this results file ({exc})") from None
        else:
            frame = read_journal(f, damaged)
        if not frame.empty:
            frames.append(frame.assign(run_dir=str(f.parent.parent)))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)
