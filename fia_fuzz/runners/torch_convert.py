"""NumPy (ml_dtypes) <-> torch tensors, bit-exact, including bfloat16."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np


def to_torch(a: np.ndarray, device: str = "cpu") -> Any:
    import torch

    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def to_numpy(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()
