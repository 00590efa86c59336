"""Stateful runners: a persistent-cache torch runner and the stateless adapter give, step by
step, bitwise what each step gives alone (`replay_fresh`); the CUDA graph replay does too."""

from __future__ import annotations

import numpy as np
import pytest

from fia_fuzz.metamorphic.relations.replay import compare, replay_fresh
from fia_fuzz.op.sequence import Sequence, Step
from fia_fuzz.runners import get_runner
from fia_fuzz.runners.stateful import (
    STATEFUL,
    Stateless,
    TorchCudaGraph,
    cuda_available,
    stateful_factory,
)

SEQ = Sequence(workload="decode_loop", form="TND", dtype="bfloat16", heads=(2, 1, 128),
               block_size=128, num_blocks=4, table_width=2, context=(0, 0),
               steps=(Step("prefill", (127, 30)), Step("decode", (1, 1)),
                      Step("decode", (1, 1))), alloc="shuffled", seed=3)
GRAPH = Sequence(workload="graph_replay", form="BSH", dtype="float16", heads=(4, 2, 64),
                 block_size=16, num_blocks=8, table_width=4, context=(15, 31),
                 steps=(Step("decode", (1, 1)), Step("decode", (1, 1), replay=True),
                        Step("decode", (1, 1), replay=True)), alloc="shuffled", seed=4)


def test_torch_sdpa_has_a_persistent_cache_form_equal_to_fresh_steps() -> None:
    make = stateful_factory("torch-sdpa", lambda: get_runner("torch-sdpa"))
    assert make is STATEFUL["torch-sdpa"]
    runs = list(replay_fresh(SEQ, make))
    assert len(runs) == 3 and all(r.compare and r.compare.equal for r in runs)
    assert [r.data.state.position for r in runs] == ["prefill", "block_full", "block_new"]


def test_any_single_call_runner_is_a_stateless_stateful_runner() -> None:
    make = stateful_factory("golden", lambda: get_runner("golden"))
    assert isinstance(make(), Stateless)
    assert all(r.compare.equal for r in replay_fresh(GRAPH, make))


def test_bitwise_comparison_sees_one_ulp() -> None:
    a = np.ones((2, 3), np.float16)
    b = a.copy()
    b[1, 2] = np.nextafter(np.float16(1), np.float16(2))
    assert compare((a, a), (a, a)).equal
    got = compare((a, a), (b, a))
    assert not got.equal and got.differing == 1 and got.max_abs > 0


@pytest.mark.cuda
def test_cuda_graph_replay_equals_fresh_capture_and_the_eager_composition() -> None:
    if not cuda_available():
        pytest.skip("torch sees no GPU")
    runs = list(replay_fresh(GRAPH, lambda: TorchCudaGraph("cuda")))
    assert all(r.compare.equal for r in runs)
    eager = list(replay_fresh(GRAPH, STATEFUL["torch-sdpa"]))
    for g, e in zip(runs, eager, strict=True):
        assert np.allclose(g.in_sequence[0].astype(np.float32),
                           e.in_sequence[0].astype(np.float32), atol=2e-3)


def test_cuda_graph_runner_says_why_it_cannot_run_here() -> None:
    ok, why = TorchCudaGraph().available()
    assert ok == cuda_available() and (ok or "CUDA" in why)
    assert not TorchCudaGraph().supports(SEQ)[0]   # a prefill is no decode graph
