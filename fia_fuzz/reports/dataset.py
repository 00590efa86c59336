"""The results dataset: one row per case x runner, appended as results come.

Each writer owns one journal file (`results/<stem>.jsonl`), appends a line
per finished case and flushes it to disk, so a crash or kill loses no
finished result. `close()` compacts the journal into `results/<stem>.parquet`
(written to a temporary name, flushed to disk, then renamed). Readers take the
parquet file where one exists and the journal otherwise, across any number of run
directories and shards. A damaged journal line (a torn write, invalid bytes
from two hosts appending to one file) is skipped and reported by its file and
line number; every other row is kept. A damaged parquet file (a torn write a
crash left, however it came about) is read from the journal beside it instead,
which holds the same rows, and named in one line (`repair_results` rebuilds it
from that journal); one with no journal beside it is skipped, also in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

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
        _write_parquet(df, self.parquet)
        return self.parquet

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    """`df` to `path` whole or not at all: a temporary file, flushed to disk, renamed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        _parquet_ready(df).to_parquet(tmp, index=False)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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


def _why(exc: BaseException) -> str:
    """An exception as a short phrase for a one-line warning."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def parquet_damage(path: Path) -> str | None:
    """Why the parquet file `path` cannot be read (its footer and schema), or None."""
    try:
        pq.ParquetFile(path).schema_arrow  # noqa: B018  (reads the footer)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        return _why(exc)
    return None


def read_result_file(path: Path, damaged: list[str] | None = None,
                     notes: list[str] | None = None,
                     columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of one results file (`columns` only, those it has, when given).

    A damaged parquet file is read from the journal beside it (the same rows) and
    `notes` gets one line saying so; with no journal beside it, the file is skipped
    (`notes` says so too) and its rows are missing.
    """
    if path.suffix != ".parquet":
        df = read_journal(path, damaged)
        return df[[c for c in columns if c in df]] if columns is not None else df
    try:
        if columns is None:
            return pd.read_parquet(path)
        have = set(pq.read_schema(path).names)
        return pd.read_parquet(path, columns=[c for c in columns if c in have])
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        why = _why(exc)
    journal = path.with_suffix(".jsonl")
    if journal.exists():
        if notes is not None:
            notes.append(f"warning: {path} is damaged ({why}); read its rows from the "
                         f"journal beside it, {journal.name}, instead")
        return read_result_file(journal, damaged, None, columns)
    if notes is not None:
        notes.append(f"warning: skipped {path}: damaged ({why}) and no journal beside it; "
                     "its rows are missing")
    return pd.DataFrame()


def repair_results(run_dir: str | os.PathLike[str], damaged: list[str] | None = None
                   ) -> list[str]:
    """Rebuild every damaged parquet file of `run_dir` from the journal beside it; one
    line per file rebuilt, or skipped when it has no journal (or none with a row)."""
    rdir = Path(run_dir) / RESULTS
    notes: list[str] = []
    if not rdir.is_dir():
        return notes
    for path in sorted(rdir.glob("*.parquet")):
        why = parquet_damage(path)
        if why is None:
            continue
        journal = path.with_suffix(".jsonl")
        rows = read_journal(journal, damaged) if journal.exists() else pd.DataFrame()
        if rows.empty:
            notes.append(f"warning: skipped {path}: damaged ({why}) and no journal rows "
                         "beside it to rebuild it from; its cases count as not run")
            continue
        _write_parquet(rows, path)
        notes.append(f"rebuilt {path} from its journal {journal.name} ({len(rows)} rows): "
                     f"the parquet file was damaged ({why})")
    return notes


def read_results(run_dirs: list[str | os.PathLike[str]] | str | os.PathLike[str],
                 damaged: list[str] | None = None,
                 notes: list[str] | None = None) -> pd.DataFrame:
    """Every result row of the given run directories as one DataFrame.

    `damaged` collects the journal lines skipped (see `read_journal`), `notes` one line
    per damaged parquet file read from its journal instead or skipped
    (`read_result_file`).
    """
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    frames = []
    for f in result_files(list(run_dirs)):
        frame = read_result_file(f, damaged, notes)
        if not frame.empty:
            frames.append(frame.assign(run_dir=str(f.parent.parent)))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True, sort=False)
