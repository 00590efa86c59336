"""NumPy (ml_dtypes) <-> torch tensors, bit-exact, including bfloat16."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.tensors import array_view
from fia_fuzz.op.values import lazy_blocks


def to_torch(a: np.ndarray, device: str = "cpu", cast: Any = None) -> Any:
    """`a` (as NumPy dtype `cast` when given) on `device`; a strided view (a case's K/V sliced
    from a fused buffer) stays a view with the same strides and offset over a copy of its
    whole buffer, as an engine would pass it (`op.tensors.array_view`, which `describe`
    reads too); anything else goes as its contiguous copy.

    A lazy paged cache (`op.values.lazy_blocks`: data in its referenced blocks only) goes
    to a device other than the CPU as the whole cache allocated there as zeros with its
    referenced blocks copied in: the host reads and copies those blocks only, never the
    whole cache (a far cache is many GiB of untouched zero pages on the host).
    """
    import torch

    blocks = lazy_blocks(a)
    if blocks is not None and torch.device(device).type != "cpu":
        return blocks_to_device(a, blocks, device, cast)
    if cast is not None:
        a = a.astype(cast)
    view = array_view(a)
    if view is not None:
        root, strides, offset = view
        buffer = _from_numpy(root.reshape(-1).view(a.dtype), device)
        return torch.as_strided(buffer, a.shape, strides, offset)
    return _from_numpy(np.ascontiguousarray(a), device)


def blocks_to_device(a: np.ndarray, blocks: np.ndarray, device: str, cast: Any = None) -> Any:
    """The cache `a` on `device`: zeros there, the blocks `blocks` (axis 0) of `a` copied in.
    Equal to `to_torch(a, device)` when every other block of `a` is zeros."""
    import torch

    part = a[np.asarray(blocks, np.int64)]  # a copy of the referenced blocks only
    part = _from_numpy(part if cast is None else part.astype(cast), device)
    out = torch.zeros(a.shape, dtype=part.dtype, device=device)
    out[torch.as_tensor(np.asarray(blocks, np.int64), device=device)] = part
    return out


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
