"""What `aclCreateTensor` receives for one argument: view shape, strides, offset, format,
dtype, storage shape and the host bytes of the storage to copy to the device.

A NumPy view into a larger buffer (`op.tensors.array_view`: K/V sliced from a
fused cache) goes as that buffer with the view's element strides and offset,
as torch_npu passes a strided tensor; anything else goes contiguous with the
row-major strides the documents' examples compute. int4 values are packed two
to a byte (element 0 in the low nibble), the storage ACL_INT4 describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.call import int64_values
from fia_fuzz.op.tensors import array_view, dtype_name
from fia_fuzz.runners.aclnn.prototypes import (
    ACL_DTYPE,
    ACL_FORMAT_FRACTAL_NZ,
    ACL_FORMAT_ND,
    NZ_CACHE_ARGS,
)

#: Value arguments passed as tensors, with their dtype (blockTable INT32, padding INT64).
VALUE_TENSORS: dict[str, Any] = {"block_table": np.int32, "query_padding_size": np.int64,
                                 "kv_padding_size": np.int64}


@dataclass
class TensorPlan:
    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    format: int
    dtype: int
    storage_shape: tuple[int, ...]
    storage: np.ndarray  # contiguous host bytes (uint8) of the storage
    device: Any = None  # the device address once allocated

    @property
    def nbytes(self) -> int:
        return int(self.storage.nbytes)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(int(shape[i + 1]), 1)
    return tuple(strides)


def pack_nibbles(a: np.ndarray) -> np.ndarray:
    """int4 values (one per byte, C order) two to a byte, element 0 in the low nibble."""
    v = (np.ascontiguousarray(a).reshape(-1).astype(np.int8).view(np.uint8) & 0xF)
    if v.size % 2:
        v = np.concatenate([v, np.zeros(1, np.uint8)])
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8)


def _bytes(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.dtype(ml_dtypes.int4):
        return pack_nibbles(a)
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def acl_dtype(a: np.ndarray, name: str) -> int:
    dt = dtype_name(a.dtype)
    if dt not in ACL_DTYPE:
        raise ValueError(f"{name}: dtype {dt} has no aclDataType")
    return ACL_DTYPE[dt]


def tensor_format(name: str, a: np.ndarray, paged: bool) -> int:
    """FRACTAL_NZ for a 5-D paged KV cache, ND otherwise."""
    return ACL_FORMAT_FRACTAL_NZ if paged and name in NZ_CACHE_ARGS and a.ndim == 5 \
        else ACL_FORMAT_ND


def plan_tensor(name: str, value: Any, paged: bool = False) -> TensorPlan:
    """The aclCreateTensor arguments and storage bytes of one argument."""
    if name in VALUE_TENSORS:
        a = np.asarray(value, VALUE_TENSORS[name]) if int64_values(value) else np.asarray(value)
    else:
        a = np.asarray(value)
    shape = tuple(int(d) for d in a.shape)
    fmt = tensor_format(name, a, paged)
    view = array_view(a)
    if view is not None:
        root, strides, offset = view
        return TensorPlan(name, shape, strides, offset, fmt, acl_dtype(a, name),
                          (int(root.size),), _bytes(root))
    return TensorPlan(name, shape, contiguous_strides(shape), 0, fmt, acl_dtype(a, name),
                      shape, _bytes(a))


def output_plan(name: str, shape: tuple[int, ...], dtype: str) -> TensorPlan:
    """An output tensor: contiguous, ND, storage of its own size (zeros on the host)."""
    npdt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    nbytes = math.prod(shape) * npdt.itemsize
    return TensorPlan(name, tuple(shape), contiguous_strides(tuple(shape)), 0, ACL_FORMAT_ND,
                      ACL_DTYPE[dtype], tuple(shape), np.zeros(nbytes, np.uint8))


def int_array(name: str, value: Any) -> np.ndarray:
    """The int64 values of an aclIntArray argument (ValueError when they are not int64)."""
    if not int64_values(value):
        raise ValueError(f"{name}: {value!r} is not a list of int64 values, which an "
                         "aclIntArray cannot hold")
    return np.asarray([int(x) for x in np.asarray(value).reshape(-1)], np.int64)
