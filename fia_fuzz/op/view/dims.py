"""The problem dimensions (B, N, KV_N, G, S1, S2, D, Dk, Dv) read from the shapes in
the layout (fia-semantics.md §1-2); packed layouts read B and S from the lengths."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np

from fia_fuzz.op.geometry import dims
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.view.layout import LayoutView


class DimsView(LayoutView):
    # What this part reads from the others (bare annotations: no attribute is made).
    block_table_shape: tuple[int, int]  # paging
    cache_dims: Callable[[str], dict[str, int]]  # paging
    act_kv: list[int]  # lengths
    packed_lengths: Callable[[str], list[int]]  # lengths

    @cached_property
    def N(self) -> int:
        n = self.attr_int("num_heads")
        if n <= 0:
            raise Undetermined("num_heads")
        return n

    @cached_property
    def KV_N(self) -> int:
        kvn = self.attr_int("num_key_value_heads")
        if kvn < 0:
            raise Undetermined("num_key_value_heads")
        return kvn if kvn else self.N

    @cached_property
    def G(self) -> int:
        if self.N % self.KV_N:
            raise Undetermined("num_key_value_heads")
        return self.N // self.KV_N

    @property
    def kv_pack(self) -> int:
        """int4 values per key/value last-axis element: 8 for int32-packed int4 [V2 Q_S=1]."""
        k = self.spec("key")
        return 8 if k is not None and k.dtype == "int32" else 1

    @cached_property
    def q_dims(self) -> dict[str, int]:
        """B, S1, N, D read from the query shape in the input layout."""
        q = self.need("query")
        return self._dims(q, self.in_layout, self.N, "query")

    def _dims(self, t: TensorSpec, layout: str, heads: int, what: str,
              pack: int = 1) -> dict[str, int]:
        if any(not isinstance(d, (int, np.integer)) or d < 0 for d in t.shape):
            raise Undetermined(what)
        try:
            return dims(t.shape, layout, heads, pack)
        except ValueError:
            raise Undetermined(what) from None

    def tensor_dims(self, name: str, index: int = 0) -> dict[str, int]:
        """Dims of a contiguous key/value-like tensor (element `index` of a list)."""
        ts = self.spec_list(name)
        if not ts or index >= len(ts):
            raise Undetermined(name)
        return self._dims(ts[index], self.in_layout, self.KV_N, name, self.kv_pack)

    @cached_property
    def kv_dims(self) -> dict[str, int]:
        """B, S2, N, D of key for non-paged KV (first tensor of a list)."""
        if self.paged:
            raise Undetermined("key")
        return self.tensor_dims("key")

    @cached_property
    def v_dims(self) -> dict[str, int]:
        if self.paged:
            raise Undetermined("value")
        return self.tensor_dims("value")

    @cached_property
    def B(self) -> int:
        if self.packed:
            a = self.values.get("actual_seq_lengths")
            if not a:
                raise Undetermined("actual_seq_lengths")
            return len(a)
        return self.q_dims["B"]

    @cached_property
    def S1(self) -> int:
        """Query sequence length (the padded S; for packed layouts the longest batch)."""
        if self.packed:
            lens = self.packed_lengths("actual_seq_lengths")
            return max(lens) if lens else 0
        return self.q_dims["S"]

    @cached_property
    def D(self) -> int:
        return self.q_dims["D"]

    @cached_property
    def Dk(self) -> int:
        """Head dim of key (unpacked for int4-as-int32)."""
        if self.paged:
            return self.cache_dims("key")["D"]
        return self.kv_dims["D"]

    @cached_property
    def Dv(self) -> int:
        if self.paged:
            return self.cache_dims("value")["D"]
        return self.v_dims["D"]

    @cached_property
    def S2(self) -> int:
        """Key/value sequence length of the (largest) KV tensor, before any prefix."""
        if self.paged:
            return self.block_table_shape[1] * self.attr_int("block_size")
        if self.is_kv_list:
            n = len(self.spec_list("key"))
            if not n:
                raise Undetermined("key")
            return max(self.tensor_dims("key", i)["S"] for i in range(n))
        if self.packed:
            lens = self.act_kv
            return max(lens) if lens else 0
        return self.kv_dims["S"]

    def kv_seq(self, b: int) -> int:
        """The KV tensor length of batch b (its own tensor for a KV list)."""
        if self.is_kv_list:
            return self.tensor_dims("key", b)["S"]
        return self.S2

    @property
    def decode(self) -> bool:
        """Q_S == 1 selects the decode (IFA) branch (fia-semantics.md §1)."""
        if self.packed:
            return False
        return self.S1 == 1
