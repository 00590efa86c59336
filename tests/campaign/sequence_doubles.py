"""Stateful test doubles, named as such: the golden model run step by step over a cache
held across steps, each with one planted state bug.

- `test-double-stale-replay`: a replayed step keeps the previous call's lengths
  (`actual_seq_lengths_kv`), as a graph replayed without its length buffer updated.
- `test-double-new-block-offset`: a block appended to a request's table since the
  previous step is read at the previous block's place (its table entry is the one
  before it), as a kernel whose tiling was not refreshed for the new block.

Registered as stateful runners (`runners.stateful.STATEFUL`) and, for `--runner`, as
single-call runners (the correct golden: run alone, every step is right).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.op.sequence import StepData
from fia_fuzz.runners.base import register
from fia_fuzz.runners.golden_runner import GoldenRunner
from fia_fuzz.runners.stateful import HostCache, register_stateful


class _GoldenHeld(HostCache):
    def __init__(self) -> None:
        self.golden = GoldenRunner()
        self.last: StepData | None = None

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        return self.golden.run(call)


class StaleReplay(_GoldenHeld):
    name = "test-double-stale-replay"

    def step(self, data: StepData) -> tuple[np.ndarray, np.ndarray]:
        self.write(data)
        call = {**data.call, "key": self.key, "value": self.value}
        if data.replay and self.last is not None:
            call["actual_seq_lengths_kv"] = list(self.last.call["actual_seq_lengths_kv"])
        self.last = data
        return self.run(call)


class NewBlockOffset(_GoldenHeld):
    name = "test-double-new-block-offset"

    def step(self, data: StepData) -> tuple[np.ndarray, np.ndarray]:
        self.write(data)
        table = np.array(data.call["block_table"], copy=True)
        if self.last is not None:
            before = np.asarray(self.last.call["block_table"])
            for b in range(table.shape[0]):
                for j in range(1, table.shape[1]):
                    if table[b, j] >= 0 and before[b, j] < 0:
                        table[b, j] = table[b, j - 1]
        self.last = data
        return self.run({**data.call, "key": self.key, "value": self.value,
                         "block_table": table.astype(np.int32)})


for _cls in (StaleReplay, NewBlockOffset):
    register_stateful(_cls.name)(_cls)

    @register(_cls.name)
    class _Single(GoldenRunner):
        name = _cls.name
