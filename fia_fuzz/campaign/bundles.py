"""Failure bundles: everything needed to reproduce one failing case, on disk, no pickle.

`OUT/bundles/<case_id>/` holds `case.json` (the case with its recorded input digest and
environment, `case.npz` beside it when it has stored tensors), `outputs.npz` (the
device's attention_out and softmax_lse; both .npz as op/stored.py writes them),
`metrics.json` (the result row), `repro.txt` (the commands) and `repro_npu.py` with its
`inputs.npz` and `golden.npz` (a standalone torch_npu script, see
repro_npu.py); from an aclnn runner also `repro_aclnn.c` with its `aclnn/` data
(a standalone C program, see repro_aclnn.py). Written to a hidden temporary
directory and renamed, so a bundle is complete or absent: a write cut short removes
its directory, and a campaign's start removes what a kill left
(`remove_unfinished_bundles`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.campaign.repro_aclnn import repro_aclnn_lines, write_repro_aclnn
from fia_fuzz.campaign.repro_npu import write_repro_npu
from fia_fuzz.files.cases import (
    InputError,
    Recorded,
    load_case,
    load_recorded,
    read_json,
    recorded,
    write_case,
)
from fia_fuzz.op import stored
from fia_fuzz.op.case import Case

BUNDLES = "bundles"
OUTPUT_NAMES = ("attention_out", "softmax_lse")
#: Keys of the golden outputs `evaluate` adds to a failing case's outputs (for repro_npu.py).
GOLDEN_NAMES = ("attention_out_fp64", "softmax_lse_fp64", "attention_out_device",
                "softmax_lse_device")


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x


def repro_lines(bundle: Path, case: Case, runner: str) -> list[str]:
    return [f"fia-fuzz repro {bundle}                  # stored device output, golden recomputed",
            f"fia-fuzz repro {bundle} --runner {runner}   # live on the backend",
            f"python {bundle}/repro_npu.py   # standalone: numpy, torch and torch_npu only",
            *repro_aclnn_lines(bundle, runner),
            f"# case {case.case_id}; case.json alone also works: fia-fuzz repro case.json"]


#: Ends the name of a bundle being written (`.<case_id>-<random>.tmp`, hidden).
TMP_SUFFIX = ".tmp"
#: A temporary bundle directory older than this (seconds) belongs to no live write.
STALE_S = 3600.0

#: Writes a bundle's array files into the directory it is given; False when it could not.
ArrayWriter = Callable[[Path], bool]


def write_arrays(directory: str | os.PathLike[str], case: Case, runner: str,
                 outputs: dict[str, np.ndarray] | None,
                 call: dict[str, Any] | None = None) -> None:
    """The bundle's array files: `outputs.npz` (the device's outputs, when they exist),
    repro_npu.py with inputs.npz and golden.npz (the golden's outputs, when it ran), and
    for an aclnn runner repro_aclnn.c with its aclnn/ files (`call`: the case's inputs
    already materialised, not materialised again)."""
    d = Path(directory)
    if outputs is not None and all(n in outputs for n in OUTPUT_NAMES):
        stored.save(d / "outputs.npz", {n: outputs[n] for n in OUTPUT_NAMES})
    golden = {n: outputs[n] for n in GOLDEN_NAMES if n in outputs} if outputs else None
    write_repro_npu(d, case, runner, golden, call)
    write_repro_aclnn(d, case, runner, golden, call)


def dir_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes of the files under `path` (0 when it is gone)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                continue
    return total


def write_bundle(out_dir: str | os.PathLike[str], case: Case, row: dict[str, Any],
                 outputs: dict[str, np.ndarray] | None = None,
                 arrays: ArrayWriter | None = None,
                 admit: Callable[[int], bool] | None = None) -> Path | None:
    """Write (or replace) the bundle of `case` under `out_dir`; returns its directory.

    The array files come from `arrays` (e.g. the device process that holds the outputs)
    or, without it, from `write_arrays` with `outputs`; None when `arrays` could not
    write them, or when `admit`, given the finished bundle's bytes, refuses it (a disk
    budget): no bundle then. Whatever ends the write early, its temporary directory is
    removed: a bundle is complete or absent.
    """
    root = Path(out_dir) / BUNDLES
    root.mkdir(parents=True, exist_ok=True)
    final = root / case.case_id
    tmp = Path(tempfile.mkdtemp(prefix=f".{case.case_id}-", suffix=TMP_SUFFIX, dir=root))
    try:
        runner = str(row.get("runner_spec") or row.get("runner"))
        if arrays is None:
            write_arrays(tmp, case, runner, outputs)
        elif not arrays(tmp):
            return None
        write_case(tmp / "case.json", case, recorded(row, "the case's row"))
        metrics = {k: _plain(v) for k, v in row.items() if k not in ("case_json", "bundle")}
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True)
                                          + "\n")
        (tmp / "repro.txt").write_text(
            "\n".join(repro_lines(final, case, str(row.get("runner")))) + "\n")
        if admit is not None and not admit(dir_bytes(tmp)):
            return None
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        return final
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def unfinished_bundles(out_dir: str | os.PathLike[str], older_than: float = 0.0
                       ) -> list[Path]:
    """Temporary bundle directories under `out_dir` (hidden: `.<case_id>-...`) last
    changed more than `older_than` seconds ago: writes a kill cut short."""
    root = Path(out_dir) / BUNDLES
    if not root.is_dir():
        return []
    now = time.time()
    found = []
    for p in sorted(root.iterdir()):
        try:
            if p.name.startswith(".") and p.is_dir() and now - p.stat().st_mtime >= older_than:
                found.append(p)
        except FileNotFoundError:
            continue  # finished (renamed) or removed meanwhile
    return found


def remove_unfinished_bundles(out_dir: str | os.PathLike[str], older_than: float = 0.0
                              ) -> int:
    """Remove the temporary bundle directories `unfinished_bundles` lists; how many."""
    gone = 0
    for p in unfinished_bundles(out_dir, older_than):
        shutil.rmtree(p, ignore_errors=True)
        gone += not p.exists()
    return gone


@dataclass
class Bundle:
    path: Path
    case: Case
    metrics: dict[str, Any]
    outputs: tuple[np.ndarray, np.ndarray] | None
    #: The input digest and environment recorded in case.json (Recorded(): none).
    recorded: Recorded = Recorded()
    #: A failing row with no bundle of its own (past its signature's first bundles):
    #: `path` is its run directory, `metrics` its row (see `row_bundle`).
    of_row: bool = False

    @property
    def signature_bundle(self) -> str:
        """The directory of the signature's first bundle a row points to ('' if none)."""
        v = self.metrics.get("signature_bundle")
        return v if isinstance(v, str) else ""


