"""A call's arguments, normalised: tensors as TensorSpec, value arguments as int lists.

Arguments arrive as arrays, torch tensors, TensorSpecs, lists or scalars. A
tensor reduces to its TensorSpec (a key/value list to a list of them), a
value-carrying argument to a flat Python list, an attribute to its value or
its default. What cannot be understood at all is kept as a `BadArgument`;
a present but malformed argument makes every question that needs it raise
`Undetermined`, so only the argument rules report it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
    flat = int_list(x)
    return not isinstance(flat, BadArgument) and all(is_int64(v) for v in flat)


class BadArgument:
    """Marker for an argument whose Python type cannot be understood at all."""

    def __init__(self, value: Any, reason: str):
        self.value = value
        self.reason = reason


def int_list(x: Any) -> list[Any] | BadArgument:
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
                sub = int_list(item)
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


def table_rows(x: Any) -> list[list[Any]] | None:
    """block_table as a list of rows, or None when it is not 2-D."""
    spec = describe(x)
    if spec is not None and not isinstance(x, TensorSpec):
        arr = np.asarray(x.tolist() if not isinstance(x, np.ndarray) else x)
        return arr.tolist() if arr.ndim == 2 else None
    if isinstance(x, (list, tuple)) and all(isinstance(r, (list, tuple)) for r in x):
        return [list(r) for r in x]
    return None


def malformed(s: TensorSpec | list[TensorSpec] | None) -> bool:
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


class Arguments:
    """The normalised arguments and the accessors every other part of the view reads."""

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
            flat = int_list(value)
            if isinstance(flat, BadArgument):
                self.bad[name] = flat
                self.values[name] = None
            else:
                self.values[name] = flat
            if name == "block_table":
                self.block_rows = table_rows(value)
        self.malformed: set[str] = {n for n, s in self.specs.items() if malformed(s)}
        self.malformed |= {n for n, s in self.value_specs.items() if malformed(s)}
        self.attrs: dict[str, Any] = {k: kwargs.get(k, d) for k, d in ATTR_DEFAULTS.items()}
        for k in ATTR_DEFAULTS:
            if kwargs.get(k, ATTR_DEFAULTS[k]) is None:
                self.attrs[k] = ATTR_DEFAULTS[k]

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
