"""Deterministic tensor contents: a case's fill recipes turned into arrays.

Determinism contract: the same (seed, tensor name, recipe, spec) gives
bit-identical arrays on any machine. Only the PCG64 bit stream seeded by
`SeedSequence` is used (NumPy keeps BitGenerator streams stable, NEP 19),
never `Generator` methods (their algorithms may change between releases) and
never libm transcendental functions (their last bit differs across
platforms). Floats are built from raw bits with exact integer arithmetic and
one float64 step, then narrowed to the tensor's dtype by our own rounding
(`numerics/narrow.py`), never a library's cast; the "normal" shape is an
Irwin-Hall(4) sum, which has unit variance and tails bounded at +-2*sqrt(3).
"""

from __future__ import annotations

import functools
import math
import mmap
import zlib
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.numerics.narrow import F32, float_bits, narrow
from fia_fuzz.op.tensors import FOREIGN_DTYPES, NUMPY_DTYPES, TensorSpec, numpy_dtype

FLOAT_DISTS = ("normal", "uniform", "const", "outlier", "large", "negative", "positive",
               "const_rows", "range")
MASK_DISTS = ("bernoulli", "triu", "zeros", "ones", "nearly_full")
INT_DISTS = ("int", "u64_scale")
_SQRT3 = math.sqrt(3.0)
#: The largest sum of four 16-bit fields.
IRWIN_HALL_MAX = 4 * 0xFFFF
#: "normal" tensors of at least this many elements look their samples up in a table of
#: every possible sum (`_normal_table`; it costs about a quarter of this in float steps).
NORMAL_TABLE_MIN = 1 << 16
#: Elements generated per step: one chunk's raw words and float64 work arrays stay in the
#: CPU cache, so only the result goes to memory. Chunks hold whole rows: the row fills
#: (const_rows, outlier, nearly_full) read each row's first word.
CHUNK = 1 << 15
#: Dists whose values read no raw words: their stream is never drawn.
RAWLESS_DISTS = ("triu", "zeros", "ones", "u64_scale", "const")
#: A float fill's optional step: its values rounded to multiples of it (docs/values.md).
ROUND = "round"
#: Largest finite value per float dtype (the "large" fill's limit).
FINFO_MAX = {"float16": 65504.0, "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
             "float32": float(np.finfo(np.float32).max)}


def _stream(seed: int, name: str, index: int, block: int | None = None) -> np.random.PCG64:
    """The PCG64 bit generator of (seed, tensor name, list index[, cache block])."""
    words = [seed & 0xFFFFFFFFFFFFFFFF, zlib.crc32(name.encode()), index]
    return np.random.PCG64(np.random.SeedSequence(words if block is None else [*words, block]))


def raw_bits(seed: int, name: str, index: int, n: int, block: int | None = None) -> np.ndarray:
    """n raw uint64 words from the stream of (seed, tensor name, list index[, cache block])."""
    return np.asarray(_stream(seed, name, index, block).random_raw(n), dtype=np.uint64)


