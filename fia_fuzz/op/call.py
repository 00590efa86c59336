"""A normalised, data-free view of one call, the thing every rule reads.

Arguments arrive as arrays, torch tensors, TensorSpecs, lists or scalars; the
view reduces tensors to TensorSpec and value-carrying arguments to Python int
lists, fills attribute defaults, and derives the problem dimensions (B, N,
KV_N, S1, S2, D, Dv) from the layout (fia-semantics.md §1-2). A derived
dimension that cannot be read because its source is malformed raises
`Undetermined`, which `validate` turns into "rule skipped".
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from fia_fuzz.op.geometry import (
    CACHE_FORM_OF_RANK,
    LAYOUTS,
    PACKED_LAYOUTS,
    blocks_needed,
    cache_dims,
    dims,
    lengths_of,
)
from fia_fuzz.op.params import ALL_ARGS, ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.tensors import DTYPES, TensorSpec, describe
from fia_fuzz.op.undetermined import Undetermined

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int64(v: Any) -> bool:
    """An entry of a value argument as the op takes it: an int within int64."""
    return isinstance(v, int) and INT64_MIN <= v <= INT64_MAX


def int64_values(x: Any) -> bool:
    """Whether a value argument (list, nested list, int array) holds int64 ints only; a
    materialised call passes any other as written, since a repair would hide
    args.values_integral."""
    flat = _int_list(x)
    return not isinstance(flat, BadArgument) and all(is_int64(v) for v in flat)


class BadArgument:
    """Marker for an argument whose Python type cannot be understood at all."""

    def __init__(self, value: Any, reason: str):
        self.value = value
        self.reason = reason


def _int_list(x: Any) -> list[Any] | BadArgument:
    """Flatten an int-valued argument (int, list, nested list, int array) to a list.

    Non-integral entries are kept as they are so rules can name them.
    """
    if isinstance(x, TensorSpec):
        return BadArgument(x, "a data-free TensorSpec carries no values")
    if isinstance(x, (bool, np.bool_)):
        return BadArgument(x, f"expected integers, got {type(x).__name__}")
    if isinstance(x, (int, np.integer)):
        return [int(x)]
    spec = describe(x)
    if spec is not None:
        arr = np.asarray(x.tolist() if not isinstance(x, np.ndarray) else x)
        return arr.reshape(-1).tolist()
    if isinstance(x, (list, tuple)):
        out: list[Any] = []
        for item in x:
            if isinstance(item, (list, tuple)):
                sub = _int_list(item)
                if isinstance(sub, BadArgument):
                    return sub
                out.extend(sub)
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                out.append(int(item))
            else:
                out.append(item)
        return out
    return BadArgument(x, f"expected an int, a list of ints or an int tensor, "
                          f"got {type(x).__name__}")


def _rows(x: Any) -> list[list[Any]] | None:
    """block_table as a list of rows, or None when it is not 2-D."""
    spec = describe(x)
    if spec is not None and not isinstance(x, TensorSpec):
        arr = np.asarray(x.tolist() if not isinstance(x, np.ndarray) else x)
        return arr.tolist() if arr.ndim == 2 else None
    if isinstance(x, (list, tuple)) and all(isinstance(r, (list, tuple)) for r in x):
        return [list(r) for r in x]
    return None


def _malformed(s: TensorSpec | list[TensorSpec] | None) -> bool:
    """A description whose shape is not a tuple of non-negative ints or whose dtype is unknown."""
    for t in s if isinstance(s, list) else [s]:
        if t is None:
            continue
        if t.dtype not in DTYPES or not isinstance(t.shape, tuple):
            return True
        if any(isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0
               for d in t.shape):
            return True
    return False


class CallView:
    """Everything a rule may ask about a call, derived once and lazily."""

    def __init__(self, kwargs: dict[str, Any]):
        self.raw = kwargs
        self.present = frozenset(k for k, v in kwargs.items() if v is not None)
        self.unknown = sorted(k for k in kwargs if k not in ALL_ARGS)
        self.bad: dict[str, BadArgument] = {}
        self.specs: dict[str, TensorSpec | list[TensorSpec] | None] = {}
        for name in TENSOR_ARGS:
            value = kwargs.get(name)
            if value is None:
                self.specs[name] = None
            elif name in ("key", "value") and isinstance(value, (list, tuple)):
                items = [describe(v) for v in value]
                if any(i is None for i in items):
                    self.bad[name] = BadArgument(value, "a tensor list holds a non-tensor")
                    self.specs[name] = None
                else:
                    self.specs[name] = items
            else:
                spec = describe(value)
                if spec is None:
                    self.bad[name] = BadArgument(
                        value, f"expected a tensor, got {type(value).__name__}")
                self.specs[name] = spec
        self.values: dict[str, list[Any] | None] = {}
        self.value_specs: dict[str, TensorSpec | None] = {}
        self.block_rows: list[list[Any]] | None = None
        for name in VALUE_ARGS:
            value = kwargs.get(name)
            self.value_specs[name] = describe(value) if value is not None else None
            if value is None or isinstance(value, TensorSpec):
                self.values[name] = None
                continue
            flat = _int_list(value)
            if isinstance(flat, BadArgument):
                self.bad[name] = flat
                self.values[name] = None
            else:
                self.values[name] = flat
            if name == "block_table":
                self.block_rows = _rows(value)
        self.malformed: set[str] = {n for n, s in self.specs.items() if _malformed(s)}
        self.malformed |= {n for n, s in self.value_specs.items() if _malformed(s)}
        self.attrs: dict[str, Any] = {k: kwargs.get(k, d) for k, d in ATTR_DEFAULTS.items()}
        for k in ATTR_DEFAULTS:
            if kwargs.get(k, ATTR_DEFAULTS[k]) is None:
                self.attrs[k] = ATTR_DEFAULTS[k]

    # ---- argument access -------------------------------------------------
    def spec(self, name: str) -> TensorSpec | None:
        """The TensorSpec of a single-tensor argument (first element for a KV list).

        None when absent; raises `Undetermined` when present but malformed (bad
        shape or unknown dtype), so only the argument rules report it.
        """
        if name in self.malformed:
            raise Undetermined(name)
        s = self.specs.get(name)
        if isinstance(s, list):
            return s[0] if s else None
        return s

    def spec_list(self, name: str) -> list[TensorSpec]:
        """Every tensor of a key/value argument (one element when not a list)."""
        if name in self.malformed:
            raise Undetermined(name)
        s = self.specs.get(name)
        if s is None:
            return []
        return s if isinstance(s, list) else [s]

    def need(self, name: str) -> TensorSpec:
        s = self.spec(name)
        if s is None:
            raise Undetermined(name)
        return s

    def has(self, name: str) -> bool:
        """The argument is given (a malformed argument counts as given)."""
        return name in self.present

    def attr_int(self, name: str) -> int:
        v = self.attrs[name]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
                or not INT64_MIN <= int(v) <= INT64_MAX:
            raise Undetermined(name)
        return int(v)

    # ---- layout ------------------------------------------------------------
    @cached_property
    def layout_pair(self) -> tuple[str, str]:
        lay = self.attrs["input_layout"]
        if not isinstance(lay, str) or lay not in LAYOUTS:
            raise Undetermined("input_layout")
        return LAYOUTS[lay]

    @property
    def in_layout(self) -> str:
        return self.layout_pair[0]

    @property
    def out_layout(self) -> str:
        return self.layout_pair[1]

    @cached_property
    def packed(self) -> bool:
        return self.in_layout in PACKED_LAYOUTS

    @property
    def is_kv_list(self) -> bool:
        return isinstance(self.specs.get("key"), list)

    @cached_property
    def paged(self) -> bool:
        return "block_table" in self.present

    # ---- dimensions --------------------------------------------------------
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

    @property
    def rope(self) -> bool:
        return self.has("query_rope") or self.has("key_rope")

    @property
    def mla512(self) -> bool:
        """MLA with query D 512 [V4 MLA场景 query d=512]."""
        return self.rope and self.D == 512

    @property
    def nz(self) -> bool:
        return self.paged and self.cache_layout == "NZ"

    @property
    def mla_full_quant(self) -> bool:
        """MLA D 512 with an int8 query: key/value_antiquant_scale are then the full-quant
        per-tensor K/V dequant scales, not antiquant [TNPU v2 约束说明 query d=512 全量化]."""
        return self.mla512 and self.need("query").dtype == "int8"

    @property
    def separate_antiquant(self) -> bool:
        return not self.mla_full_quant and any(
            self.has(n) for n in ("key_antiquant_scale", "value_antiquant_scale",
                                  "key_antiquant_offset", "value_antiquant_offset"))

    @property
    def combined_antiquant(self) -> bool:
        """Combined params in effect (separate ones win when both are given) [V4 伪量化参数约束]."""
        return (self.has("antiquant_scale") or self.has("antiquant_offset")) \
            and not self.separate_antiquant

    @property
    def left_padding(self) -> bool:
        return self.has("query_padding_size") or self.has("kv_padding_size")

    def ints(self, name: str) -> list[int] | None:
        """The int values of a value argument; Undetermined when any is not an int64."""
        a = self.values.get(name)
        if a is None:
            if self.has(name):
                raise Undetermined(name)
            return None
        if not all(is_int64(x) for x in a):
            raise Undetermined(name)
        return a

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

    @cached_property
    def max_blocks_per_seq(self) -> int:
        """maxBlockNumPerSeq: blocks of the longest actual_seq_lengths_kv [V4 blockTable]."""
        bs = self.attr_int("block_size")
        if bs <= 0:
            raise Undetermined("block_size")
        return max(blocks_needed(a, bs) for a in self.act_kv) if self.act_kv else 0

    @cached_property
    def out_dtype(self) -> str:
        """attention_out dtype [V4 attentionOut, int8量化场景, MLA 全量化 (bf16)].

        An int8 query's output takes query_rope's dtype when there is one (float16
        without), as torch_npu's meta functions do; rope.dtype makes that bfloat16.
        """
        q = self.need("query")
        if self.has("quant_scale2"):
            return "int8"
        if q.dtype == "int8":
            return self.need("query_rope").dtype if self.has("query_rope") else "float16"
        return q.dtype

    @property
    def numel_budget(self) -> int:
        """Element count of every tensor argument (for the memory-sanity rule)."""
        total = 0
        for name in TENSOR_ARGS:
            s = self.specs.get(name)
            for t in s if isinstance(s, list) else [s]:
                if t is not None and isinstance(t.shape, tuple):
                    try:
                        total += math.prod(int(d) for d in t.shape)
                    except (TypeError, ValueError):
                        pass
        return total
