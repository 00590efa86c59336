"""Call sequences as data: JSON with a stable id, deterministic steps over one evolving
paged cache, every step a legal call, and the engines' length patterns drawn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from fia_fuzz.op.sequence import IllegalSequence, Sequence, Step
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.sequences import sequences


def decode_loop(**kw) -> Sequence:
    base = dict(workload="decode_loop", form="TND", dtype="bfloat16", heads=(2, 1, 128),
                block_size=128, num_blocks=5, table_width=2, context=(0, 0),
                steps=(Step("prefill", (127, 40)), Step("decode", (1, 1)),
                       Step("decode", (1, 1))), alloc="shuffled", seed=7)
    return Sequence(**{**base, **kw})


def test_json_round_trip_and_stable_id() -> None:
    seq = decode_loop()
    again = Sequence.from_json(seq.to_json())
    assert again == seq and again.sequence_id == seq.sequence_id
    assert len(seq.sequence_id) == 16
    assert decode_loop(seed=8).sequence_id != seq.sequence_id


def test_state_appends_tokens_allocates_blocks_and_names_positions() -> None:
    states = decode_loop().states()
    assert [s.kv for s in states] == [(127, 40), (128, 41), (129, 42)]
    assert [s.position for s in states] == ["prefill", "block_full", "block_new"]
    first, last = states[0].table[0][0], states[2].table[0]
    assert last[0] == first and last[1] not in (first, -1)   # a second block, appended
    assert states[1].table[0][1] == -1                       # not allocated yet
    assert len(states[2].slots) == 2 and states[2].new_blocks == 1
    # the slot of request 0's token 128 is the new block's first row
    assert states[2].slots[0] == last[1] * 128


def test_steps_are_deterministic_legal_and_carry_earlier_writes() -> None:
    seq = decode_loop()
    a, b = list(seq.run()), list(seq.run())
    for x, y in zip(a, b, strict=True):
        assert x.case.case_id == y.case.case_id
        assert not validate(**x.case.specs())
    pool_k = a[2].call["key"].reshape(-1, 128)
    for s in (a[0], a[1], a[2]):    # every row written so far is still in the last snapshot
        assert np.array_equal(pool_k[s.slots].view(np.uint16), s.new_key.view(np.uint16))


def test_spec_decode_rolls_back_and_overwrites() -> None:
    seq = decode_loop(workload="spec_decode", steps=(
        Step("prefill", (10, 10)), Step("spec", (3, 2), keep=(1, 2)), Step("spec", (2, 2))))
    states = seq.states()
    assert states[1].kv == (13, 12) and states[1].after == (11, 12)
    assert states[2].before == (11, 12) and states[2].position == "after_rollback"
    assert states[2].slots[:2] == states[1].slots[1:3]   # the rejected drafts' rows, reused


def test_replay_must_keep_the_captured_shapes() -> None:
    ok = decode_loop(workload="graph_replay", context=(5, 6), steps=(
        Step("decode", (1, 1)), Step("decode", (1, 1), replay=True)))
    assert [s.capture for s in ok.states()] == [0, 0]
    with pytest.raises(IllegalSequence):
        decode_loop(steps=(Step("decode", (1, 1), replay=True),)).states()
    with pytest.raises(IllegalSequence):
        decode_loop(steps=(Step("decode", (1, 1)), Step("spec", (2, 2), replay=True))).states()


@given(sequences())
def test_drawn_sequences_are_legal_at_every_step(seq: Sequence) -> None:
    assert Sequence.from_json(seq.to_json()) == seq
    for state in seq.states():
        assert not validate(**seq.step_params(state)), (seq.to_json(), state.index)


def test_decode_loops_land_on_block_boundaries() -> None:
    """Prompts end j tokens short of k * block_size so decodes hit k*bs and k*bs+1."""
    got: list[Sequence] = []

    @given(sequences(workload="decode_loop"))
    def draw(seq: Sequence) -> None:
        got.append(seq)

    draw()
    shapes = [s.shape_summary() for s in got]
    assert sum(s["block_new_steps"] > 0 for s in shapes) >= len(got) // 2
    assert sum(s["block_full_steps"] > 0 for s in shapes) >= len(got) // 3