def uniform01(raw: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Exact uniforms in [0, 1) from the top 53 bits of each word, times `scale` (a new
    array): (k * 2^-53) * scale in one multiply, k * (2^-53 * scale), the same rounding of
    the same product while 2^-53 * scale is exact (a normal float)."""
    u = (raw >> np.uint64(11)).astype(np.float64)
    return _times(u, 2.0 ** -53, scale)


def _times(k: np.ndarray, unit: float, scale: float) -> np.ndarray:
    """k * unit * scale in place, for float64 k that are exact integers and unit a power of
    two: one multiply when unit * scale is exact."""
    if abs(scale) >= 2.0 ** -900 or scale == 0:  # unit * scale stays a normal float: exact
        k *= unit * scale
    else:
        k *= unit
        k *= scale
    return k


def irwin_hall_sums(raw: np.ndarray) -> np.ndarray:
    """The sum of the four 16-bit fields of each word (uint32, 0 .. IRWIN_HALL_MAX): the two
    fields of each 32-bit half added in place, then the halves."""
    halves = np.ascontiguousarray(raw, np.uint64).view(np.uint32)
    pairs = halves & np.uint32(0xFFFF)
    pairs += halves >> np.uint32(16)
    return pairs[0::2] + pairs[1::2]


def _irwin_hall_values(total: np.ndarray) -> np.ndarray:
    v = total.astype(np.float64)  # the float steps in place: no fresh array per step
    v *= 2.0 ** -16
    v -= 2.0
    v *= _SQRT3
    return v


def _below(raw: np.ndarray, p: float) -> np.ndarray:
    """uniform01(raw) < p, by one integer comparison: u = (raw >> 11) * 2^-53 is below p
    exactly when raw >> 11 < ceil(p * 2^53), i.e. raw < ceil(p * 2^53) * 2^11."""
    if not p > 0:  # also NaN: no uniform is below it
        return np.zeros(raw.shape, bool)
    limit = math.ceil(min(p, 1.0) * 2.0 ** 53) << 11
    if limit >= 1 << 64:
        return np.ones(raw.shape, bool)
    return raw < np.uint64(limit)


def normalish(raw: np.ndarray) -> np.ndarray:
    """Unit-variance, zero-mean Irwin-Hall(4) samples, exact up to one multiply."""
    return _irwin_hall_values(irwin_hall_sums(raw))


@functools.lru_cache(maxsize=32)
def _normal_table(scale: float, np_dtype: np.dtype) -> np.ndarray:
    """Every possible `normalish * scale` sample in `np_dtype`, kept for the next tensor."""
    table = narrow(_irwin_hall_values(np.arange(IRWIN_HALL_MAX + 1)) * scale, np_dtype)
    table.flags.writeable = False
    return table


def u64_scales(value: float, shape: tuple[int, ...]) -> np.ndarray:
    """A uint64 dequant scale as the vendor encodes it: fp32 bits & 0xFFFFE000 | 1 << 46.

    fia-semantics.md §8; the float32 rounding is ours (numerics/narrow.py).
    """
    bits = int(float_bits(np.float64(value), F32)) & 0xFFFFE000
    return np.full(shape, bits | (1 << 46), dtype=np.uint64)


#: Full int8 quant scales when a case gives no recipe: deq1 keeps int8 x int8 sums over D
#: inside fp16 after dequantisation, qs1 maps P in [0, 1] onto int8 [SEM §8] (strategies
#: draw their own values).
QUANT_SCALE_DEFAULTS = {"dequant_scale1": 2.0 ** -12, "quant_scale1": 127.0,
                        "dequant_scale2": 2.0 ** -7}


def default_fill(name: str, spec: TensorSpec) -> dict[str, Any]:
    """The recipe used when a case gives none for this tensor."""
    if spec.dtype in FOREIGN_DTYPES:
        return default_fill(name, TensorSpec(spec.shape, FOREIGN_DTYPES[spec.dtype][1]))
    if name in QUANT_SCALE_DEFAULTS and spec.dtype in ("uint64", "float32"):
        return {"dist": "u64_scale" if spec.dtype == "uint64" else "const",
                "value": QUANT_SCALE_DEFAULTS[name]}
    if spec.dtype == "bool" or name == "atten_mask":
        return {"dist": "bernoulli", "p": 0.2}
    if spec.dtype in ("int8", "int4", "int32", "int64"):
        lo, hi = {"int8": (-128, 127), "int4": (-8, 7), "int32": (-(2**31), 2**31 - 1),
                  "int64": (-(2**31), 2**31 - 1)}[spec.dtype]
        return {"dist": "int", "low": lo, "high": hi}
    if spec.dtype == "uint8":
        return {"dist": "int", "low": 0, "high": 255}
    if spec.dtype == "uint64":
        return {"dist": "u64_scale", "value": 1.0}
    return {"dist": "normal", "scale": 1.0}


def _floats(raw: np.ndarray, fill: dict[str, Any], cols: int | None, dtype: str) -> np.ndarray:
    """float64 values of whole rows of `cols` elements (None: a scalar) from their raw words."""
    dist = fill.get("dist", "normal")
    scale = float(fill.get("scale", 1.0))
    # each formula's steps in place on the fresh array it starts from (same values, fewer
    # page faults): a * b + c written as x = a; x *= b; x += c
    if dist == "normal":
        x = normalish(raw)
        x *= scale
    elif dist == "uniform":
        x = _symmetric(raw, scale)
    elif dist == "negative":  # -(u * scale): rounding to nearest even is symmetric
        x = uniform01(raw, -scale)
    elif dist == "positive":
        x = uniform01(raw, scale)
    elif dist == "const_rows":
        # every row (last axis) constant: the softmax of a constant row is uniform
        x = normalish(raw)
        if cols:
            x = np.broadcast_to(x.reshape(-1, cols)[:, :1], (x.size // cols, cols))
        x = x.reshape(-1) * scale
    elif dist == "range":
        # uniform in [low, high]; `_contiguous` puts both ends in: a dump's Min and Max
        lo, hi = float(fill["low"]), float(fill["high"])
        x = uniform01(raw)
        x *= hi - lo
        x += lo
    elif dist == "large":
        magnitude = min(scale, FINFO_MAX[dtype] * float(fill.get("fraction", 0.5)))
        sign = fill.get("sign")
        if sign is None:
            x = _symmetric(raw, magnitude)
        else:
            # one sign for the whole tensor, magnitudes in [1/2, 1) x magnitude (52 exact bits)
            x = ((raw >> np.uint64(12)) + np.uint64(1 << 52)).astype(np.float64)
            x *= 2.0 ** -53
            x *= magnitude if float(sign) > 0 else -magnitude
    elif dist == "outlier":
        x = normalish(raw)
        if cols:
            x = x.reshape(-1, cols)
            pos = (raw.reshape(-1, cols)[:, :1] >> np.uint64(40)) % np.uint64(cols)
            np.put_along_axis(x, pos.astype(np.int64), float(fill.get("outlier", 100.0)), -1)
        x = x.reshape(-1) * scale
    else:
        raise ValueError(f"unknown float fill dist {dist!r}")
    if ROUND in fill:
        x = _rounded(x, float(fill[ROUND]))
    return x


def _rounded(x: np.ndarray, step: float) -> np.ndarray:
    """x rounded to the nearest multiple of `step` (half to even): exact for a power-of-two
    step (a division and a product by it move only the exponent; rint is exact IEEE)."""
    x = np.asarray(x, np.float64) / step
    np.rint(x, out=x)
    x *= step
    return x


def _symmetric(raw: np.ndarray, scale: float) -> np.ndarray:
    """(u * 2 - 1) * scale for u = uniform01(raw): u * 2 - 1 is the exact (2k - 2^53) * 2^-53
    for k = raw >> 11, so one rounding, in integers first."""
    j = (raw >> np.uint64(10)).view(np.int64)  # 2k + its low bit
    j &= ~1
    j -= 1 << 53
    return _times(j.astype(np.float64), 2.0 ** -53, scale)


def materialise(spec: TensorSpec, fill: dict[str, Any] | None, seed: int, name: str,
                index: int = 0) -> np.ndarray:
    """The array for one tensor argument, deterministic in (spec, fill, seed, name, index).

    A strided spec is a view into a fresh buffer holding the contiguous tensor's
    values at the view's positions and poison (NaN, or the dtype's minimum)
    everywhere else, so a reader that ignores the strides reads poison.
    """
    if spec.strides is None:
        return _contiguous(spec, fill, seed, name, index)
    values = _contiguous(spec.contiguous(), fill, seed, name, index)
    buffer = np.full(spec.storage_numel, _poison(values.dtype), values.dtype)
    item = values.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(
        buffer[spec.offset:], values.shape, tuple(int(x) * item for x in spec.strides))
    view[...] = values
    return view


def _poison(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return True
    if dtype.kind in "iu" or dtype == NUMPY_DTYPES["int4"]:
        return ml_dtypes.iinfo(dtype).min
    return np.nan


def materialise_blocks(spec: TensorSpec, fill: dict[str, Any] | None, seed: int, name: str,
                       blocks: np.ndarray) -> np.ndarray:
    """A lazy paged cache: `blocks` (axis 0) hold data, each from its own stream; the rest
    are zero pages never written, so host memory follows the referenced blocks
    (`lazy_blocks` names them, for a runner that copies the cache to a device)."""
    shape = tuple(int(d) for d in spec.shape)
    out = _zero_pages(shape, numpy_dtype(spec.dtype))
    one = TensorSpec(spec.shape[1:], spec.dtype)
    for b in blocks:
        out[int(b)] = _contiguous(one, fill, seed, name, 0, block=int(b))
    pages = _pages_of(out)
    if pages is not None:
        pages.blocks = np.unique(np.asarray(blocks, np.int64))
        pages.shape = shape
    return out


class _Pages(mmap.mmap):
    """Anonymous zero pages behind a lazy cache; `blocks`: the blocks (axis 0) written."""

    blocks: np.ndarray | None = None
    shape: tuple[int, ...] | None = None


def _zero_pages(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Zeros in an anonymous mapping without transparent huge pages: writing one block
    commits 4 KiB pages, not a 2 MiB huge page per block touched."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype)
    buf = _Pages(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buf.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buf, dtype).reshape(shape)


def _pages_of(a: np.ndarray) -> _Pages | None:
    base: Any = a
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base if isinstance(base, _Pages) else None


def lazy_blocks(a: Any) -> np.ndarray | None:
    """The blocks (axis 0) that hold data when `a` is a whole lazy paged cache as
    `materialise_blocks` returned it (every other block is zeros, never written), else None.

    A runner that moves the cache to a device copies these blocks only and zeros the rest
    there, instead of reading the whole (possibly far, many-GiB) cache on the host.
    """
    if not isinstance(a, np.ndarray):
        return None
    pages = _pages_of(a)
    if pages is None or pages.blocks is None or a.shape != pages.shape \
            or not a.flags.c_contiguous or a.nbytes != len(pages):
        return None
    return pages.blocks


def _contiguous(spec: TensorSpec, fill: dict[str, Any] | None, seed: int, name: str,
                index: int, block: int | None = None) -> np.ndarray:
    """The tensor generated chunk by chunk from its stream (`CHUNK`); dists that read no
    raw words (`RAWLESS_DISTS`) draw none."""
    if spec.dtype in FOREIGN_DTYPES:
        np_dtype, known = FOREIGN_DTYPES[spec.dtype]
        values = _contiguous(TensorSpec(spec.shape, known), fill, seed, name, index, block)
        return narrow(values, np_dtype)
    fill = fill or default_fill(name, spec)
    shape = tuple(int(d) for d in spec.shape)
    n = math.prod(shape)
    dist = fill.get("dist")
    np_dtype = NUMPY_DTYPES[spec.dtype]
    if dist not in MASK_DISTS and dist not in INT_DISTS:
        if spec.dtype not in ("float16", "bfloat16", "float32"):
            raise ValueError(f"{name}: float fill {dist!r} for dtype {spec.dtype}")
        if dist not in (None, *FLOAT_DISTS):
            raise ValueError(f"unknown float fill dist {dist!r}")
    if dist in RAWLESS_DISTS:
        return _rawless(fill, shape, np_dtype)
    values = _chunk_values(fill, spec.dtype, n)
    out = np.empty(n, np_dtype)
    cols = shape[-1] if shape else None
    step = max(1, CHUNK // cols) * cols if cols else CHUNK
    bits = _stream(seed, name, index, block)
    for start in range(0, n, step):
        raw = np.asarray(bits.random_raw(min(step, n - start)), dtype=np.uint64)
        out[start:start + raw.size] = narrow(values(raw, cols), np_dtype)
    if dist == "range" and n:
        out[[0, -1]] = narrow(np.array([float(fill["low"]), float(fill["high"])]), np_dtype)
    return out.reshape(shape)


def _rawless(fill: dict[str, Any], shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """The tensor of a dist in `RAWLESS_DISTS`."""
    dist = fill["dist"]
    if dist == "u64_scale":  # the vendor's uint64 encoding; another dtype holds the value
        value = float(fill.get("value", 1.0))
        return u64_scales(value, shape) if np_dtype == np.uint64 \
            else np.full(shape, narrow(value, np_dtype))
    if dist == "const":
        value = float(fill.get("value", float(fill.get("scale", 1.0))))
        return np.full(shape, narrow(value, np_dtype))
    if dist == "triu":  # column - row >= k: one comparison (np.triu makes four passes)
        rows, cols = shape[-2:]
        tri = np.less_equal.outer(np.arange(rows) + int(fill.get("k", 1)), np.arange(cols))
        # a bool's byte is 0 or 1, as an int8/uint8 is
        tri = tri.view(np_dtype) if np_dtype in (np.int8, np.uint8) else tri.astype(np_dtype)
        return np.broadcast_to(tri, shape).copy()
    return np.full(shape, dist == "ones").astype(np_dtype)


def _chunk_values(fill: dict[str, Any], dtype: str, n: int
                  ) -> Callable[[np.ndarray, int | None], np.ndarray]:
    """The function from one chunk's raw words (whole rows of `cols`) to its values, in a
    dtype whose `narrow` to `dtype` gives the tensor's bits."""
    dist = fill.get("dist")
    if dist == "bernoulli":
        p = float(fill.get("p", 0.2))
        return lambda raw, cols: _below(raw, p)
    if dist == "nearly_full":
        return _nearly_full
    if dist == "int":
        lo, hi = int(fill.get("low", -128)), int(fill.get("high", 127))
        span = hi - lo + 1
        if dtype in ("int8", "uint8") and span & (span - 1) == 0 and span <= 256:
            return lambda raw, cols: _bytes(raw, lo, span)
        return lambda raw, cols: _ints(raw, lo, span)
    if dist in (None, "normal") and n >= NORMAL_TABLE_MIN and ROUND not in fill:
        table = _normal_table(float(fill.get("scale", 1.0)), NUMPY_DTYPES[dtype])
        return lambda raw, cols: np.take(table, irwin_hall_sums(raw))
    return lambda raw, cols: _floats(raw, fill, cols, dtype)


