"""A case's input digest: what its materialised call holds, bit for bit, as 16 hex digits.

The same case gives the same digest on any machine and library version (op/values.py's
contract), so a campaign records it with every row, case file and bundle, and a repro
that computes another one knows it is not running the case that failed. It is taken
from the arrays the call already holds: every argument by name, each array as its dtype,
shape and bytes; a strided view as its strides, offset and the whole buffer it views
(the poison between its elements included); a lazy paged cache (`values.lazy_blocks`) as
its shape and the blocks that hold data, never its untouched zero pages; every other
value as its type and repr.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from fia_fuzz.op.tensors import array_view, dtype_name
from fia_fuzz.op.values import lazy_blocks

#: Hex digits of the SHA-256 kept (as a case id's).
DIGEST_HEX = 16


def input_digest(call: Mapping[str, Any]) -> str:
    """The digest of a materialised call (`Case.call()`), arguments in name order."""
    h = hashlib.sha256()
    for name in sorted(call):
        _update(h, name, call[name])
    return h.hexdigest()[:DIGEST_HEX]


def _update(h: Any, name: str, value: Any) -> None:
    if isinstance(value, np.ndarray):
        _array(h, name, value)
    elif isinstance(value, (list, tuple)):
        h.update(f"{name}:list {len(value)};".encode())
        for i, v in enumerate(value):
            _update(h, f"{name}[{i}]", v)
    else:
        if isinstance(value, np.generic):
            value = value.item()
        h.update(f"{name}:{type(value).__name__} {value!r};".encode())


def _array(h: Any, name: str, a: np.ndarray) -> None:
    head = f"{name}:{dtype_name(a.dtype)}{list(a.shape)}"
    blocks = lazy_blocks(a)
    if blocks is not None:
        h.update(f"{head} blocks {blocks.size};".encode())
        h.update(np.ascontiguousarray(blocks, np.int64).tobytes())
        for b in blocks:
            h.update(_bytes(a[int(b)]))
        return
    view = array_view(a)
    if view is not None:
        root, strides, offset = view
        h.update(f"{head} strides {list(strides)} offset {offset} of {root.size};".encode())
        h.update(_bytes(root))
        return
    h.update(f"{head};".encode())
    h.update(_bytes(np.ascontiguousarray(a)))


def _bytes(a: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, without a copy (any dtype, ml_dtypes' included)."""
    return memoryview(a.reshape(-1).view(np.uint8))
