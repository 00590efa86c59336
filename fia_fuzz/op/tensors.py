"""Data-free tensor descriptions and the conversion of real tensors into them.

Rules only ever look at shapes and dtypes (and, for the few value-carrying
arguments, at small integer lists), so every argument form a user may pass
(NumPy/ml_dtypes arrays, torch tensors, TensorSpec) is reduced to a TensorSpec
first. Nothing here allocates tensor memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

DTYPES: tuple[str, ...] = (
    "float16", "bfloat16", "float32", "int8", "uint8", "bool", "int32", "int64", "uint64", "int4",
)
FLOAT_DTYPES = ("float16", "bfloat16", "float32")

NUMPY_DTYPES: dict[str, Any] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
    "int4": np.dtype(ml_dtypes.int4),
}
#: dtypes the op does not know (rule args.dtype_known) that an array still holds, with the
#: known dtype whose values (drawn by the tensor's fill) are cast to them, so a negative run
#: can send such a tensor to a backend.
FOREIGN_DTYPES: dict[str, tuple[np.dtype, str]] = {
    "float64": (np.dtype(np.float64), "float32"),
    "complex64": (np.dtype(np.complex64), "float32"),
    "int16": (np.dtype(np.int16), "int8"),
    "uint16": (np.dtype(np.uint16), "uint8"),
    "uint32": (np.dtype(np.uint32), "uint8"),
    "float8_e4m3fn": (np.dtype(ml_dtypes.float8_e4m3fn), "float32"),
}
_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8, "uint8": 8, "bool": 8,
         "int32": 32, "int64": 64, "uint64": 64, "int4": 4,
         **{n: d.itemsize * 8 for n, (d, _) in FOREIGN_DTYPES.items()}}


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a known or a foreign dtype name (KeyError for any other)."""
    return NUMPY_DTYPES[name] if name in NUMPY_DTYPES else FOREIGN_DTYPES[name][0]


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of a tensor, without its data; optionally a strided view.

    `strides` (in elements) and `offset` describe a view into a larger buffer,
    as engines pass K/V sliced from one fused cache; None is the contiguous
    tensor. Construction never raises on odd values: an illegal dtype, shape or
    stride is a rule violation reported by `validate`, not a crash while describing.
    """

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        shape = self.shape
        if isinstance(shape, (list, tuple)):
            object.__setattr__(self, "shape", tuple(shape))
        if isinstance(self.strides, list):
            object.__setattr__(self, "strides", tuple(self.strides))

    @property
    def storage_numel(self) -> int:
        """Elements of the smallest buffer holding the view (offset included)."""
        if self.strides is None:
            return self.numel
        if self.numel == 0:
            return 0
        return self.offset + 1 + sum((int(n) - 1) * int(s)
                                     for n, s in zip(self.shape, self.strides, strict=False))

    @property
    def storage_nbytes(self) -> int:
        """Bytes of that buffer: what the tensor occupies on a device."""
        return (self.storage_numel * _BITS.get(self.dtype, 8) + 7) // 8

    def contiguous(self) -> TensorSpec:
        """The same shape and dtype without the view."""
        return TensorSpec(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(int(d) for d in self.shape)

    @property
    def nbytes(self) -> int:
        return (self.numel * _BITS.get(self.dtype, 8) + 7) // 8

    def to_dict(self) -> dict[str, Any]:
        """Contiguous specs keep their two keys, so their cases keep their ids."""
        out: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        if self.strides is not None:
            out["strides"] = list(self.strides)
            out["offset"] = int(self.offset)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TensorSpec:
        strides = d.get("strides")
        return cls(tuple(d["shape"]), d["dtype"],
                   None if strides is None else tuple(strides), int(d.get("offset", 0)))

    def __str__(self) -> str:
        view = "" if self.strides is None else f"@{list(self.strides)}+{self.offset}"
        return f"{self.dtype}{list(self.shape)}{view}"


def dtype_name(dtype: Any) -> str:
    """Our dtype string for a NumPy/ml_dtypes or torch dtype (e.g. 'bfloat16')."""
    text = str(dtype)
    if text.startswith("torch."):
        text = text[len("torch."):]
    return {"bool_": "bool", "quint4x2": "int4"}.get(text, text)


def array_view(a: np.ndarray) -> tuple[np.ndarray, tuple[int, ...], int] | None:
    """The contiguous buffer a non-contiguous NumPy array views (through slicing and
    as_strided), with the array's element strides and element offset into it.

    None when `a` is C-contiguous or empty, has a negative or partial-element stride, or
    views no such buffer: such an array is described, and sent to torch
    (`runners/torch_convert.to_torch`), as its contiguous copy, so validation judges the
    tensor a runner passes."""
    item = a.dtype.itemsize
    if a.flags.c_contiguous or a.size == 0 or any(s < 0 or s % item for s in a.strides):
        return None
    root: Any = a
    while getattr(root, "base", None) is not None:
        root = root.base
    if not (isinstance(root, np.ndarray) and root.flags.c_contiguous
            and root.dtype.itemsize == item):
        return None
    offset = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // item
    return root, tuple(s // item for s in a.strides), offset


def describe(x: Any) -> TensorSpec | None:
    """TensorSpec of an array, torch tensor or TensorSpec; None for anything else.

    A non-contiguous view keeps its strides and offset (in elements), so validating a call
    sees the view it will pass (`args.strides_sane`); a NumPy array `array_view` finds no
    buffer for is the contiguous copy a runner passes."""
    if isinstance(x, TensorSpec):
        return x
    shape = tuple(int(d) for d in getattr(x, "shape", ()))
    if isinstance(x, np.ndarray):
        view = array_view(x)
        if view is None:
            return TensorSpec(shape, dtype_name(x.dtype))
        return TensorSpec(shape, dtype_name(x.dtype), view[1], view[2])
    if type(x).__module__.startswith("torch") and hasattr(x, "shape") and hasattr(x, "dtype"):
        if x.is_contiguous():
            return TensorSpec(shape, dtype_name(x.dtype))
        return TensorSpec(shape, dtype_name(x.dtype), tuple(int(st) for st in x.stride()),
                          int(x.storage_offset()))
    return None
