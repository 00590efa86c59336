"""Exact conversion of stored tensors to a float working type (the golden's and the differ's).

Float16 -> float32/float64 is exact, so any correct conversion gives the
same bits; NumPy's runs at about 1.3 ns an element here, which is most of a
decode call (the KV cache is read once, converted once). torch's CPU cast is
vectorised (F16C) and about five times faster, so it is used for float16
sources when torch is already imported, or importable and the tensor is large
enough to repay the import (`TORCH_MIN_ELEMENTS`). torch stays optional: without
it the NumPy cast gives the same bits (but for signalling NaNs, which torch
returns quiet, as the golden's first arithmetic on them would anyway).
Everything else is NumPy's cast.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Below this many elements a process that has not imported torch keeps NumPy's cast.
TORCH_MIN_ELEMENTS = 1 << 22
_TORCH: dict[str, Any] = {}


def _torch(size: int) -> Any:
    """The torch module when the fast cast should use it, else None."""
    if "torch" not in _TORCH:
        if "torch" in sys.modules or (size >= TORCH_MIN_ELEMENTS
                                      and importlib.util.find_spec("torch") is not None):
            import torch

            _TORCH["torch"] = torch
        else:
            return None
    return _TORCH["torch"]


def cast_into(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src converted to dst's dtype (exact for float16 -> float32/float64)."""
    if src.dtype == np.float16 and dst.dtype in (np.float32, np.float64) and src.size:
        torch = _torch(src.size)
        if torch is not None:
            view = src if all(st >= 0 for st in src.strides) else np.ascontiguousarray(src)
            torch.from_numpy(dst).copy_(torch.from_numpy(view))
            return
    np.copyto(dst, src, casting="unsafe")


def as_work(src: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """src as a `dtype` array: src itself (a view, maybe strided) when it already has that
    dtype, else a C-contiguous converted copy. The golden's matmuls take strided operands
    as they are (BLAS packs them anyway), so a block of a converted KV head costs no copy."""
    if src.dtype == dtype:
        return src
    dst = np.empty(src.shape, dtype)
    cast_into(dst, src)
    return dst


def work_blocks(src: np.ndarray, dtype: np.dtype, width: int) -> Iterator[np.ndarray]:
    """src[..., c0:c0 + width, :] for c0 = 0, width, ... in `dtype`: views of src when it
    already has that dtype, else converted into one buffer reused for every block (each block
    is valid until the next is drawn), so a block-by-block conversion allocates (and page
    faults) once instead of once a block."""
    cols = src.shape[-2]
    if src.dtype == dtype:
        for c0 in range(0, cols, width):
            yield src[..., c0:c0 + width, :]
        return
    buf = np.empty((*src.shape[:-2], min(width, cols), src.shape[-1]), dtype)
    for c0 in range(0, cols, width):
        block = src[..., c0:c0 + width, :]
        dst = buf[..., :block.shape[-2], :]
        cast_into(dst, block)
        yield dst
