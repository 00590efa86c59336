"""The sizes production models call the op with, read off the model table (workloads.MODELS).

Negative tests put these among a broken bound's values: a check that holds at the
first value past its bound but slips at a size a real model sends (head dim 576,
group 128, block 1024) is the one a serving engine meets. Evidence:
../shared/production-calls.md (model head geometries, DeepSeek MLA, vLLM-ascend
block sizes).
"""

from __future__ import annotations

from collections.abc import Callable

from fia_fuzz.op.features import MLA_PRODUCTION_HEADS
from fia_fuzz.strategies.workloads import MLA_MODEL, MODELS, TP

#: MLA's rope head dim (DeepSeek: 512 + rope 64) [production-calls.md, DeepSeek (MLA)].
MLA_ROPE_D = 64
#: Query heads per device: each model's N split by the tensor-parallel degrees.
HEADS: tuple[int, ...] = tuple(sorted({n // t for n, _, _ in (*MODELS, MLA_MODEL) for t in TP
                                       if n % t == 0} | set(MLA_PRODUCTION_HEADS)))
#: GQA groups N / KV_N per device (KV heads replicated once TP > KV_N): 1 (MHA) up to
#: MLA's 128 query heads over one latent KV head.
GROUPS: tuple[int, ...] = tuple(sorted({(n // t) // max(kv // t, 1)
                                        for n, kv, _ in (*MODELS, MLA_MODEL) for t in TP
                                        if n % t == 0}))
#: Head dims: the models' D, MLA's latent 512 and its query with the rope half
#: concatenated (576), and the MLA prefill's qk D (128 + rope 64 = 192, value 128).
HEAD_DIMS: tuple[int, ...] = tuple(sorted({d for _, _, d in (*MODELS, MLA_MODEL)}
                                          | {MLA_MODEL[2] + MLA_ROPE_D, 128 + MLA_ROPE_D}))
#: Paged block sizes engines allocate: vLLM-ascend's 128, with 64 and 1024 in some releases
#: and models, and the 256/512 blocks of the kernels' KV tiles.
BLOCK_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024)


def past(values: tuple[int, ...], ok: Callable[[int], bool]) -> list[int]:
    """The production values the predicate `ok` rejects: those a broken bound takes."""
    return [v for v in values if not ok(v)]
