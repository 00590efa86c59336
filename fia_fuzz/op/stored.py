"""Real tensors on disk: one .npz per case or bundle, no pickle, bfloat16 kept bit-exact.

NumPy cannot store ml_dtypes types in an .npz, so each array goes in as its
raw bits (uint16 for bfloat16, int8 for int4) beside a `<name>__dtype`
entry. A case whose tensor is stored names it with the fill recipe
{"dist": "stored", "sha256": ...}: the digest makes the case id follow the
data, and a changed file is refused instead of silently used.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.op.tensors import NUMPY_DTYPES, dtype_name

#: The fill recipe of a tensor whose values are stored, not generated.
STORED = "stored"
_DTYPE_SUFFIX = "__dtype"
#: Storage dtype of the types NumPy cannot save itself.
_BITS_AS = {"bfloat16": np.uint16, "int4": np.int8}


def pack(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Arrays as plain NumPy entries of an .npz (their bits plus each dtype's name)."""
    packed: dict[str, np.ndarray] = {}
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        dt = dtype_name(a.dtype)
        packed[name + _DTYPE_SUFFIX] = np.array(dt)
        packed[name] = a.view(_BITS_AS[dt]) if dt == "bfloat16" else \
            a.astype(np.int8) if dt == "int4" else a
    return packed


def unpack(npz: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays `pack` stored, in their own dtypes."""
    out = {}
    for key in npz:
        if key.endswith(_DTYPE_SUFFIX):
            continue
        a, dt = npz[key], str(npz[key + _DTYPE_SUFFIX])
        out[key] = a.view(NUMPY_DTYPES[dt]) if dt == "bfloat16" else \
            a.astype(NUMPY_DTYPES[dt]) if dt == "int4" else a
    return out


def save(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write `arrays` to the .npz at `path`, any dtype (`pack`; `savez`)."""
    return savez(path, pack(arrays))


#: Bytes of an array `savez` deflates on trial, and the share they must shrink to (drawn
#: float data shrinks to 0.6-0.9 at 10-20 MB/s: not worth it; masks to a few per cent).
_SAMPLE, _WORTH = 1 << 16, 0.5
#: Deflate level of the arrays `savez` compresses: level 1 gets most of what level 6 gets
#: from masks and indices, in a fraction of its time.
DEFLATE_LEVEL = 1


def savez(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """Plain NumPy arrays to the .npz at `path` (`np.load` reads it, no fia-fuzz needed),
    quickly: an array whose first bytes barely shrink (random mantissas, whatever their
    dtype: deflating them took most of a large case's time) is stored as it is, the
    others (masks, lengths, constant fills) deflated at DEFLATE_LEVEL."""
    p = Path(path)
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=DEFLATE_LEVEL) as zf:
        for name, a in arrays.items():
            a = np.asarray(a)
            entry: str | zipfile.ZipInfo = f"{name}.npy"
            if not _shrinks(a):
                entry = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                entry.compress_type = zipfile.ZIP_STORED
            with zf.open(entry, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, a, allow_pickle=False)
    return p


def load(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays of an .npz written by `save` (pickle refused; ValueError for a file that
    is no .npz archive, instead of NumPy's guess that it holds pickled data)."""
    if not zipfile.is_zipfile(path):
        raise ValueError("not an .npz archive (no zip header)")
    with np.load(path, allow_pickle=False) as npz:
        return unpack({k: npz[k] for k in npz.files})


def digest(arrays: list[np.ndarray]) -> str:
    """SHA-256 over dtype, shape and bytes of each array, in order (16 hex digits)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{dtype_name(a.dtype)}{list(a.shape)};".encode())
        h.update(pack({"a": a})["a"].tobytes())
    return h.hexdigest()[:16]


def stored_keys(name: str, value: Any) -> list[str]:
    """Keys of the arrays of argument `name` in a case's .npz (one per list element)."""
    return [f"{name}.{i}" for i in range(len(value))] if isinstance(value, list) else [name]


def _shrinks(a: np.ndarray) -> bool:
    """Whether deflating `a` is worth it: its first _SAMPLE bytes shrink below _WORTH."""
    head = np.ascontiguousarray(a.reshape(-1)[: max(1, _SAMPLE // max(1, a.itemsize))])
    raw = head.tobytes()
    return len(zlib.compress(raw, DEFLATE_LEVEL)) < _WORTH * len(raw) if raw else False
