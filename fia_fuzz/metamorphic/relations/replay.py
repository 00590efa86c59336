"""`replay_fresh`: a sequence run step by step equals each step run alone (no golden).

A stateful runner (`runners/stateful.py`) runs the steps of a call sequence in
order, holding its cache (and, in graph mode, a captured graph) across them.
Each step is also a standalone call: run alone on a fresh runner begun from
the step's own cache snapshot, it must give the same outputs. The comparison is
bitwise (the same kernels on the same data; NaN equals a NaN of the same bits),
so a difference is a finding of its own kind (`state`) even when both outputs
are within the golden's tolerance. When a step differs, `diagnose` says how:
its output is the step's with the previous call's lengths (`stale lengths`) or
table (`stale table`), else the step's position (`new block`, `full block`,
`replay`, `rollback`) or `history`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fia_fuzz.op.case import Case
from fia_fuzz.op.sequence import Sequence, StepData
from fia_fuzz.runners.stateful import Factory, Outputs, run_alone

RELATION = "replay_fresh"
#: How in-sequence and fresh outputs are compared.
COMPARISON = "bitwise"


@dataclass(frozen=True)
class StepCompare:
    index: int
    equal: bool
    max_abs: float          # largest |in sequence - fresh| (inf where only one is finite)
    differing: int          # elements that differ bitwise


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


def compare(seq_out: Outputs, fresh: Outputs, index: int = 0) -> StepCompare:
    """Bitwise comparison of two (attention_out, softmax_lse) pairs."""
    differing, worst = 0, 0.0
    for a, b in zip(seq_out, fresh, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return StepCompare(index, False, float("inf"), max(a.size, b.size))
        diff = _bits(a) != _bits(b)
        differing += int(diff.sum())
        if diff.any():
            fa, fb = a.astype(np.float64)[diff], b.astype(np.float64)[diff]
            with np.errstate(invalid="ignore"):
                gap = np.abs(fa - fb)
            worst = max(worst, float(np.nanmax(np.where(np.isnan(gap), np.inf, gap))))
    return StepCompare(index, differing == 0, worst, differing)


@dataclass
class StepRun:
    data: StepData
    in_sequence: Outputs | None
    fresh: Outputs | None
    compare: StepCompare | None
    error: str = ""


def replay_fresh(seq: Sequence, make: Factory) -> Iterator[StepRun]:
    """Run `seq` on one runner from `make`, and each step alone on a fresh one; yields
    each step as it finishes (stops after a step whose run raised: the state is lost)."""
    runner = make()
    pool_k, pool_v = seq.initial_pool()
    runner.begin(seq, pool_k, pool_v)
    try:
        for data in seq.run():
            try:
                got = runner.step(data)
            except MemoryError:
                raise
            except Exception as exc:  # the backend's failure is a result
                yield StepRun(data, None, None, None, f"{type(exc).__name__}: {exc}"[:2000])
                return
            try:
                fresh = run_alone(make, seq, data)
            except Exception as exc:
                yield StepRun(data, got, None, None,
                              f"alone: {type(exc).__name__}: {exc}"[:2000])
                return
            yield StepRun(data, got, fresh, compare(got, fresh, data.index))
    finally:
        runner.end()


def _with(data: StepData, **params: Any) -> StepData:
    case = data.case
    changed = Case(params={**case.params, **params}, fills=case.fills, seed=case.seed,
                   stored=case.stored)
    return replace(data, case=changed, call=changed.call())


def diagnose(seq: Sequence, make: Factory, run: StepRun, previous: StepData | None) -> str:
    """What a differing step's in-sequence output is (see the module doc)."""
    data, got = run.data, run.in_sequence
    state = data.state
    if previous is not None and got is not None:
        prev = previous.state
        stale = {"stale lengths": {"actual_seq_lengths_kv": list(prev.kv)},
                 "stale table": {"block_table": [list(r) for r in prev.table]}}
        bs = seq.block_size
        covers = all(row[(k - 1) // bs] >= 0 for row, k in zip(prev.table, state.kv, strict=True))
        for label, params in stale.items():
            key = next(iter(params))
            if params[key] == data.case.params.get(key) or (key == "block_table"
                                                            and not covers):
                continue  # the same, or a table that does not hold the step's tokens
            try:
                alt = run_alone(make, seq, _with(data, **params))
            except Exception:
                continue
            if compare(got, alt).equal:
                return label
    if state.step.replay:
        return "replay"
    if state.block_new:
        return "new block"
    if state.block_full:
        return "full block"
    if state.position == "after_rollback":
        return "rollback"
    return "history"