def _nearly_full(raw: np.ndarray, cols: int | None) -> np.ndarray:
    """Every row masked except one random column: the edge of a fully masked row."""
    bits = np.ones(raw.size, dtype=bool)
    if cols:
        keep = (raw.reshape(-1, cols)[:, :1] >> np.uint64(40)) % np.uint64(cols)
        np.put_along_axis(bits.reshape(-1, cols), keep.astype(np.int64), False, -1)
    return bits


def _bytes(raw: np.ndarray, lo: int, span: int) -> np.ndarray:
    """`_ints` for a power-of-two span of at most 256 into a byte dtype, in bytes: the low
    byte of each word masked, plus lo modulo 256, is the two's complement byte of the same
    integer (as uint8; its int8 view for int8)."""
    b = raw.astype(np.uint8)  # the low byte
    b &= np.uint8(span - 1)
    b += np.uint8(lo & 0xFF)
    return b if lo >= 0 else b.view(np.int8)


def _ints(raw: np.ndarray, lo: int, span: int) -> np.ndarray:
    """Integers in [lo, lo + span): a power-of-two span takes the low bits (the same numbers
    as %, without a division)."""
    ints = (raw & np.uint64(span - 1) if span & (span - 1) == 0
            else raw % np.uint64(span)).astype(np.int64)
    ints += lo
    return ints
