"""Full int8 quantisation and post-quantisation, with the device's rounding order.

fia-semantics.md §8, [V4 deqScale1/quantScale1/deqScale2/quantScale2],
[V2 int8量化相关入参], [MS quant_scale2/quant_offset2].

Three pieces:
- per-tensor scales given as fp32 or as uint64 words carrying an fp32 in their
  low 32 bits (`decode_uint64_scale`, and the vendor-style encoder);
- the int8 attention flow (int8 q/k/v): int32 Q·K^T, dequantised by
  dequant_scale1 to fp16, scaled, softmax in fp32, P quantised to int8 by
  quant_scale1, int32 P·V dequantised by dequant_scale2, divided by the row sum;
- post-quantisation of a float output to int8 by quant_scale2/quant_offset2,
  per-tensor or per-channel, in fp16 arithmetic.

Arithmetic helpers compute each step exactly in float64 and round once to the
step's dtype, which is what a correctly rounding fp16/fp32 unit does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fia_fuzz.numerics.narrow import nearest

#: Bits of the fp32 the vendor's uint64 encoder keeps: sign, exponent and the
#: top 10 mantissa bits (19 bits), truncated, not rounded (fia-semantics.md §8).
UINT64_SCALE_MASK = 0xFFFFE000
#: Flag bit the vendor's encoder sets in every uint64 scale word.
UINT64_SCALE_FLAG = 1 << 46

#: Order of the post-quant steps. "round_then_offset" is the vendor's decode
#: reference, sat8(rint(sat9(x*qs)) + qo); "offset_then_round" its prefill
#: reference, sat8(rint(x*qs + qo)). They differ by at most 1 LSB, and only for
#: non-integer offsets (fia-semantics.md §8).
POST_QUANT_ORDERS = ("round_then_offset", "offset_then_round")

SAT9 = (-256.0, 255.0)
SAT8 = (-128.0, 127.0)


# ---- scales ---------------------------------------------------------------
def decode_uint64_scale(words: Any) -> np.ndarray:
    """The fp32 scale carried by the low 32 bits of each uint64 word."""
    w = np.asarray(words)
    if w.dtype != np.uint64:
        raise TypeError(f"expected uint64 scale words, got {w.dtype}")
    return (w & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)


def encode_uint64_scale(scales: Any) -> np.ndarray:
    """uint64 words as the vendor encodes fp32 scales: top 19 bits kept, bit 46 set.

    decode(encode(x)) == x exactly when x has at most 10 mantissa bits
    (e.g. any fp16 value); otherwise the mantissa is truncated toward zero.
    """
    bits = _op(np.float32, scales).view(np.uint32).astype(np.uint64)
    return (bits & np.uint64(UINT64_SCALE_MASK)) | np.uint64(UINT64_SCALE_FLAG)


def scale_as_fp32(scale: Any) -> np.ndarray:
    """A dequant/quant scale as fp32, decoding uint64 words (V4: UINT64 or FLOAT32)."""
    s = np.asarray(scale)
    if s.dtype == np.uint64:
        return decode_uint64_scale(s)
    return _op(np.float32, s)


def per_tensor(scale: Any, name: str) -> float:
    """The single value of a per-tensor scale ([V4]: deqScale1/quantScale1/deqScale2)."""
    s = scale_as_fp32(scale)
    if s.size != 1:
        raise ValueError(f"{name} must be per-tensor (one element), got shape {s.shape}")
    return float(s.reshape(-1)[0])


# ---- rounding primitives ---------------------------------------------------
def _op(dtype: Any, x: np.ndarray) -> np.ndarray:
    """Round an exact float64 result once to `dtype` (overflow to inf is intended)."""
    return nearest(np.asarray(x, dtype=np.float64), dtype)


def _fp32(x: float) -> np.float64:
    """A scalar rounded to fp32 (the vendor keeps scales in fp32), as float64."""
    return np.float64(nearest(np.float64(x), np.float32))


def saturate_round_int8(x: np.ndarray) -> np.ndarray:
    """Clamp to [-128, 127], round half to even, as int8; NaN becomes 0 (assumed)."""
    y = np.rint(np.clip(np.asarray(x, dtype=np.float64), *SAT8))
    return np.where(np.isnan(y), 0.0, y).astype(np.int8)


# ---- post-quantisation ------------------------------------------------------
def post_quantize(x: Any, quant_scale: Any, quant_offset: Any = None, *,
                  order: str = "round_then_offset") -> np.ndarray:
    """int8 output of x quantised by quant_scale2/quant_offset2 [V4 quantScale2].

    fp16 arithmetic as the vendor reference: x, scale and offset are first
    rounded to fp16, each product/sum is rounded to fp16.
    "round_then_offset": sat8(rint(rint(sat9(x*qs)) + qo)); the outer rint
    only matters for a non-integer offset. "offset_then_round":
    sat8(rint(x*qs + qo)). Scale/offset broadcast against x (see `channel_view`).
    """
    if order not in POST_QUANT_ORDERS:
        raise ValueError(f"order={order!r}, expected one of {POST_QUANT_ORDERS}")
    x16 = _op(np.float16, x).astype(np.float64)
    qs16 = _op(np.float16, quant_scale).astype(np.float64)
    qo16 = (np.zeros((), np.float64) if quant_offset is None
            else _op(np.float16, quant_offset).astype(np.float64))
    y = _op(np.float16, x16 * qs16).astype(np.float64)
    if order == "round_then_offset":
        y = np.rint(np.clip(y, *SAT9))
    y = _op(np.float16, y + qo16)
    return saturate_round_int8(y)


def post_quantize_ideal(x: Any, quant_scale: Any, quant_offset: Any = None) -> np.ndarray:
    """The unrounded ideal of post-quantisation, clip(x*qs + qo, -128, 127), as float64."""
    x64 = np.asarray(x).astype(np.float64)
    qs = np.asarray(quant_scale).astype(np.float64)
    qo = 0.0 if quant_offset is None else np.asarray(quant_offset).astype(np.float64)
    return np.clip(x64 * qs + qo, *SAT8)


#: Where the N and D axes of an output layout are; every other axis broadcasts.
_CHANNEL_AXES = {"BSH": None, "BSND": (2, 3), "BNSD": (1, 3), "NBSD": (0, 3),
                 "TND": (1, 2), "NTD": (0, 2)}


def channel_view(param: Any, out_layout: str, num_heads: int) -> np.ndarray:
    """A per-tensor or per-channel quant_scale2/quant_offset2 shaped to broadcast on the output.

    [V4 quantScale2]: per-channel means the product of the dims is H for a BSH
    output and N*D otherwise ((1,1,H), (H), (1,N,1,D), (1,1,N,D), (N,D), ...);
    in all of them the flat order is head-major, D-minor.
    """
    p = np.asarray(param)
    if p.size == 1:
        return p.reshape(())
    if out_layout not in _CHANNEL_AXES:
        raise ValueError(f"unknown output layout {out_layout!r}")
    axes = _CHANNEL_AXES[out_layout]
    if axes is None:
        return p.reshape(-1)
    if p.size % num_heads:
        raise ValueError(f"per-channel param of {p.size} elements is not N*D for N={num_heads}")
    ndim = 4 if out_layout in ("BSND", "BNSD", "NBSD") else 3
    shape = [1] * ndim
    shape[axes[0]], shape[axes[1]] = num_heads, p.size // num_heads
    return p.reshape(shape[axes[0]:])


def post_quantize_output(out: Any, quant_scale2: Any, quant_offset2: Any, *,
                         out_layout: str, num_heads: int, precision: str = "device",
                         order: str = "round_then_offset") -> np.ndarray:
    """Post-quantise a float attention output in its output layout (§8).

    precision "device" gives the int8 tensor; "fp64" the unrounded ideal.
    """
    qs = channel_view(quant_scale2, out_layout, num_heads)
    qo = None if quant_offset2 is None else channel_view(quant_offset2, out_layout, num_heads)
    if precision == "fp64":
        return post_quantize_ideal(out, qs, qo)
    return post_quantize(out, qs, qo, order=order)


# ---- full int8 attention -----------------------------------------------------
def int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer matmul with int32 wrap-around accumulation (the cube unit's int32 result).

    float64 BLAS is exact here: |a·b| <= 2^53 for int8 operands and S2 < 2^38.
    """
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return exact.astype(np.int32)


