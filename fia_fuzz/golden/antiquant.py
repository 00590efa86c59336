"""KV pseudo-quantisation ("antiquant"): int8/int4 KV dequantised for a float query.

fia-semantics.md §7, [V4 伪量化参数约束] table, [V2 Q_S=1 kv伪量化参数分离],
[V2 伪量化参数 antiquantScale和antiquantOffset约束].

    dequantised = (kv_int + offset) * scale        (offset absent = 0)

Every parameter form is first resolved to an array that broadcasts against the
KV in BNSD (B, KV_N, S, D), where S is the logical KV position (the absolute
position in a left-padded tensor, the position within the sequence for a paged
cache). Then `dequantize` applies it in the documented precision:
- high precision (inner_precise bit0 0, and always for a bf16 query): fp32
  arithmetic, result cast to the query dtype;
- high performance (fp16 query, bit0 1): each step in fp16, params cast to fp16
  first (fia-semantics.md §7 "in the query dtype"; this includes the fp32
  per-token scales, which the docs do not single out);
- precision "fp64": exact float64, so antiquant attention equals float
  attention on the float64 dequantised KV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fia_fuzz.golden.int4 import as_int8_values
from fia_fuzz.numerics.narrow import nearest
from fia_fuzz.op.case import PAGED_ANTIQUANT_MODES
from fia_fuzz.op.geometry import gather

#: Separate-parameter modes (key_/value_antiquant_mode) [V2 keyAntiquantMode].
ANTIQUANT_MODES: dict[int, str] = {
    0: "per-channel (incl. per-tensor)",
    1: "per-token",
    2: "per-tensor x per-head",
    3: "per-token x per-head",
    4: "per-token, scales managed by PagedAttention",
    5: "per-token x per-head, scales managed by PagedAttention",
}


@dataclass(frozen=True)
class KvQuantParams:
    """Scale, optional offset and mode of one of key or value."""

    scale: np.ndarray
    offset: np.ndarray | None
    mode: int


def select_params(kwargs: dict[str, Any], *, prefill: bool
                  ) -> tuple[KvQuantParams, KvQuantParams] | None:
    """(key, value) antiquant params of a call, or None when the KV is not antiquantised.

    Separate key_/value_* params win over the combined antiquant_scale/offset
    [V4 "当伪量化参数和KV分离量化参数同时传入时，以KV分离量化参数为准"]. Combined
    params stack key and value on dim 0; in the prefill branch their mode is
    ignored and per-channel/per-tensor is meant [V4 table, Q_S>1 row 0].
    """
    if kwargs.get("key_antiquant_scale") is not None:
        return (
            KvQuantParams(np.asarray(kwargs["key_antiquant_scale"]),
                          _opt(kwargs.get("key_antiquant_offset")),
                          int(kwargs.get("key_antiquant_mode") or 0)),
            KvQuantParams(np.asarray(kwargs["value_antiquant_scale"]),
                          _opt(kwargs.get("value_antiquant_offset")),
                          int(kwargs.get("value_antiquant_mode") or 0)),
        )
    if kwargs.get("antiquant_scale") is None:
        return None
    scale = np.asarray(kwargs["antiquant_scale"])
    offset = _opt(kwargs.get("antiquant_offset"))
    mode = 0 if prefill else int(kwargs.get("antiquant_mode") or 0)
    return tuple(  # type: ignore[return-value]
        KvQuantParams(scale[i], None if offset is None else offset[i], mode) for i in (0, 1))


def _opt(x: Any) -> np.ndarray | None:
    return None if x is None else np.asarray(x)


def gather_paged(param: np.ndarray, block_table: Any, seq: int, kv_lengths: Any
                 ) -> np.ndarray:
    """Per-token params of modes 4/5 at logical positions: (B, seq) or (B, KV_N, seq).

    Mode 4 params are (block_num, block_size), mode 5 (block_num, KV_N, block_size)
    [V2 Q_S=1 per-token叠加使用page attention模式管理scale/offset]: laid out by
    physical block like the cache itself, so they are read through block_table
    exactly as the KV is (op/geometry.py `gather`: only positions below
    kv_lengths[b] are read, the rest hold 0).
    """
    table = np.asarray(block_table, dtype=np.int64)
    lengths = np.asarray(kv_lengths, dtype=np.int64).reshape(-1)
    per_head = param.ndim == 3
    tokens = gather(param.transpose(0, 2, 1) if per_head else param, table, lengths)
    width = tokens.shape[1]
    if width < seq:
        tokens = np.concatenate(
            [tokens, np.zeros((tokens.shape[0], seq - width) + tokens.shape[2:], tokens.dtype)],
            axis=1)
    tokens = tokens[:, :seq]
    return tokens.transpose(0, 2, 1) if per_head else tokens


def param_bnsd(param: np.ndarray, mode: int, *, kv_heads: int, seq: int,
               block_table: Any = None, kv_lengths: Any = None) -> np.ndarray:
    """A scale or offset as an array broadcasting against BNSD KV (B, KV_N, seq, D).

    Shapes per mode [V4 伪量化参数约束, V2 kv伪量化参数分离], with the key/value
    dim of combined params already removed:
    0: per-tensor (1) -> scalar; per-channel with KV_N*D elements
       ((1,N,1,D), (1,N,D), (1,H), prefill (N,D), (N,1,D), (H)) -> (1,KV_N,1,D);
    1: per-token (1,B,S) / prefill (B,S) -> (B,1,seq,1), first seq positions;
    2: per-tensor x per-head (KV_N) -> (1,KV_N,1,1);
    3: per-token x per-head (B,KV_N,S) -> (B,KV_N,seq,1);
    4/5: PA-managed, gathered through block_table -> (B,1,seq,1) / (B,KV_N,seq,1).
    """
    p = np.asarray(param)
    if mode == 0:
        if p.size == 1:
            return p.reshape(1, 1, 1, 1)
        if p.size % kv_heads:
            raise ValueError(f"per-channel antiquant param of shape {p.shape} does not hold "
                             f"KV_N={kv_heads} heads")
        return p.reshape(1, kv_heads, 1, p.size // kv_heads)
    if mode == 1:
        rows = p.reshape(-1, p.shape[-1])
        return _first(rows, seq)[:, None, :, None]
    if mode == 2:
        return p.reshape(1, kv_heads, 1, 1)
    if mode == 3:
        rows = p.reshape(-1, kv_heads, p.shape[-1])
        return _first(rows, seq)[..., None]
    if mode in PAGED_ANTIQUANT_MODES:
        if block_table is None:
            raise ValueError(f"antiquant mode {mode} needs block_table")
        gathered = gather_paged(p, block_table, seq, kv_lengths)
        return gathered[:, None, :, None] if mode == 4 else gathered[..., None]
    raise ValueError(f"antiquant mode {mode} is not one of {sorted(ANTIQUANT_MODES)}")


def _first(rows: np.ndarray, seq: int) -> np.ndarray:
    if rows.shape[-1] < seq:
        raise ValueError(f"per-token antiquant param covers {rows.shape[-1]} positions, "
                         f"the KV has {seq}")
    return rows[..., :seq]


def is_high_precision(query_dtype: Any, inner_precise: int, *, pse: bool = False) -> bool:
    """Whether dequantisation runs in fp32 ([V4 innerPrecise]: bit0 0 = high precision).

    Only fp16 has a high-performance mode; fp16 with pse_shift is forced to high
    precision (fia-semantics.md §5).
    """
    if np.dtype(query_dtype) != np.float16:
        return True
    return pse or (int(inner_precise) & 1) == 0


def dequantize(kv: np.ndarray, scale: np.ndarray, offset: np.ndarray | None, *,
               query_dtype: Any, high_precision: bool, precision: str = "device"
               ) -> np.ndarray:
    """(kv + offset) * scale: in the query dtype ("device") or float64 ("fp64").

    `kv` holds the integer values (int8 or unpacked int4), `scale`/`offset`
    broadcast against it (see `param_bnsd`).
    """
    x = np.asarray(kv).astype(np.float64)
    s = np.asarray(scale).astype(np.float64)
    o = None if offset is None else np.asarray(offset).astype(np.float64)
    if precision == "fp64":
        return x * s if o is None else (x + o) * s
    work = np.dtype(np.float32) if high_precision else np.dtype(query_dtype)
    s = nearest(s, work).astype(np.float64)
    if o is not None:
        x = nearest(x + nearest(o, work).astype(np.float64), work).astype(np.float64)
    return nearest(nearest(x * s, work), query_dtype)


def dequantize_kv(key: np.ndarray, value: np.ndarray, params: tuple[KvQuantParams,
                  KvQuantParams], *, query_dtype: Any, high_precision: bool,
                  precision: str = "device", block_table: Any = None,
                  kv_lengths: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Float K and V from integer BNSD K and V (B, KV_N, S, D|Dv) and their params."""
    out = []
    for kv, p in zip((key, value), params, strict=True):
        where = dict(kv_heads=kv.shape[1], seq=kv.shape[2], block_table=block_table,
                     kv_lengths=kv_lengths)
        scale = param_bnsd(p.scale, p.mode, **where)
        offset = None if p.offset is None else param_bnsd(p.offset, p.mode, **where)
        out.append(dequantize(kv, scale, offset, query_dtype=query_dtype,
                              high_precision=high_precision, precision=precision))
    return out[0], out[1]


def dequantise_call(key: np.ndarray, value: np.ndarray, call: dict[str, Any], *,
                    query_dtype: Any, prefill: bool, high_precision: bool, precision: str,
                    kv_lengths: Any) -> tuple[np.ndarray, np.ndarray]:
    """Float K/V (query dtype, or float64) from a call's integer BNSD K/V (§7).

    int4 KV (true int4 or int32 words, the last dim D/8) is unpacked first
    (golden/int4.py). A shared prefix prepended to the KV keeps the
    per-channel/per-tensor/per-head params; per-token params with a prefix
    are illegal (`prefix.per_token_antiquant`).
    """
    params = select_params(call, prefill=prefill)
    if params is None:
        raise ValueError("integer key/value without antiquant scales")
    return dequantize_kv(as_int8_values(key), as_int8_values(value), params,
                         query_dtype=query_dtype, high_precision=high_precision,
                         precision=precision, block_table=call.get("block_table"),
                         kv_lengths=kv_lengths)
