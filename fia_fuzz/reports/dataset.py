"""The results dataset: one row per case x runner, appended as results come.

`OUT/results/` holds parquet files only, all of one schema, so any parquet reader opens
the folder as it is (`pandas.read_parquet("OUT/results")`, `pyarrow.dataset`, DuckDB,
Polars). Each writer owns one journal (`OUT/journal/<stem>.jsonl`), appends a line per
finished case and flushes it to disk, so a crash or kill loses no finished result.
`close()` compacts the journal into `results/<stem>.parquet`; a journal a kill left
uncompacted is compacted when the next campaign starts in OUT (`compact_journals`).
Compaction writes a temporary file outside results/ and renames it, under a lock on the
folder, and keeps one schema across every file there (`unify_schemas`: a column missing
from a file is added as nulls, an all-null column takes the type the others give it, a
column typed differently in two files becomes the wider type, strings at worst), so
workers, attempts, runners and nights read as one table.

`fia-fuzz report` reads more: the parquet file where one is fresh, the journal otherwise
(a run still going), across any number of run directories and shards. A damaged journal
line (a torn write, invalid bytes from two hosts appending to one file) is skipped and
reported by its file and line number; every other row is kept. A damaged parquet file is
read from its journal instead, which holds the same rows, and named in one line
(`repair_results` rebuilds it from that journal); one with no journal is skipped, also
in one line. Run directories written before journals had their own folder (journals in
results/) read the same; a campaign starting in one moves them to journal/.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

RESULTS = "results"
#: Where the journals live (beside results/, never in it: results/ is parquet only).
JOURNAL = "journal"
_LOCK = ".compact.lock"


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
        self.out = Path(out_dir)
        self.dir = self.out / RESULTS
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.out / JOURNAL).mkdir(parents=True, exist_ok=True)
        self.journal = self.out / JOURNAL / f"{stem}.jsonl"
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
        write_parquet(df, self.parquet)
        return self.parquet

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _widen(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type two files' columns of one name share: the other's type where one is all
    null, float64 for ints and floats, strings for anything else that differs."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.int64() if pa.types.is_integer(a) and pa.types.is_integer(b) else \
            pa.float64()
    return pa.string()


def unify_schemas(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema every file of results/ is written in: each column of any of `schemas`
    (in order of first appearance), typed by `_widen`."""
    types: dict[str, pa.DataType] = {}
    for schema in schemas:
        for f in schema:
            types[f.name] = _widen(types[f.name], f.type) if f.name in types else f.type
    return pa.schema(list(types.items()))


