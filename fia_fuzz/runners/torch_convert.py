"""NumPy (ml_dtypes) <-> torch tensors, bit-exact, including bfloat16."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.tensors import array_view


def to_torch(a: np.ndarray, device: str = "cpu") -> Any:
    """`a` on `device`; a strided view (a case's K/V sliced from a fused buffer) stays a view
    with the same strides and offset over a copy of its whole buffer, as an engine would pass
    it (`op.tensors.array_view`, which `describe` reads too); anything else goes as its
    contiguous copy."""
    import torch

    view = array_view(a)
    if view is not None:
        root, strides, offset = view
        buffer = _from_numpy(root.reshape(-1).view(a.dtype), device)
        return torch.as_strided(buffer, a.shape, strides, offset)
    return _from_numpy(np.ascontiguousarray(a), device)


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
