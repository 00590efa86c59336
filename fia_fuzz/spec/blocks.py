"""Which physical blocks of a paged cache a call reads [V4 PagedAttention, SEM §2].

Batch b's token s lives in block block_table[b][s // block_size], so only the
first ceil(act_kv[b] / block_size) entries of each row are ever read. Lazy
caches hold data in exactly these blocks (values.materialise_blocks), and the
golden gathers only them, so both cost what the referenced lengths cost, not
what the cache's size would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def needed(lengths: Sequence[int], block_size: int) -> list[int]:
    """Table entries each batch reads: ceil(max(0, act_kv) / block_size)."""
    return [-(-max(0, int(n)) // block_size) if block_size else 0 for n in lengths]


def referenced_blocks(block_table: Sequence[Sequence[int]] | np.ndarray,
                      lengths: Sequence[int], block_size: int) -> np.ndarray:
    """Sorted distinct physical block ids the call reads (int64)."""
    rows = [np.asarray(row[:k], np.int64)
            for row, k in zip(block_table, needed(lengths, block_size), strict=False)]
    return np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64)


def compact_table(block_table: np.ndarray, lengths: Sequence[int], block_size: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(referenced block ids, the table rewritten to index into them; unread entries 0)."""
    used = referenced_blocks(block_table, lengths, block_size)
    table = np.asarray(block_table, np.int64)
    local = np.zeros(table.shape, np.int64)
    for b, k in enumerate(needed(lengths, block_size)):
        local[b, :k] = np.searchsorted(used, table[b, :k])
    return used, local
