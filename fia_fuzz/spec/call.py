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

from fia_fuzz.spec.params import ALL_ARGS, ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.spec.rules import Undetermined
from fia_fuzz.spec.tensors import TensorSpec, describe

INPUT_LAYOUTS = ("BSH", "BSND", "BNSD", "TND", "NTD")
#: input layout string -> (query/kv layout, output layout) [V4 inputLayout].
LAYOUTS: dict[str, tuple[str, str]] = {
    "BSH": ("BSH", "BSH"),
    "BSND": ("BSND", "BSND"),
    "BNSD": ("BNSD", "BNSD"),
    "TND": ("TND", "TND"),
    "NTD": ("NTD", "NTD"),
    "BNSD_BSND": ("BNSD", "BSND"),
    "TND_NTD": ("TND", "NTD"),
    "NTD_TND": ("NTD", "TND"),
    "BSH_NBSD": ("BSH", "NBSD"),
    "BSND_NBSD": ("BSND", "NBSD"),
    "BNSD_NBSD": ("BNSD", "NBSD"),
}
PACKED_LAYOUTS = ("TND", "NTD")


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


class CallView:
    """Everything a rule may ask about a call, derived once and lazily."""

    def __init__(self, kwargs: dict[str, Any]):
        self.raw = kwargs
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
        self.attrs: dict[str, Any] = {k: kwargs.get(k, d) for k, d in ATTR_DEFAULTS.items()}
        for k in ATTR_DEFAULTS:
            if kwargs.get(k, ATTR_DEFAULTS[k]) is None:
                self.attrs[k] = ATTR_DEFAULTS[k]

    # ---- argument access -------------------------------------------------
    def spec(self, name: str) -> TensorSpec | None:
        """The TensorSpec of a single-tensor argument (first element for a KV list)."""
        s = self.specs.get(name)
        if isinstance(s, list):
            return s[0] if s else None
        return s

    def need(self, name: str) -> TensorSpec:
        s = self.spec(name)
        if s is None:
            raise Undetermined(name)
        return s

    def has(self, name: str) -> bool:
        if name in self.values:
            return self.values[name] is not None or self.value_specs[name] is not None
        return self.specs.get(name) is not None

    def attr_int(self, name: str) -> int:
        v = self.attrs[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
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

    @property
    def packed(self) -> bool:
        return self.in_layout in PACKED_LAYOUTS

    @property
    def is_kv_list(self) -> bool:
        return isinstance(self.specs.get("key"), list)

    @property
    def paged(self) -> bool:
        return self.has("block_table")

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

    @cached_property
    def q_dims(self) -> dict[str, int]:
        """B, S1, N, D read from the query shape in the input layout."""
        q = self.need("query")
        return self._dims(q, self.in_layout, self.N, "query")

    def _dims(self, t: TensorSpec, layout: str, heads: int, what: str) -> dict[str, int]:
        shape = t.shape
        if len(shape) != len(layout) or any(
                not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
            raise Undetermined(what)
        if layout == "BSH":
            b, s, h = shape
            if heads <= 0 or h % heads:
                raise Undetermined(what)
            return {"B": b, "S": s, "N": heads, "D": h // heads}
        if layout == "BSND":
            b, s, n, d = shape
            return {"B": b, "S": s, "N": n, "D": d}
        if layout == "BNSD":
            b, n, s, d = shape
            return {"B": b, "S": s, "N": n, "D": d}
        if layout == "TND":
            t_, n, d = shape
            return {"T": t_, "N": n, "D": d}
        if layout == "NTD":
            n, t_, d = shape
            return {"T": t_, "N": n, "D": d}
        raise Undetermined(what)

    @cached_property
    def kv_dims(self) -> dict[str, int]:
        """B, S2, N, D of key for non-paged KV (per the input layout)."""
        if self.paged:
            raise Undetermined("key")
        k = self.need("key")
        return self._dims(k, self.in_layout, self.KV_N, "key")

    @cached_property
    def v_dims(self) -> dict[str, int]:
        if self.paged:
            raise Undetermined("value")
        v = self.need("value")
        return self._dims(v, self.in_layout, self.KV_N, "value")

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
    def Dv(self) -> int:
        if self.paged:
            v = self.need("value")
            if v.ndim == 3:
                if self.KV_N <= 0 or v.shape[2] % self.KV_N:
                    raise Undetermined("value")
                return v.shape[2] // self.KV_N
            if v.ndim == 4:
                return v.shape[3]
            raise Undetermined("value")
        return self.v_dims["D"]

    @cached_property
    def S2(self) -> int:
        """Key/value sequence length of the (largest) KV tensor, before any prefix."""
        if self.paged:
            bt = self.value_specs.get("block_table")
            if bt is None or bt.ndim != 2:
                raise Undetermined("block_table")
            return bt.shape[1] * self.attr_int("block_size")
        if self.is_kv_list:
            ks = self.specs["key"]
            assert isinstance(ks, list)
            return max(self._dims(k, self.in_layout, self.KV_N, "key")["S"] for k in ks)
        if self.packed:
            lens = self.packed_lengths("actual_seq_lengths_kv")
            return max(lens) if lens else 0
        return self.kv_dims["S"]

    @property
    def decode(self) -> bool:
        """Q_S == 1 selects the decode (IFA) branch (fia-semantics.md §1)."""
        if self.packed:
            return False
        return self.S1 == 1

    def packed_lengths(self, name: str) -> list[int]:
        """Per-batch lengths from cumulative offsets (TND/NTD, fia-semantics.md §2)."""
        a = self.values.get(name)
        if a is None or not all(isinstance(x, int) for x in a):
            raise Undetermined(name)
        prev = 0
        out = []
        for x in a:
            out.append(x - prev)
            prev = x
        return out

    def lengths(self, name: str, full: int) -> list[int]:
        """Per-batch lengths for right-padded layouts: absent -> full, length 1 -> broadcast."""
        a = self.values.get(name)
        if a is None:
            return [full] * self.B
        if not all(isinstance(x, int) for x in a):
            raise Undetermined(name)
        if len(a) == 1:
            return a * self.B
        if len(a) < self.B:
            raise Undetermined(name)
        return a[: self.B]

    @property
    def numel_budget(self) -> int:
        """Element count of the query and KV tensors (for the memory-sanity rule)."""
        total = 0
        for name in ("query", "key", "value"):
            s = self.specs.get(name)
            for t in s if isinstance(s, list) else [s]:
                if t is not None:
                    try:
                        total += math.prod(int(d) for d in t.shape)
                    except (TypeError, ValueError):
                        pass
        return total
