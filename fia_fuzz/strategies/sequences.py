"""Hypothesis strategies for call sequences (`fia_fuzz.op.sequence`), legal by construction.

The engines' length patterns (../shared/production-calls.md, "State across
calls"): a prefill then decode steps whose lengths cross a block boundary
(one request's prompt ends j tokens before k * block_size, so a decode step
lands exactly on k * block_size and the next one on k * block_size + 1);
chunked prefill whose chunks straddle blocks; speculative decode with 1 + k
query tokens and rejected drafts rolled back; a decode graph captured once and
replayed with new lengths. vLLM's TND call (bf16, D 128, block 128, sparse 3)
carries the first three; graph replay also takes the classic BSH decode with
smaller blocks. Heads are the public model geometries split by TP, kept small
(N <= 8) so a sequence of steps stays cheap; simplest choices come first so a
failing sequence shrinks toward one request, few heads, blocks in order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fia_fuzz.op.sequence import WORKLOADS, IllegalSequence, Sequence, Step
from fia_fuzz.strategies.workloads import MODELS, TP

#: One sequence every N stream positions of a profile's campaign (0: none). Smoke keeps its
#: stream; nightly and stress run a sequence in place of every 20th case (5%).
EVERY = {"smoke": 0, "nightly": 20, "stress": 20}
#: Largest query heads per device a sequence takes (each step is a whole call).
MAX_N = 8
#: Largest k of the k * block_size boundary a prompt ends at, per profile.
MAX_BLOCKS = {"smoke": 2, "nightly": 2, "stress": 4}


def share(profile: str) -> str:
    every = EVERY.get(profile, 0)
    return f"1 in {every} ({100 / every:g}%)" if every else "none"


def model_heads(dims: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(N, KV_N, D) of the public models split by TP, N <= MAX_N, smallest first."""
    out = set()
    for n, kv, d in MODELS:
        for tp in TP:
            if d in dims and n % tp == 0 and n // tp <= MAX_N:
                kv_n = max(1, kv // tp)
                if (n // tp) % kv_n == 0:
                    out.add((n // tp, kv_n, d))
    return sorted(out, key=lambda h: (h[0] * h[2], h))


TND_HEADS = [(1, 1, 128), *model_heads((128,))]
BSH_HEADS = [(1, 1, 64), *model_heads((64, 128))]


@st.composite
def _near_boundary(draw: Any, bs: int, max_k: int, before: int) -> int:
    """A length ending `j` <= before tokens short of k * bs (k >= 1)."""
    k = draw(st.integers(1, max_k))
    j = draw(st.integers(0, min(before, bs - 1)))
    return max(1, k * bs - j)


@st.composite
def sequences(draw: Any, workload: str | None = None, profile: str = "nightly") -> Sequence:
    """One legal sequence of `workload` (any of WORKLOADS when None)."""
    if workload is not None and workload not in WORKLOADS:
        raise ValueError(f"sequence={workload!r}, expected one of {', '.join(WORKLOADS)}")
    kind = workload or draw(st.sampled_from(WORKLOADS))
    max_k = MAX_BLOCKS.get(profile, 2)
    form = "TND" if kind != "graph_replay" else draw(st.sampled_from(("BSH", "TND")))
    if form == "TND":
        dtype, bs = "bfloat16", 128
        heads = draw(st.sampled_from(TND_HEADS))
    else:
        dtype = draw(st.sampled_from(("float16", "bfloat16")))
        bs = draw(st.sampled_from((128, 16, 64)))
        heads = draw(st.sampled_from(BSH_HEADS))
    b = draw(st.integers(1, 3))
    n_steps = draw(st.integers(1, 6))
    steps: list[Step] = []
    context = [0] * b
    if kind == "decode_loop":
        prompt = [draw(_near_boundary(bs, max_k, n_steps - 1)) for _ in range(b)]
        steps = [Step("prefill", tuple(prompt))] + [Step("decode", (1,) * b)] * n_steps
    elif kind == "chunked_prefill":
        chunks = draw(st.integers(2, 4))
        for i in range(chunks):
            q = tuple(draw(st.integers(1, max_k * bs // 2 + 8)) for _ in range(b))
            steps.append(Step("prefill" if i == 0 else "chunk", q))
        steps += [Step("decode", (1,) * b)] * draw(st.integers(0, 2))
    elif kind == "spec_decode":
        prompt = [draw(_near_boundary(bs, max_k, 3 * n_steps)) for _ in range(b)]
        steps = [Step("prefill", tuple(prompt))]
        for _ in range(n_steps):
            q = tuple(1 + draw(st.integers(1, 3)) for _ in range(b))
            keep = tuple(draw(st.integers(1, x)) for x in q)
            steps.append(Step("spec", q, keep))
    else:
        context = [draw(_near_boundary(bs, max_k, n_steps)) for _ in range(b)]
        recapture = draw(st.sampled_from((None, *range(1, n_steps + 1))))
        steps = [Step("decode", (1,) * b, replay=i > 0 and i != recapture)
                 for i in range(n_steps + 1)]
    final = list(context)
    widest = 0
    for s in steps:
        final = [f + q for f, q in zip(final, s.q, strict=True)]
        widest = max(widest, *(-(-f // bs) for f in final))
        keep = s.keep or s.q
        final = [f - q + k for f, q, k in zip(final, s.q, keep, strict=True)]
    needed = _blocks_used(context, steps, bs)
    seq = Sequence(workload=kind, form=form, dtype=dtype, heads=heads, block_size=bs,
                   num_blocks=needed + draw(st.integers(0, 2)),
                   table_width=widest + draw(st.integers(0, 1)), context=tuple(context),
                   steps=tuple(steps), alloc=draw(st.sampled_from(("in_order", "shuffled"))),
                   seed=draw(st.integers(0, 2**32 - 1)))
    try:
        seq.states()
    except IllegalSequence as exc:  # a strategy bug: say which draw
        raise AssertionError(f"sequences() drew an illegal sequence: {exc}\n{seq.to_json()}"
                             ) from None
    return seq


def _blocks_used(context: list[int], steps: list[Step], bs: int) -> int:
    """Blocks the pool must hold: each request's widest extent (rollbacks keep blocks)."""
    lens = list(context)
    widest = [-(-x // bs) for x in lens]
    for s in steps:
        kv = [x + q for x, q in zip(lens, s.q, strict=True)]
        widest = [max(w, -(-k // bs)) for w, k in zip(widest, kv, strict=True)]
        lens = [x + k for x, k in zip(lens, s.keep or s.q, strict=True)]
    return sum(widest)
