"""Block tables and never-read filler for the paged partners [V4 blockTable, fia-semantics.md §2].

Token s of batch b lives in physical block `block_table[b][s // block_size]`
at offset `s % block_size` (moving data in and out: op/geometry.py `page`,
`paged_bnsd`). Unused table entries are -1 and must never be read; slots past
a batch's length and spare blocks hold garbage so that a kernel reading them
is visible.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.op.geometry import blocks_needed
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.values import materialise


def block_table(lengths: list[int], block_size: int, order: np.ndarray | None,
                spare: int = 2) -> tuple[np.ndarray, int]:
    """(int32 table (B, max blocks + 1) with -1 for unused entries, physical block count).

    `order` permutes the physical block ids (None keeps them in logical order);
    `spare` extra blocks are allocated and never referenced.
    """
    need = [blocks_needed(n, block_size) for n in lengths]
    width = max(need + [1]) + 1
    total = sum(need) + spare
    ids = np.arange(total) if order is None else np.asarray(order)
    table = np.full((len(lengths), width), -1, dtype=np.int32)
    k = 0
    for b, n in enumerate(need):
        table[b, :n] = ids[k:k + n]
        k += n
    return table, total


def garbage(shape: tuple[int, ...], dtype: str, seed: int, label: str) -> np.ndarray:
    """Deterministic filler, four times the data's spread, for slots never to be read."""
    spec = TensorSpec(shape, dtype)
    fill = ({"dist": "normal", "scale": 4.0} if dtype in ("float16", "bfloat16", "float32")
            else None)
    return materialise(spec, fill, seed, f"metamorphic.garbage.{label}")