def _as_strings(col: pa.ChunkedArray) -> pa.Array:
    try:
        return col.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else v if isinstance(v, str) else str(v)
                         for v in col.to_pylist()], pa.string())


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema`: its columns cast, the ones it lacks all null, no metadata."""
    cols = []
    for f in schema:
        if f.name not in table.column_names:
            cols.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if col.type == f.type:
            cols.append(col)
        elif pa.types.is_string(f.type):
            cols.append(_as_strings(col))
        else:
            cols.append(col.cast(f.type))
    return pa.Table.from_arrays(cols, schema=schema)


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold OUT's compaction lock: one writer at a time re-types results/."""
    (out / JOURNAL).mkdir(parents=True, exist_ok=True)
    with open(out / JOURNAL / _LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _replace(table: pa.Table, path: Path, keep_mtime: bool = False) -> None:
    """`table` to `path` whole or not at all: a temporary file outside results/ (a reader
    of the folder never meets it), flushed to disk, renamed. `keep_mtime`: the file keeps
    its time (re-typed, it holds the same rows; see `_fresh`)."""
    tmp = path.parent.parent / JOURNAL / f".{path.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if keep_mtime:
            st = path.stat()
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """`df` to the parquet file `path` of a results/ folder, in the folder's one schema:
    the other files there are re-typed first where `df` widens it (`unify_schemas`)."""
    table = pa.Table.from_pandas(_parquet_ready(df), preserve_index=False)
    out = path.parent.parent
    with _locked(out):
        others = []
        for p in sorted(path.parent.glob("*.parquet")):
            if p != path and parquet_damage(p) is None:
                others.append((p, pq.read_schema(p).remove_metadata()))
        schema = unify_schemas([s for _, s in others] + [table.schema])
        for p, s in others:
            if not s.equals(schema):
                _replace(conform(pq.read_table(p), schema), p, keep_mtime=True)
        _replace(conform(table, schema), path)


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


def journal_of(parquet: Path) -> Path:
    """The journal of a results/ parquet file: in journal/, or beside it in a run directory
    written before journals had their own folder."""
    mine = parquet.parent.parent / JOURNAL / parquet.with_suffix(".jsonl").name
    old = parquet.with_suffix(".jsonl")
    return old if old.exists() and not mine.exists() else mine


def _stems(run_dir: Path) -> list[str]:
    names = [p.name for d in (run_dir / RESULTS, run_dir / JOURNAL) if d.is_dir()
             for p in d.iterdir() if not p.name.startswith(".")
             and p.suffix in (".jsonl", ".parquet")]
    return sorted({n.split(".")[0] for n in names})


def _fresh(parquet: Path, journal: Path) -> bool:
    """Whether the parquet file holds every row of its journal (not older than it)."""
    return parquet.exists() and (not journal.exists()
                                 or parquet.stat().st_mtime >= journal.stat().st_mtime)


def result_files(run_dirs: list[str | os.PathLike[str]]) -> list[Path]:
    """The file to read per stem: the parquet if compacted and not older than the
    journal (a writer still appending to it), else the journal."""
    files: list[Path] = []
    for d in run_dirs:
        for stem in _stems(Path(d)):
            parquet = Path(d) / RESULTS / f"{stem}.parquet"
            journal = journal_of(parquet)
            files.append(parquet if _fresh(parquet, journal) else journal)
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

    A damaged parquet file is read from its journal (the same rows) and `notes` gets one
    line saying so; with no journal, the file is skipped (`notes` says so too) and its
    rows are missing.
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
    journal = journal_of(path)
    if journal.exists():
        if notes is not None:
            notes.append(f"warning: {path} is damaged ({why}); read its rows from its "
                         f"journal, {journal}, instead")
        return read_result_file(journal, damaged, None, columns)
    if notes is not None:
        notes.append(f"warning: skipped {path}: damaged ({why}) and no journal for it; "
                     "its rows are missing")
    return pd.DataFrame()


def repair_results(run_dir: str | os.PathLike[str], damaged: list[str] | None = None
                   ) -> list[str]:
    """Rebuild every damaged parquet file of `run_dir` from its journal; one line per file
    rebuilt, or skipped when it has no journal (or none with a row). A damaged file that
    cannot be rebuilt leaves results/ (to journal/, as `<name>.damaged`): the folder stays
    one every parquet reader opens."""
    rdir = Path(run_dir) / RESULTS
    notes: list[str] = []
    if not rdir.is_dir():
        return notes
    for path in sorted(rdir.glob("*.parquet")):
        why = parquet_damage(path)
        if why is None:
            continue
        journal = journal_of(path)
        rows = read_journal(journal, damaged) if journal.exists() else pd.DataFrame()
        if rows.empty:
            aside = Path(run_dir) / JOURNAL / f"{path.name}.damaged"
            aside.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, aside)
            notes.append(f"warning: skipped {path}: damaged ({why}) and no journal rows to "
                         f"rebuild it from (moved to {aside}); its cases count as not run")
            continue
        write_parquet(rows, path)
        notes.append(f"rebuilt {path} from its journal {journal.name} ({len(rows)} rows): "
                     f"the parquet file was damaged ({why})")
    return notes


def compact_journals(run_dir: str | os.PathLike[str], damaged: list[str] | None = None
                     ) -> int:
    """Compact every journal of `run_dir` whose parquet file is missing or older (a
    writer a kill stopped before its `close`) into results/; how many. Journals found in
    results/ (an older layout) move to journal/ first."""
    out = Path(run_dir)
    rdir, jdir = out / RESULTS, out / JOURNAL
    if rdir.is_dir():
        for old in sorted(rdir.glob("*.jsonl")):
            jdir.mkdir(parents=True, exist_ok=True)
            if not (jdir / old.name).exists():
                os.replace(old, jdir / old.name)
    compacted = 0
    for journal in sorted(jdir.glob("*.jsonl")) if jdir.is_dir() else []:
        parquet = rdir / journal.with_suffix(".parquet").name
        if _fresh(parquet, journal):
            continue
        rows = read_journal(journal, damaged)
        if rows.empty:
            continue
        rdir.mkdir(parents=True, exist_ok=True)
        write_parquet(rows, parquet)
        compacted += 1
    return compacted


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
