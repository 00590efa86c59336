"""The op's geometry, written once: layouts, packed layouts, paged caches, per-batch windows.

Every other package reads shapes and positions from here [V4 inputLayout,
PagedAttention; fia-semantics.md §2-3]; the only deliberate second copy is
`runners/composition`, the independent implementation that cross-checks the
golden (tests/test_layering.py keeps it from importing this module).
Array functions only permute, reshape, slice or fill, so data moved through
them keeps its bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # typing only: call.py itself reads its layouts from here
    from fia_fuzz.op.call import CallView

#: The "no band" default of pre_tokens/next_tokens (INT32_MAX) [V2 算子原型].
NO_BAND = 2147483647

#: input_layout attribute -> (query/kv layout, output layout) [V4 inputLayout].
LAYOUTS: dict[str, tuple[str, str]] = {
    "BSH": ("BSH", "BSH"),
    "BSND": ("BSND", "BSND"),
    "BNSD": ("BNSD", "BNSD"),
    "TND": ("TND", "TND"),
    "NTD": ("NTD", "NTD"),
    "BNSD_BSND": ("BNSD", "BSND"),
    "TND_NTD": ("TND", "NTD"),
    "NTD_TND": ("NTD", "TND"),
    "BSH_NBSD": ("BSH", "NBSD"),
    "BSND_NBSD": ("BSND", "NBSD"),
    "BNSD_NBSD": ("BNSD", "NBSD"),
    "BSH_BNSD": ("BSH", "BNSD"),
    "BSND_BNSD": ("BSND", "BNSD"),
}
#: layouts only a device profile knows (device-a2.md row 4); the docs' rule rejects them
DEVICE_ONLY_LAYOUTS = ("BSH_BNSD", "BSND_BNSD")
#: Layouts that pack variable-length batches back to back (T = sum of lengths).
PACKED_LAYOUTS = ("TND", "NTD")
#: Batched input layouts (a B axis, every batch padded to the same S).
DENSE_LAYOUTS = ("BSH", "BSND", "BNSD")
#: Axis of S (T for packed layouts) in a tensor of each layout.
SEQ_AXIS = {"BNSD": 2, "BSND": 1, "BSH": 1, "TND": 0, "NTD": 1, "NBSD": 2}

#: Paged cache forms [V4 PagedAttention; 5-D NZ for MLA and GQA antiquant].
CACHE_FORMS = ("BnBsH", "BnNBsD", "NZ")
#: A paged cache's form from its rank.
CACHE_FORM_OF_RANK = {3: "BnBsH", 4: "BnNBsD", 5: "NZ"}
#: Block (block_size) axis of a paged cache by rank.
BLOCK_AXIS = {3: 1, 4: 2, 5: 3}


# ---- dense and packed layouts ----------------------------------------------
def dense_shape(layout: str, b: int, n: int, s: int, d: int) -> tuple[int, ...]:
    """Shape of a (B, N, S, D) tensor in a BSH/BSND/BNSD/NBSD layout."""
    return {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d),
            "NBSD": (n, b, s, d)}[layout]


def packed_shape(layout: str, t: int, n: int, d: int) -> tuple[int, ...]:
    """Shape of a packed TND/NTD tensor of T tokens."""
    return (t, n, d) if layout == "TND" else (n, t, d)


def dims(shape: Sequence[int], layout: str, heads: int, pack: int = 1) -> dict[str, int]:
    """B, S (packed: T), N, D (and H for BSH) read from a shape in `layout`.

    `pack` multiplies the last axis (8 int4 values per int32). ValueError when
    the shape does not fit the layout.
    """
    shape = tuple(int(d) for d in shape)
    if len(shape) != len(layout):
        raise ValueError(f"shape {shape} does not fit layout {layout}")
    if layout == "BSH":
        b, s, h = shape
        h *= pack
        if heads <= 0 or h % heads:
            raise ValueError(f"H={h} is not a multiple of {heads} heads")
        return {"B": b, "S": s, "N": heads, "D": h // heads, "H": h}
    if layout == "BSND":
        b, s, n, d = shape
        return {"B": b, "S": s, "N": n, "D": d * pack}
    if layout == "BNSD":
        b, n, s, d = shape
        return {"B": b, "S": s, "N": n, "D": d * pack}
    if layout == "TND":
        t, n, d = shape
        return {"T": t, "S": t, "N": n, "D": d * pack}
    if layout == "NTD":
        n, t, d = shape
        return {"T": t, "S": t, "N": n, "D": d * pack}
    raise ValueError(f"unknown layout {layout}")


#: Axis order taking a 4-D layout to BNSD and back (each is its own inverse).
_TO_BNSD = {"BNSD": (0, 1, 2, 3), "BSND": (0, 2, 1, 3), "NBSD": (1, 0, 2, 3)}


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """A BSH/BSND/BNSD/NBSD array as (B, N, S, D) (a view, no copy)."""
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    if layout in _TO_BNSD:
        return x.transpose(_TO_BNSD[layout])
    raise ValueError(f"to_bnsd: {layout} is not a dense layout")


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """A (B, N, S, D) array in a BSH/BSND/BNSD/NBSD layout (a view where one exists)."""
    if layout == "BSH":
        b, n, s, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    if layout in _TO_BNSD:
        return x.transpose(_TO_BNSD[layout])
    raise ValueError(f"from_bnsd: {layout} is not a dense layout")


def relayout(x: np.ndarray, src: str, dst: str, heads: int) -> np.ndarray:
    """A dense array moved from layout `src` to `dst`, contiguous."""
    return np.ascontiguousarray(from_bnsd(to_bnsd(x, src, heads), dst))


def cumulative(lengths: Sequence[int]) -> list[int]:
    """Per-batch lengths -> the cumulative end offsets packed layouts take [SEM §2]."""
    return [int(x) for x in np.cumsum(np.asarray(lengths, dtype=np.int64))]


def lengths_of(ends: Sequence[int]) -> list[int]:
    """Cumulative end offsets -> per-batch lengths (the inverse of `cumulative`)."""
    out, prev = [], 0
    for e in ends:
        out.append(e - prev)
        prev = e
    return out


def segments(ends: Sequence[int]) -> list[tuple[int, int]]:
    """Cumulative end offsets -> (start, stop) token ranges."""
    out, prev = [], 0
    for e in ends:
        out.append((prev, int(e)))
        prev = int(e)
    return out


def packed_rows(lengths: Sequence[int] | np.ndarray, seq: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(token index (B, S), valid (B, S)) of each batch's rows in a packed tensor.

    Batch b occupies tokens [start_b, start_b + len_b) with start the running
    sum of the lengths [V4 §TND]; S is `seq` (default the longest length).
    Invalid slots point at token 0 and must be masked by `valid`.
    """
    lens = np.asarray(lengths, np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    s = seq if seq is not None else int(lens.max()) if lens.size else 0
    pos = np.arange(s, dtype=np.int64)
    valid = pos[None, :] < lens[:, None]
    return np.where(valid, starts[:, None] + pos[None, :], 0), valid


def unpack(x: np.ndarray, layout: str, lengths: Sequence[int] | np.ndarray,
           seq: int | None = None, fill: float = 0.0) -> np.ndarray:
    """A TND/NTD array as right-padded (B, N, seq, D); rows past a batch's length = fill."""
    tnd = x if layout == "TND" else x.transpose(1, 0, 2)
    idx, valid = packed_rows(lengths, seq)
    if tnd.shape[0] == 0:
        out = np.full(idx.shape + tnd.shape[1:], fill, tnd.dtype)
    else:
        out = tnd[idx]
        out[~valid] = fill
    return out.transpose(0, 2, 1, 3)


def pack(x: np.ndarray, layout: str, lengths: Sequence[int] | np.ndarray,
         total: int | None = None, fill: float = 0.0) -> np.ndarray:
    """Each batch's first lengths[b] rows of a (B, N, S, D) array, packed as TND or NTD.

    `total` tokens (default the sum of lengths); tokens past the last batch get `fill`.
    """
    idx, valid = packed_rows(lengths)
    t = int(np.sum(lengths)) if total is None else total
    out = np.full((t, x.shape[1], x.shape[3]), fill, x.dtype)
    out[idx[valid]] = x.transpose(0, 2, 1, 3)[:, :idx.shape[1]][valid]
    return out if layout == "TND" else out.transpose(1, 0, 2)


# ---- paged caches ------------------------------------------------------------
def nz_c0(dtype: str) -> int:
    """Innermost NZ fractal width: 32 int8 values or 16 of a 16-bit type [V4 PagedAttention NZ]."""
    return 32 if dtype == "int8" else 16


def cache_shape(form: str, blocks: int, block_size: int, kv_n: int, d: int, dtype: str
                ) -> tuple[int, ...]:
    """(blocks, block_size, KV_N*D), (blocks, KV_N, block_size, D) or NZ (.., D/c0, bs, c0)."""
    if form == "BnBsH":
        return (blocks, block_size, kv_n * d)
    if form == "BnNBsD":
        return (blocks, kv_n, block_size, d)
    c0 = nz_c0(dtype)
    return (blocks, kv_n, d // c0, block_size, c0)


def cache_dims(shape: Sequence[int], kv_n: int) -> dict[str, int]:
    """blocks, bs (block size), N, D, H (and d0 for NZ) of a paged cache shape.

    The form follows the rank (CACHE_FORM_OF_RANK); ValueError when it fits none.
    """
    shape = tuple(int(d) for d in shape)
    if len(shape) == 3:
        bn, bs, h = shape
        if kv_n <= 0 or h % kv_n:
            raise ValueError(f"H={h} is not a multiple of {kv_n} heads")
        return {"blocks": bn, "bs": bs, "N": kv_n, "D": h // kv_n, "H": h}
    if len(shape) == 4:
        bn, n, bs, d = shape
        return {"blocks": bn, "bs": bs, "N": n, "D": d, "H": n * d}
    if len(shape) == 5:
        bn, n, d1, bs, d0 = shape
        return {"blocks": bn, "bs": bs, "N": n, "D": d1 * d0, "H": n * d1 * d0, "d0": d0}
    raise ValueError(f"a paged cache has rank 3, 4 or 5, not {len(shape)}")


def cache_tokens(cache: np.ndarray, kv_heads: int) -> np.ndarray:
    """A paged cache as (blocks, block_size, KV_N, D), whatever its form."""
    if cache.ndim == 3:
        nb, bs, h = cache.shape
        return cache.reshape(nb, bs, kv_heads, h // kv_heads)
    if cache.ndim == 4:
        return cache.transpose(0, 2, 1, 3)
    if cache.ndim == 5:
        nb, n, d1, bs, c = cache.shape
        return cache.transpose(0, 3, 1, 2, 4).reshape(nb, bs, n, d1 * c)
    raise ValueError(f"paged cache of rank {cache.ndim}; expected 3, 4 or 5")


def gather(blocks: np.ndarray, block_table: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per-batch tokens (B, max(lengths), ...) from per-block data (blocks, block_size, ...).

    Token s of batch b lives in block block_table[b][s // block_size] at
    offset s % block_size [V4 PagedAttention]. Works for any per-token data
    laid out by physical block (the KV itself, or per-token quantisation
    parameters). Positions past a batch's length are 0 and never touch the
    table entries behind them.
    """
    bs = blocks.shape[1]
    b = len(lengths)
    s = int(lengths.max()) if b else 0
    pos = np.arange(s, dtype=np.int64)
    valid = pos[None, :] < lengths[:, None]
    col = np.minimum(pos // bs, max(block_table.shape[1] - 1, 0))
    table = np.asarray(block_table, np.int64)
    phys = np.where(valid, table[:, col] if s else np.zeros((b, 0), np.int64), 0)
    out = blocks[phys, pos[None, :] % bs] if s else np.zeros((b, 0) + blocks.shape[2:],
                                                                blocks.dtype)
    out[~valid] = 0
    return out


def paged_bnsd(cache: np.ndarray, kv_heads: int, block_table: np.ndarray,
               lengths: np.ndarray) -> np.ndarray:
    """A paged cache as right-padded (B, KV_N, max(lengths), D).

    Only the referenced blocks are copied out of the cache (before any layout
    change), so a huge, mostly untouched (lazy) cache costs what its used
    blocks cost.
    """
    block_size = cache_tokens(cache[:0], kv_heads).shape[1]
    used, local = compact_table(block_table, lengths, block_size)
    return gather(cache_tokens(cache[used], kv_heads), local, lengths).transpose(0, 2, 1, 3)


def blocks_needed(length: int, block_size: int) -> int:
    """Table entries a batch of `length` KV tokens reads: ceil(length / block_size) [V4]."""
    return -(-max(length, 0) // block_size)


def blocks_read(lengths: Sequence[int], block_size: int) -> list[int]:
    """Table entries each batch reads (`blocks_needed` per batch; none without a block size).

    Only these blocks of a paged cache are ever read, so lazy caches hold data
    in exactly them (values.materialise_blocks) and the golden gathers only them.
    """
    return [blocks_needed(int(n), block_size) if block_size else 0 for n in lengths]


def referenced_blocks(block_table: Sequence[Sequence[int]] | np.ndarray,
                      lengths: Sequence[int], block_size: int) -> np.ndarray:
    """Sorted distinct physical block ids the call reads (int64)."""
    rows = [np.asarray(row[:k], np.int64)
            for row, k in zip(block_table, blocks_read(lengths, block_size), strict=False)]
    return np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64)


def compact_table(block_table: np.ndarray, lengths: Sequence[int], block_size: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(referenced block ids, the table rewritten to index into them; unread entries 0)."""
    used = referenced_blocks(block_table, lengths, block_size)
    table = np.asarray(block_table, np.int64)
    local = np.zeros(table.shape, np.int64)
    for b, k in enumerate(blocks_read(lengths, block_size)):
        local[b, :k] = np.searchsorted(used, table[b, :k])
    return used, local


def page(x: np.ndarray, lengths: Sequence[int], table: np.ndarray, block_size: int,
         filler: np.ndarray) -> np.ndarray:
    """BNSD KV (B, KV_N, S, D) written into a copy of the paged cache `filler`.

    The inverse of `paged_bnsd`: each batch's first lengths[b] tokens go to
    table[b][s // block_size] at offset s % block_size; the form follows
    filler's rank, everything else keeps filler's values.
    """
    _, kv_n, _, d = x.shape
    cache = filler.copy()
    for b, n in enumerate(lengths):
        for j in range(blocks_needed(n, block_size)):
            lo, hi = j * block_size, min((j + 1) * block_size, n)
            blk = int(table[b, j])
            rows = x[b, :, lo:hi, :]  # (KV_N, rows, D)
            if cache.ndim == 3:
                cache[blk, :hi - lo, :] = rows.transpose(1, 0, 2).reshape(hi - lo, kv_n * d)
            elif cache.ndim == 4:
                cache[blk, :, :hi - lo, :] = rows
            else:
                c0 = cache.shape[-1]
                cache[blk, :, :, :hi - lo, :] = rows.reshape(kv_n, hi - lo, d // c0, c0
                                                             ).transpose(0, 2, 1, 3)
    return cache


# ---- per-batch valid windows -------------------------------------------------
def per_batch(values: Sequence[int] | None, b: int, full: int) -> np.ndarray:
    """Lengths or pads as (B,): absent -> full, one value -> broadcast, else the first B."""
    if values is None:
        return np.full(b, full, np.int64)
    if len(values) == 1:
        return np.full(b, values[0], np.int64)
    return np.asarray(values[:b], np.int64)


def left_window(view: CallView, pad_name: str, len_name: str, s: int, lengths: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, offsets) of a left-padded window [SEM §3, IFA kv左padding].

    The window is [S - pad - act, S - pad); negative pads count as 0. Without
    the matching actual lengths the padding is ignored (right padding). A
    window starting before 0 gives zeros (IFA: "起点或终点小于0时, 返回数据结果为全0"),
    modelled per batch as an empty window.
    """
    pads = view.values.get(pad_name)
    if pads is None or view.values.get(len_name) is None:
        return lengths, np.zeros_like(lengths)
    pad = np.maximum(per_batch(pads, len(lengths), 0), 0)
    start = s - pad - lengths
    return np.where(start < 0, 0, lengths), np.maximum(start, 0)


def query_window(view: CallView) -> tuple[np.ndarray, np.ndarray]:
    """(q_len, q_off) per batch; decode ignores actual_seq_lengths [SEM §3]."""
    if view.packed:
        lens = np.asarray(view.packed_lengths("actual_seq_lengths"), np.int64)
        return lens, np.zeros_like(lens)
    b, s1 = view.B, view.S1
    if view.decode:
        return np.full(b, min(s1, 1), np.int64), np.zeros(b, np.int64)
    lens = np.minimum(per_batch(view.values.get("actual_seq_lengths"), b, s1), s1)
    return left_window(view, "query_padding_size", "actual_seq_lengths", s1, lens)


def kv_window(view: CallView) -> tuple[np.ndarray, np.ndarray]:
    """(kv_len, kv_off) per batch, before any shared prefix [SEM §2, §3].

    Paged lengths are per batch, packed ones cumulative, a tensor list's
    default is each tensor's own S; contiguous dense KV may be left-padded.
    """
    b = view.B
    given = view.values.get("actual_seq_lengths_kv")
    if view.paged:
        lens = per_batch(given, b, 0)
    elif view.is_kv_list:
        sizes = np.asarray([view.kv_seq(i) for i in range(b)], np.int64)
        lens = sizes if given is None else np.minimum(per_batch(given, b, 0), sizes)
    elif view.packed:
        lens = np.asarray(view.packed_lengths("actual_seq_lengths_kv"), np.int64)
    else:
        s2 = view.S2
        lens = np.minimum(per_batch(given, b, s2), s2)
        return left_window(view, "kv_padding_size", "actual_seq_lengths_kv", s2, lens)
    return lens, np.zeros_like(lens)


def user_mask(mask: Any, batch: int, decode: bool) -> np.ndarray:
    """atten_mask as bool (B or 1, rows, cols), read by absolute position [SEM §4 mask shapes].

    (S1,S2) and (1|B,S1,S2) and (1|B,1,S1,S2); decode (B,S2), (B,1,S2), (B,1,1,S2).
    """
    m = np.asarray(mask).astype(bool, copy=False)
    if m.ndim == 4:
        return m[:, 0]
    if m.ndim == 3:
        return m
    if decode and m.shape[0] == batch:
        return m[:, None, :]
    return m[None]


def band_window(view: CallView, call: dict[str, Any], q_len: np.ndarray, s2b: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-batch (pre, next) of the band, None when the mode has no band [V4 §Mask, SEM §4].

    q_len and s2b are each batch's valid query rows and key columns (shared
    prefix included). Column j of row i (both relative to the window) is
    excluded when j > i + next or j < i - pre; modes 3/4 anchor the band at
    the bottom right of each batch's window.
    """
    if view.decode and call.get("query_rope") is None:
        return None  # Q_S == 1 without rope ignores sparse_mode and pre/next [V4 sparseMode]
    mode = view.attr_int("sparse_mode")
    pre, nxt = view.attr_int("pre_tokens"), view.attr_int("next_tokens")
    ones = np.ones_like(q_len)
    if mode == 0:
        left_padded = any(call.get(pad) is not None and call.get(lens) is not None
                          for pad, lens in (("query_padding_size", "actual_seq_lengths"),
                                            ("kv_padding_size", "actual_seq_lengths_kv")))
        if call.get("atten_mask") is None or left_padded:
            return None
        return pre * ones, nxt * ones
    if mode == 1:
        return None
    if mode == 2:
        return NO_BAND * ones, 0 * ones
    if mode == 3:
        return NO_BAND * ones, s2b - q_len
    if mode == 4:
        return q_len - s2b + pre, s2b - q_len + nxt
    raise ValueError(f"sparse_mode={mode} has no documented meaning (rejected by the spec)")