def load_bundle(path: str | os.PathLike[str]) -> Bundle:
    p = Path(path)
    case = load_case(p / "case.json")
    record = load_recorded(p / "case.json")
    metrics = read_json(p / "metrics.json") if (p / "metrics.json").exists() else {}
    if not isinstance(metrics, dict):
        raise InputError(f"{p / 'metrics.json'}: expected a JSON object of metrics")
    outputs = None
    if (p / "outputs.npz").exists():
        try:
            arrays = stored.load(p / "outputs.npz")
            outputs = arrays[OUTPUT_NAMES[0]], arrays[OUTPUT_NAMES[1]]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{p / 'outputs.npz'}: cannot read the stored outputs "
                             f"({exc})") from None
    return Bundle(path=p, case=case, metrics=metrics, outputs=outputs, recorded=record)


def row_bundle(case_id: str, run_dirs: list[str]) -> Bundle | None:
    """The result row of `case_id` in `run_dirs` as a bundle without arrays (its case,
    recorded input digest, statistics and its signature's bundle), the first found; None
    when no row has it. Its inputs rebuild bit for bit from its case."""
    from fia_fuzz.reports import read_results

    for d in run_dirs:
        if not Path(d).is_dir():
            continue
        df = read_results([d])
        if df.empty or "case_id" not in df or "case_json" not in df:
            continue
        hit = df[df["case_id"] == case_id]
        if hit.empty:
            continue
        row = {k: v for k, v in hit.iloc[0].items() if not _missing(v)}
        return Bundle(path=Path(d), case=Case.from_json(row["case_json"]), metrics=row,
                      outputs=None, recorded=recorded(row, f"the row of {case_id} in {d}"),
                      of_row=True)
    return None


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def find_bundle(case_id: str, run_dirs: list[str]) -> Path | None:
    for d in run_dirs:
        p = Path(d) / BUNDLES / case_id
        if (p / "case.json").exists():
            return p
    return None


def bundle_cases(out_dir: str | os.PathLike[str], unreadable: list[str] | None = None
                 ) -> list[tuple[Case, dict[str, Any], Path]]:
    """Every bundled case under `out_dir` with its recorded metrics and its directory (the
    failure corpus); `unreadable` gets `path: why` of each bundle that cannot be read (a
    damaged one is no corpus case; its result row stays)."""
    root = Path(out_dir) / BUNDLES
    found = []
    if root.is_dir():
        for p in sorted(root.iterdir()):
            if p.name.startswith(".") or not p.is_dir():
                continue
            if not (p / "case.json").exists():
                if unreadable is not None:
                    unreadable.append(f"{p}: no case.json")
                continue
            try:
                b = load_bundle(p)
            except InputError as exc:
                if unreadable is not None:
                    unreadable.append(f"{p}: {exc}")
                continue
            found.append((b.case, b.metrics, p))
    return found
