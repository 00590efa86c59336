"""NumPy (ml_dtypes) <-> torch tensors, bit-exact, including bfloat16."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np


def to_torch(a: np.ndarray, device: str = "cpu") -> Any:
    """`a` on `device`; a strided view (a case's K/V sliced from a fused buffer) stays a view
    with the same strides over a copy of its whole buffer, as an engine would pass it."""
    import torch

    root = _root(a)
    if root is not None:
        flat = root.reshape(-1)
        item = a.dtype.itemsize
        offset = (a.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // item
        buffer = _from_numpy(flat.view(a.dtype), device)
        return torch.as_strided(buffer, a.shape, tuple(s // item for s in a.strides), offset)
    return _from_numpy(np.ascontiguousarray(a), device)


def _root(a: np.ndarray) -> np.ndarray | None:
    """The contiguous buffer a non-contiguous array with non-negative element strides views
    (through as_strided and slicing); None for anything else."""
    if a.flags.c_contiguous or a.size == 0 or any(s < 0 or s % a.dtype.itemsize for s in a.strides):
        return None
    root: Any = a
    while getattr(root, "base", None) is not None:
        root = root.base
    ok = isinstance(root, np.ndarray) and root.flags.c_contiguous \
        and root.dtype.itemsize == a.dtype.itemsize
    return root if ok else None


def _from_numpy(a: np.ndarray, device: str) -> Any:
    import torch

    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def to_numpy(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()
