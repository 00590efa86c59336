"""A results dataset with a known injected error, built through the real pipeline.

`PerturbingGoldenDouble` is a test double (not a backend): the golden at
device precision, with an error planted in attention_out of every case in
one (layout, query dtype) cell. One planted case gets a far larger error
than the others, so the dashboard must list it first. A second runner
(the plain `golden`) gives the same cases without errors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pandas as pd

from fia_fuzz.campaign import evaluate
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.reports import ResultWriter, read_results
from fia_fuzz.runners import Runner, get_runner
from fia_fuzz.strategies import sample

N_CASES = 48
WORST_FACTOR, OTHER_FACTOR = 1000.0, 20.0


class PerturbingGoldenDouble(Runner):
    """Test double: golden output plus an error of `factor` x the baseline's max error
    in the target (input_layout, query dtype) cell; the first target case gets the most."""

    name = "perturbing-golden-double"

    def __init__(self, target: tuple[str, str]):
        self.target = target
        self.planted: list[float] = []

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def metadata(self) -> dict[str, str]:
        return {"runner": self.name}

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = npu_fused_infer_attention_score(**call, precision="device")
        self.last = 0.0
        cell = (call.get("input_layout", "BSH"), str(np.asarray(call["query"]).dtype))
        if cell != self.target or out.size == 0:
            return out, lse
        truth = npu_fused_infer_attention_score(**call, precision="fp64")[0]
        err = np.abs(out.astype(np.float64) - truth)
        # the baseline's max error, floored like the dashboard's error score (fa_ratio)
        scale = max(float(err.max()), 2.0 ** -11 * float(np.sqrt(np.mean(truth ** 2))))
        factor = WORST_FACTOR if not self.planted else OTHER_FACTOR
        i = int(np.argmax(np.abs(truth)))
        # at least one output ulp there, so rounding keeps the error (an exact baseline,
        # e.g. one key, has err.max() == 0)
        scale = max(scale, float(ml_dtypes.finfo(out.dtype).eps) * abs(float(truth.flat[i])))
        flat = out.reshape(-1).astype(np.float64)
        flat[i] = truth.reshape(-1)[i] + factor * scale
        self.planted.append(factor)
        self.last = factor
        return flat.astype(out.dtype).reshape(out.shape), lse


def draw_cases(n: int, seed: int = 0) -> list[Case]:
    return sample.draw_cases(n, seed, plain=True, q_dist="normal", k_dist="normal",
                             v_dist="normal")


@dataclass
class Injected:
    run_dirs: list[Path]
    df: pd.DataFrame
    target: tuple[str, str]
    worst_case: str
    perturbed: set[str] = field(default_factory=set)


def _target_cell(drawn: list[Case]) -> tuple[str, str]:
    cells = pd.Series([(c.features()["layout"], c.features()["q_dtype"]) for c in drawn
                       if c.features()["q_dtype"] in ("float16", "bfloat16")])
    counts = cells.value_counts(sort=False)
    assert len(counts) >= 2, "the smoke profile should reach several layout x dtype cells"
    # the most drawn cell, ties to the first drawn: pandas releases order value_counts' ties
    # differently
    return counts.idxmax()


def build_injected(root: Path) -> Injected:
    """Two runs (perturbing double + golden, then golden only) under `root`."""
    drawn = draw_cases(N_CASES)
    target = _target_cell(drawn)
    double = PerturbingGoldenDouble(target)
    golden = get_runner("golden")
    worst, perturbed = "", set()
    run_dirs = []
    for run, runners in (("run-a", (double, golden)), ("run-b", (golden,))):
        out = root / run
        run_dirs.append(out)
        for shard, runner in enumerate(runners):
            with ResultWriter(out, f"{run}-s{shard}-w0") as writer:
                for case in drawn:
                    row = evaluate(case, runner)
                    if runner is double and double.last:
                        perturbed.add(case.case_id)
                        if double.last == WORST_FACTOR:
                            worst = case.case_id
                    row.update(run_id=run, shard=f"{shard}/{len(runners)}", worker=0, seed=0,
                               timestamp=time.time())
                    writer.write(row)
    assert worst and len(perturbed) >= 2
    return Injected(run_dirs, read_results(run_dirs), target, worst, perturbed)
