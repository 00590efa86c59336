"""Per-batch valid lengths (cumulative for packed layouts, broadcast or defaulted for
padded ones), left padding and the shared prefix [V4 actualSeqLengths, fia-semantics.md §2]."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from fia_fuzz.op.geometry import lengths_of
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.view.layout import LayoutView


class LengthsView(LayoutView):
    # What this part reads from the others (bare annotations: no attribute is made).
    B: int  # dims
    S1: int  # dims
    S2: int  # dims
    decode: bool  # dims
    kv_seq: Callable[[int], int]  # dims
    tensor_dims: Callable[..., dict[str, int]]  # dims

    @property
    def left_padding(self) -> bool:
        return self.has("query_padding_size") or self.has("kv_padding_size")

    def packed_lengths(self, name: str) -> list[int]:
        """Per-batch lengths from cumulative offsets (TND/NTD, fia-semantics.md §2)."""
        a = self.ints(name)
        if a is None:
            raise Undetermined(name)
        return lengths_of(a)

    def lengths(self, name: str, full: int) -> list[int]:
        """Per-batch lengths for right-padded layouts: absent -> full, length 1 -> broadcast."""
        a = self.ints(name)
        if a is None:
            return [full] * self.B
        if len(a) == 1:
            return a * self.B
        if len(a) < self.B:
            raise Undetermined(name)
        return a[: self.B]

    @cached_property
    def act_q(self) -> list[int]:
        """Valid query rows per batch [V4 actualSeqLengths]; ignored (= 1) in decode."""
        if self.packed:
            return self.packed_lengths("actual_seq_lengths")
        if self.decode:
            return [1] * self.B
        return self.lengths("actual_seq_lengths", self.S1)

    @cached_property
    def act_kv(self) -> list[int]:
        """Valid key rows per batch; per-batch (not cumulative) for paged caches."""
        if self.paged:
            if self.values.get("actual_seq_lengths_kv") is None:
                raise Undetermined("actual_seq_lengths_kv")
            return self.lengths("actual_seq_lengths_kv", 0)
        if self.packed:
            return self.packed_lengths("actual_seq_lengths_kv")[: self.B]
        if self.is_kv_list and self.values.get("actual_seq_lengths_kv") is None:
            return [self.kv_seq(b) for b in range(self.B)]
        return self.lengths("actual_seq_lengths_kv", self.S2)

    @cached_property
    def prefix_S(self) -> int:
        if not self.has("key_shared_prefix"):
            return 0
        return self.tensor_dims("key_shared_prefix")["S"]

    @cached_property
    def prefix_len(self) -> int:
        """Effective shared-prefix length: actual_shared_prefix_len or the prefix S [V4]."""
        if not self.has("key_shared_prefix"):
            return 0
        a = self.ints("actual_shared_prefix_len")
        if a is None:
            return self.prefix_S
        if len(a) != 1 or not 0 <= a[0] <= self.prefix_S:
            raise Undetermined("actual_shared_prefix_len")
        return a[0]
