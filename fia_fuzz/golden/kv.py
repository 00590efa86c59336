"""KV sources: every way the op receives key/value, reduced to one BNSD form [SEM §2, §3, §6].

`load_kv` is the single entry: contiguous tensors (BSH/BSND/BNSD, with right
or left padding), packed TND/NTD, tensor lists, paged caches and the shared
prefix all come out as `KV`: BNSD key/value in their storage dtype, plus the
per-batch valid window. Dequantisation of int8/int4 KV slots in after this
step (golden/antiquant.py), so every source serves the quantised paths too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fia_fuzz.golden.antiquant import dequantise_call, is_high_precision
from fia_fuzz.golden.prefix import prefix_bnsd, prepend
from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import kv_window, paged_bnsd, to_bnsd, unpack
from fia_fuzz.op.tensors import NUMPY_DTYPES


@dataclass(frozen=True)
class KV:
    """key (B, KV_N, L, D), value (B, KV_N, L, Dv), key_rope (B, KV_N, L, 64) or None.

    Batch b's keys are columns [kv_off, kv_off + prefix + kv_len); everything
    else is padding the masks exclude.
    """

    key: np.ndarray
    value: np.ndarray
    key_rope: np.ndarray | None
    kv_len: np.ndarray
    kv_off: np.ndarray
    prefix: int


def load_kv(view: CallView, call: dict[str, Any]) -> KV:
    """Key, value and key_rope of a legal call as `KV` (storage dtype, not yet dequantised)."""
    names = ["key", "value"] + (["key_rope"] if call.get("key_rope") is not None else [])
    lens, offs = kv_window(view)
    if view.paged:
        table = np.asarray(call["block_table"])
        parts = [paged_bnsd(np.asarray(call[n]), view.KV_N, table, lens) for n in names]
    elif view.is_kv_list:
        parts = [_stack([to_bnsd(np.asarray(t), view.in_layout, view.KV_N)
                         for t in _as_list(call[n], view.B)], lens) for n in names]
    elif view.packed:
        parts = [unpack(np.asarray(call[n]), view.in_layout, lens) for n in names]
    else:
        parts = [to_bnsd(np.asarray(call[n]), view.in_layout, view.KV_N) for n in names]
    kv = KV(parts[0], parts[1], parts[2] if len(parts) > 2 else None, lens, offs, 0)
    return _with_prefix(view, call, kv)


def _as_list(x: Any, b: int) -> list[Any]:
    """key_rope may come as a list like key, or (rarely) as one batched tensor."""
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x[i:i + 1] for i in range(b)]


def _stack(per_batch_bnsd: list[np.ndarray], lens: np.ndarray) -> np.ndarray:
    """Tensor-list KV (each (1, N, S_b, D)) as one right-padded (B, N, max len, D)."""
    s = int(lens.max()) if len(lens) else 0
    first = per_batch_bnsd[0]
    out = np.zeros((len(per_batch_bnsd), first.shape[1], s, first.shape[3]), first.dtype)
    for i, t in enumerate(per_batch_bnsd):
        out[i, :, :lens[i]] = t[0, :, :lens[i]]
    return out


def _with_prefix(view: CallView, call: dict[str, Any], kv: KV) -> KV:
    if call.get("key_shared_prefix") is None:
        return kv
    pk = prefix_bnsd(view, call["key_shared_prefix"])
    pv = prefix_bnsd(view, call["value_shared_prefix"])
    return replace(kv, key=prepend(pk, kv.key), value=prepend(pv, kv.value),
                   prefix=pk.shape[2])


def dequantise(kv: KV, view: CallView, call: dict[str, Any], precision: str) -> KV:
    """Float K/V for the attention step (antiquant, SEM §7; golden/antiquant.py).

    Float KV passes through unchanged, and so does the int8 KV of the full
    int8 flow (int8 query), whose matmuls consume it as integers (quant.py).
    int8/int4 KV with a float query is dequantised at the logical positions
    `KV` keeps, in the query dtype ("device") or float64 ("fp64").
    """
    if kv.key.dtype.kind == "f" or kv.key.dtype.name == "bfloat16":
        return kv
    query_dtype = NUMPY_DTYPES[view.need("query").dtype]
    if query_dtype == np.int8:
        return kv
    high = is_high_precision(query_dtype, view.attr_int("inner_precise"),
                             pse=call.get("pse_shift") is not None)
    key, value = dequantise_call(kv.key, kv.value, call, query_dtype=query_dtype,
                                 prefill=not view.decode, high_precision=high,
                                 precision=precision, kv_lengths=kv.kv_len)
    return replace(kv, key=key, value=value)
