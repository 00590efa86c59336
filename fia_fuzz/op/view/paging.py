"""The paged KV cache: its form by rank, its dims, the block table's shape and the
blocks the longest request needs [V4 PagedAttention, blockTable]."""

from __future__ import annotations

from functools import cached_property

from fia_fuzz.op.geometry import CACHE_FORM_OF_RANK, blocks_needed, cache_dims
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.view.layout import LayoutView


class PagingView(LayoutView):
    # What this part reads from the others (bare annotations: no attribute is made).
    KV_N: int  # dims
    act_kv: list[int]  # lengths

    @cached_property
    def cache_layout(self) -> str:
        """Paged KV cache form by rank: BnBsH (3), BnNBsD (4), NZ (5) [V4 PagedAttention, MLA]."""
        if not self.paged:
            raise Undetermined("block_table")
        k = self.need("key")
        if k.ndim not in CACHE_FORM_OF_RANK:
            raise Undetermined("key")
        return CACHE_FORM_OF_RANK[k.ndim]

    def cache_dims(self, name: str) -> dict[str, int]:
        """blocks, block size, heads and head dim of a paged cache tensor."""
        t = self.need(name)
        if CACHE_FORM_OF_RANK.get(t.ndim) != self.cache_layout:
            raise Undetermined(name)
        try:
            return cache_dims(t.shape, self.KV_N)
        except ValueError:
            raise Undetermined(name) from None

    @cached_property
    def block_table_shape(self) -> tuple[int, int]:
        """(rows, columns) of a 2-D block_table given as a tensor, TensorSpec or nested list."""
        t = self.value_specs.get("block_table")
        if t is not None:
            if t.ndim != 2 or "block_table" in self.malformed:
                raise Undetermined("block_table")
            return int(t.shape[0]), int(t.shape[1])
        rows = self.block_rows
        if rows is None or len({len(r) for r in rows}) > 1:
            raise Undetermined("block_table")
        return len(rows), len(rows[0]) if rows else 0

    @cached_property
    def max_blocks_per_seq(self) -> int:
        """maxBlockNumPerSeq: blocks of the longest actual_seq_lengths_kv [V4 blockTable]."""
        bs = self.attr_int("block_size")
        if bs <= 0:
            raise Undetermined("block_size")
        return max(blocks_needed(a, bs) for a in self.act_kv) if self.act_kv else 0

    @property
    def nz(self) -> bool:
        return self.paged and self.cache_layout == "NZ"