def fixpipe_dequant(acc: np.ndarray, scale: float) -> np.ndarray:
    """int32 accumulator times a dequant scale, rounded to fp16 (assumed fp32 product first)."""
    return _op(np.float16, _op(np.float32, acc.astype(np.float64) * _fp32(scale)))


def quantize_p(p: np.ndarray, quant_scale1: float) -> np.ndarray:
    """Unnormalised softmax P (in [0, 1]) times quant_scale1 in fp32, rounded half-even to int8."""
    product = p.astype(np.float64) * _fp32(quant_scale1)
    return saturate_round_int8(_op(np.float32, product))


@dataclass(frozen=True)
class FullQuant:
    """The two matmuls of the full int8 flow, as the attention core calls them (§8).

    `scores` replaces Q·K^T (before the softmax scale), `pv` replaces P·V on
    the unnormalised P; everything between (scale, pse, mask, softmax, the row
    sum) is the float flow's. Operands are the int8 values in any float type.
    In "fp64" nothing is rounded: P*qs1 is only saturated to the int8 range,
    not rounded to an integer (as the float flow's "fp64" skips the fp16
    rounding of P), which keeps the ideal independent of how the core blocks
    the keys.
    """

    dequant_scale1: float
    quant_scale1: float
    dequant_scale2: float
    precision: str

    @classmethod
    def from_scales(cls, dequant_scale1: Any, quant_scale1: Any, dequant_scale2: Any,
                    precision: str) -> FullQuant:
        """From per-tensor fp32 or uint64 scales [V4 deqScale1/quantScale1/deqScale2]."""
        return cls(per_tensor(dequant_scale1, "dequant_scale1"),
                   per_tensor(quant_scale1, "quant_scale1"),
                   per_tensor(dequant_scale2, "dequant_scale2"), precision)

    @property
    def work(self) -> Any:
        return np.float64 if self.precision == "fp64" else np.float32

    def scores(self, q: np.ndarray, k: np.ndarray) -> np.ndarray:
        """int32 Q·K^T times dequant_scale1: rounded to fp16 on the device, exact in fp64."""
        qk = int_matmul(q, k.swapaxes(-1, -2))
        if self.precision == "fp64":
            return qk.astype(np.float64) * self.dequant_scale1
        return fixpipe_dequant(qk, self.dequant_scale1).astype(np.float32)

    def pv(self, p: np.ndarray, v: np.ndarray) -> np.ndarray:
        """P quantised to int8 by quant_scale1, int32 P·V, times dequant_scale2 (like `scores`)."""
        if self.precision == "fp64":
            p_q = np.clip(p.astype(np.float64) * self.quant_scale1, *SAT8)
            return np.matmul(p_q, v.astype(np.float64)) * self.dequant_scale2
        pv = int_matmul(quantize_p(p, self.quant_scale1), v)
        return fixpipe_dequant(pv, self.dequant_scale2).astype(np.float32)


