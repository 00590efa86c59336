"""What a campaign is asked to do: the command line as data, and its small parsers."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fia_fuzz.op.case import Case

#: Feature axes a failing cell is made of when the strategies do not say (see `cell_axes`).
_DEFAULT_CELL_AXES = ("layout", "q_dtype", "branch")


@dataclass(frozen=True)
class CampaignConfig:
    """One campaign invocation. Everything that shapes the case stream is in `fingerprint`."""

    runner: str = "torch-sdpa"
    out: Path = Path("runs/demo")
    max_cases: int | None = None
    budget_s: float | None = None
    seed: int = 0
    profile: str = "smoke"
    filters: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    devices: tuple[int, ...] | None = None
    shard: int = 0
    shards: int = 1
    negative: bool = False
    #: The rule profile cases are drawn under and judged by ("docs", "atlas-a2", ...).
    rules: str = "docs"
    #: A case running longer than this is killed and recorded as `timeout`.
    case_timeout_s: float = 300.0
    #: Address-space cap of a worker process in bytes (RLIMIT_AS); None = no cap.
    memory_limit: int | None = None
    #: Memory of one device in bytes: a case whose `device_bytes` exceed it is recorded as
    #: `skipped`, not run (None: nothing is skipped).
    device_memory: int | None = None
    #: Full failure bundles per failure signature and run (every failing row is kept, and
    #: points to its signature's first bundle; bundle_quota.py).
    bundles_per_signature: int = 3
    #: Bytes the run's bundles may take on this host (None: no cap; bundle_quota.py).
    bundle_budget: int | None = 16 << 30
    shrink: bool = True
    #: Examples the shrink search of one cell may generate before giving up.
    shrink_examples: int = 60
    #: Wall-clock cap of shrinking one cell.
    shrink_seconds: float = 120.0
    #: Examples per Hypothesis round of the stream (see partition.py).
    round_size: int = 50
    #: Also check every metamorphic relation of each case on the same runner (mm_* columns;
    #: results only, so not part of the fingerprint).
    metamorphic: bool = False
    #: Cases replayed first (origin=seed, e.g. imported from a model's dump); the stream
    #: then draws from their feature cells only (`seed_cells`).
    seed_cases: tuple[Case, ...] = ()
    #: Run directories of earlier nights whose bundles are replayed before the new draws
    #: (`--replay`; each replay row records its `replay_result`). What is replayed is no
    #: part of the fingerprint: the stream stays the command line's.
    replay: tuple[Path, ...] = ()
    #: Aim a share of the stream's draws at rare feature pairs (strategies/pair_aims.py);
    #: False draws the profile's mix alone (`--no-pair-aims`).
    pair_aims: bool = True

    @property
    def mode(self) -> str:
        """The rows' `mode`: "negative" (illegal calls sent as is) or "precision"."""
        return "negative" if self.negative else "precision"

    def fingerprint(self) -> str:
        """Identity of the command: a rerun with the same one resumes the same run."""
        keys = ("runner", "max_cases", "budget_s", "seed", "profile", "filters", "workers",
                "shard", "shards", "negative", "round_size")
        keys += ("rules",) if self.rules != "docs" else ()  # docs runs keep their old identity
        keys += ("device_memory",) if self.device_memory is not None else ()
        keys += ("pair_aims",) if not self.pair_aims else ()
        d: dict[str, Any] = {k: getattr(self, k) for k in keys}
        if self.seed_cases:
            d["seed_cases"] = sorted(c.case_id for c in self.seed_cases)
        text = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def seed_cells(self) -> list[dict[str, Any]]:
        """The feature cells of the seed cases, each merged with `filters` (conflicts left out)."""
        cells: list[dict[str, Any]] = []
        for case in self.seed_cases:
            cell = dict(cell_of(case.features()))
            if any(v is None for v in cell.values()) or any(
                    self.filters.get(k, v) != v for k, v in cell.items()):
                continue
            merged = {**self.filters, **cell}
            if merged not in cells:
                cells.append(merged)
        return cells

    def device_of(self, worker: int) -> int | None:
        if not self.devices:
            return None
        return self.devices[worker % len(self.devices)]

    def sharing(self, worker: int) -> int:
        """How many of this host's workers use the device of `worker` (itself included):
        `--devices 0,0,0,0` puts four workers on device 0; without --devices every worker
        uses the one device its runner sees first."""
        dev = self.device_of(worker)
        return sum(1 for w in range(self.workers) if self.device_of(w) == dev)