def int8_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, dequant_scale1: Any,
                   quant_scale1: Any, dequant_scale2: Any, scale: float, precision: str,
                   masked: np.ndarray | None = None, pse: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) of the full-quant flow in one pass, for int8 BNSD q (B,N,S1,D), k, v.

    The readable statement of fia-semantics.md §8 (the vendor reference's
    order, global row max), against which the blocked golden is checked.
    precision "device": deq1 product in fp32 rounded to fp16, then fp32 from
    the scale on; P*qs1 in fp32; deq2 like deq1; division by the fp32 row sum.
    "fp64": the same steps in float64 without any rounding (see FullQuant).
    `masked` (True = not attended) and
    `pse` broadcast to (B,N,S1,S2). Rows with every key masked get out 0 and
    lse +inf. Out is fp32/fp64.
    """
    fq = FullQuant.from_scales(dequant_scale1, quant_scale1, dequant_scale2, precision)
    work = fq.work
    b, n, s1, d = q.shape
    kv_n, s2, dv = k.shape[1], k.shape[2], v.shape[3]
    g = n // kv_n
    if s2 == 0:
        return np.zeros((b, n, s1, dv), work), np.full((b, n, s1), np.inf, work)
    scores = fq.scores(q.reshape(b, kv_n, g * s1, d), k) * work(scale)
    scores = scores.reshape(b, n, s1, s2)
    if pse is not None:
        scores = scores + np.asarray(pse).astype(work)
    if masked is not None:
        scores = np.where(masked, -np.inf, scores)
    m = scores.max(axis=-1, keepdims=True)
    dead = ~np.isfinite(m)
    m = np.where(dead, 0, m)
    p = np.exp(scores - m).astype(work)
    l_sum = p.sum(axis=-1, keepdims=True, dtype=work)
    o = fq.pv(p.reshape(b, kv_n, g * s1, s2), v).reshape(b, n, s1, dv)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(dead, 0, o / l_sum).astype(work)
        lse = np.where(dead, np.inf, np.log(l_sum) + m).astype(work)
    return out, lse[..., 0]


# ---- dequant_scale_query (V4 queryQuantMode 3) -------------------------------
#: How to view a query layout as (tokens..., N, D) and back.
_TOKEN_VIEWS = {
    "BSND": (lambda x, n: x, lambda x, shape: x),
    "TND": (lambda x, n: x, lambda x, shape: x),
    "BNSD": (lambda x, n: x.transpose(0, 2, 1, 3), lambda x, shape: x.transpose(0, 2, 1, 3)),
    "NTD": (lambda x, n: x.transpose(1, 0, 2), lambda x, shape: x.transpose(1, 0, 2)),
    "BSH": (lambda x, n: x.reshape(*x.shape[:2], n, -1), lambda x, shape: x.reshape(shape)),
}


def dequantize_query(query: Any, dequant_scale_query: Any, *, layout: str, num_heads: int,
                     precision: str = "device") -> np.ndarray:
    """int8 query times its per-token x per-head scale (V4 queryQuantMode 3), same layout.

    [V4 dequantScaleQuery] documents only "per-token叠加per-head", fp32. We read
    the scale as one value per (token, head) in token-major order, i.e. any
    shape with B*S1*N (or T*N) elements such as (B,S1,N), (T,N) or (T,N,1), the
    shape the vendor's MlaProlog emits. Result fp32 ("device") or float64.
    """
    if layout not in _TOKEN_VIEWS:
        raise ValueError(f"unknown query layout {layout!r}")
    q = np.asarray(query)
    to_tokens, back = _TOKEN_VIEWS[layout]
    tq = to_tokens(q, num_heads)
    s = np.asarray(dequant_scale_query).astype(np.float64)
    tokens = tq.shape[:-1]
    if s.size != int(np.prod(tokens)):
        raise ValueError(f"dequant_scale_query has {s.size} elements, expected one per "
                         f"(token, head) = {int(np.prod(tokens))}")
    work = np.float64 if precision == "fp64" else np.float32
    s = _op(np.float32, s).astype(np.float64) if work is np.float32 else s
    deq = _op(work, tq.astype(np.float64) * s.reshape(*tokens, 1))
    return back(deq, q.shape)



# ---- the call-level steps the golden pipeline runs ----------------------------------------
def full_quant_of_call(call: dict[str, Any], precision: str) -> FullQuant | None:
    """The int8 flow's scales of a call (int8 q/k/v), or None for a float call."""
    if call.get("dequant_scale1") is None:
        return None
    return FullQuant.from_scales(call["dequant_scale1"], call["quant_scale1"],
                                 call["dequant_scale2"], precision)


def post_quantise_call(out: np.ndarray, call: dict[str, Any], *, out_layout: str,
                       num_heads: int, precision: str, float_dtype: Any,
                       dead_rows: np.ndarray | None = None,
                       order: str = "round_then_offset") -> np.ndarray:
    """A call's int8 output from its float attention output (§8), in `out_layout`.

    The input is the output the same call returns without quant_scale2 (rounded
    to `float_dtype`: the query dtype, fp16 for an int8 query), so the golden's
    int8 output is exactly the post-quant of its float output. Rows the op does
    not compute (`dead_rows`, True where the row has no key) stay 0: the docs
    reject int8 output with an offset exactly because such rows would not carry
    the offset [V4 Q_S>1 INT8: 矩阵会存在某几行不参与计算的情况 ... 该场景会拦截].
    """
    x = out if precision == "fp64" else nearest(out, float_dtype)
    q = post_quantize_output(x, call["quant_scale2"], call.get("quant_offset2"),
                             out_layout=out_layout, num_heads=num_heads, precision=precision,
                             order=order)
    if dead_rows is not None:
        q = np.where(dead_rows[..., None], 0, q).astype(q.dtype)
    return q