#: The outcome of a case the device cannot hold (device_bytes over --device-memory).
SKIPPED = "skipped"
#: Byte units of sizes given and printed (powers of 1024).
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def device_shortfall(case: Case, device_memory: int | None, sharing: int = 1,
                     working: int = 0) -> str:
    """Why a worker cannot hold `case` on a device of `device_memory` bytes that `sharing`
    workers use at once, each with an even share ("" when it can); `working` is what the
    runner allocates beyond the case's inputs and outputs (`Runner.working_bytes`)."""
    if device_memory is None:
        return ""
    share = device_memory // max(1, sharing)
    need = case.device_bytes()
    if need + working <= share:
        return ""
    held = f"the device holds {_size(device_memory)} (--device-memory)"
    if sharing > 1:
        held = (f"this worker's share holds {_size(share)} (1/{sharing} of a device of "
                f"{_size(device_memory)} (--device-memory) that {sharing} workers use)")
    plus = f" + the runner's working memory {working}" if working else ""
    return (f"device memory: the case needs {_size(need + working)} (device_bytes {need}"
            f"{plus}), {held}")


def size_text(n: int) -> str:
    """`n` bytes in the largest power-of-1024 unit it reaches, e.g. '1.50 GiB'."""
    return _size(n)


#: What one worker takes of its host's memory (its partition process and its device
#: process, each with NumPy, torch and the golden loaded), for bounding --workers.
WORKER_BYTES = 512 << 20
#: Worker processes per CPU at most (they wait on devices and I/O, not only compute).
WORKERS_PER_CPU = 4


def host_workers() -> tuple[int, str]:
    """(the most workers this host can run, why): WORKERS_PER_CPU per CPU, and no more than
    its memory holds at WORKER_BYTES each."""
    cpus = os.cpu_count() or 1
    most, why = WORKERS_PER_CPU * cpus, f"{WORKERS_PER_CPU} x its {cpus} CPU(s)"
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = 0
    if memory and memory // WORKER_BYTES < most:
        most = max(1, memory // WORKER_BYTES)
        why = f"its {_size(memory)} of memory at {_size(WORKER_BYTES)} per worker"
    return most, why


def _size(n: int) -> str:
    unit = next(u for u in ("TiB", "GiB", "MiB", "KiB", "B") if n >= _UNITS[u] or u == "B")
    return f"{n / _UNITS[unit]:.2f} {unit}" if unit != "B" else f"{n} B"


def parse_duration(text: str) -> float:
    """'90s', '2m', '8h', '1h30m' or plain seconds -> seconds."""
    total, num = 0.0, ""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in units and num:
            total += float(num) * units[ch]
            num = ""
        else:
            raise ValueError(f"cannot read duration {text!r} (use e.g. 90s, 2m, 8h)")
    return total + (float(num) if num else 0.0)


def parse_shard(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n (Slurm: $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)."""
    i, sep, n = text.partition("/")
    try:
        shard, shards = int(i), int(n)
    except ValueError:
        shard, shards = -1, 0
    if not sep or shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"--shard {text!r}: expected i/n with 0 <= i < n, e.g. 0/4")
    return shard, shards


def parse_devices(text: str) -> tuple[int, ...]:
    """'0-7', '0,2,4' or '0-3,6' -> device indices in order."""
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise ValueError(f"--devices {text!r}: expected e.g. 0-7 or 0,2,4") from None
    if not out:
        raise ValueError(f"--devices {text!r}: no device index")
    return tuple(out)


def parse_size(text: str) -> int:
    """'16G', '16GiB', '512M' or bytes -> bytes (K/M/G/T are powers of 1024)."""
    units = {u[0]: v for u, v in _UNITS.items() if u != "B"}
    t = text.strip().upper()
    t = t[:-2] if t.endswith("IB") else t[:-1] if t.endswith("B") else t
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except (ValueError, OverflowError):
        raise ValueError(f"cannot read size {text!r} (use e.g. 512M, 32G, 64GiB)") from None


def cell_axes() -> tuple[str, ...]:
    """The feature axes `cases(**filters)` can pin: a failing cell is a value for each."""
    filters = getattr(importlib.import_module("fia_fuzz.strategies.cases"), "FILTERS", None)
    return tuple(filters) if filters else _DEFAULT_CELL_AXES


def cell_of(features: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The feature cell of a case (or of a result row) as a hashable tuple."""
    return tuple((k, features.get(k)) for k in cell_axes())
