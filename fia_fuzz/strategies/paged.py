"""Paged KV caches: block sizes, block tables and the three cache layouts [V4 §PagedAttention].

A table row holds the physical blocks of one batch; the blocks a batch needs
come first, the rest of the row is unused (-1 or stale ids, never read).
Physical blocks are a random permutation of the pool, with spare blocks
nobody references, so "token s of batch b lives in block table[b][s // bs]"
is exercised away from the identity mapping (fia-semantics.md §2).
"""

from __future__ import annotations

import random

from fia_fuzz.op.geometry import blocks_needed, cache_shape
from fia_fuzz.strategies.draft import Draft, far_profile, spec
from fia_fuzz.strategies.sizes import table_width

#: Caches read without a whole-cache layout change, so a lazy one stays cheap everywhere
#: (an NZ cache is re-tiled whole by torch runners).
LAZY_CACHES = ("BnBsH", "BnNBsD")
#: Element offsets the referenced blocks of a far cache start past.
REACH = {"2^24": 1 << 24, "2^31": 1 << 31, "2^32": 1 << 32}
#: Budget multiple the largest block size may use (the edge where kernels break).
EDGE_SLACK = 4
#: Unused columns a table row may end with (a mask or pse spans them too).
MAX_UNUSED = 2


def reach(dr: Draft) -> None:
    """Where the referenced blocks of the cache this draw will page sit, picked before any
    size is drawn: a far draw (past 2^24, 2^31 or 2^32 elements) then takes the far budget, so
    its referenced work, and the host memory of the case, stay bounded (draft.FAR_BUDGET)."""
    ch = dr.ch
    far = ch.pins.get("numel_class")
    # the blocks below a far cache's referenced ones are spares: a table_spare=False
    # filter keeps the cache near
    near = ch.pins.get("table_spare") is False
    if far in REACH and ch.pins.get("cache_reach", far) != far:
        # a numel_class filter's far cache beside another reach: no batch references a
        # block of it (draft.empty_batches), so its reach reads "near"
        dr.reach = far
    else:
        dr.reach = ch.pick("cache_reach", (far,) if far in REACH else ("near",) if near
                           else dr.prof.cache_reach)
    if dr.reach != "near":
        dr.prof = far_profile(dr.prof)


def block_sizes(dr: Draft, int8_kv: bool) -> tuple[int, ...]:
    """Legal block sizes, simplest first: decode 16/32-aligned <= 512, prefill 128..512 by 128."""
    if not dr.decode:
        return (128, 256, 512)
    small = (32, 64, 96) if int8_kv else (16, 32, 48, 64)
    return (128, *small, 256, 512)


def wanted(dr: Draft) -> bool:
    """True when a filter needs paged KV (a cache layout, block edge or table feature)."""
    pins = dr.ch.pins
    return pins.get("cache", "none") != "none" or pins.get("block_edge", "none") != "none" \
        or pins.get("cache_reach", "near") != "near" or pins.get("numel_class") in REACH \
        or pins.get("table_width", "none") != "none" \
        or any(pins.get(k) for k in ("table_unused", "table_spare", "table_shuffled",
                                     "table_oversized"))


def block_size(dr: Draft, sizes: tuple[int, ...]) -> int:
    """A block size (simplest first) whose blocks, one per batch plus spares, fit the budget.

    A block_edge filter wins over the budget: "max" is 512 and "min" the
    smallest legal size even when that overshoots it. The largest size may
    use EDGE_SLACK times the element budget, so unfiltered draws reach it too.
    """
    if "block_size" in dr.ch.pins:  # a workload filter's (op/features.py WORKLOAD_PINS)
        return int(dr.ch.pick("block_size", sizes))
    edge = dr.ch.pins.get("block_edge")
    if edge == "max":
        return 512
    if edge == "min":
        return min(sizes)
    per_block = dr.kv_n * (dr.d + dr.dv)
    top = max(sizes)
    ok = tuple(x for x in sizes
               if x * per_block * (dr.b + 3) <= dr.prof.max_elements * (EDGE_SLACK if x == top
                                                                         else 1)
               and dr.b * dr.n * max(1, dr.s1) * x <= dr.prof.max_scores)
    if edge == "mid":
        ok = tuple(x for x in ok or sizes if x not in (512, min(sizes)))
    return dr.ch.one(ok or (min(sizes),))


def edge_sizes(dr: Draft, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The block sizes of `sizes` (repeats kept) on a block_edge filter's edge, for a path
    that picks among fixed sizes; all of them (none fits: the filter dies at the end)
    without such a filter."""
    edge = dr.ch.pins.get("block_edge", "none")
    if edge == "none":
        return sizes
    smallest = min(block_sizes(dr, dr.kv_dtype == "int8"))
    on = tuple(x for x in sizes if edge == ("max" if x == 512 else "min" if x == smallest
                                            else "mid"))
    return on or sizes


def table(dr: Draft, block_size: int, kv_lens: list[int], reach: str = "near"
          ) -> tuple[list[list[int]], int]:
    """(block_table rows, block_num) for per-batch KV lengths.

    Width is the largest need, a column or two more, or at a kernel edge
    (sizes.table_width, as wide as the score budget allows); the pool has 0-3 spare
    blocks; one drawn integer seeds the permutation (0 keeps the identity, so
    shrinking goes to the contiguous table). A far `reach` puts every
    referenced block past 2^24, 2^31 or 2^32 key-cache elements, below them a pool of
    blocks nobody references (zero pages of a lazy cache).
    """
    ch = dr.ch
    pins = ch.pins
    need = [blocks_needed(n, block_size) for n in kv_lens]
    most = max(1, max(need))
    size = str(pins.get("block_table_size", ""))    # a form: exact or wider than the need
    oversized = False if size.endswith("exact") or pins.get("table_oversized") is False else \
        True if pins.get("table_unused") or pins.get("table_oversized") or \
        size.endswith("wider") else None
    # the masks and pse span width x block_size keys: the score budget and the profile's
    # longest KV bound the width
    cols = min(dr.prof.max_scores // max(1, dr.b * dr.n * max(1, dr.s1) * block_size),
               dr.prof.long_kv // block_size)
    width = table_width(ch, most, max(most + MAX_UNUSED, cols), oversized)
    room = dr.prof.max_elements // max(1, block_size * dr.kv_n * (dr.d + dr.dv))
    spare_lo = 1 if pins.get("table_spare") else 0
    # a table_spare or table_shuffled filter of False bounds its draw at 0 (same decision)
    spare_hi = 0 if pins.get("table_spare") is False else min(3, room - sum(need))
    spare = ch.int(spare_lo, max(spare_lo, spare_hi))
    first = 0 if reach == "near" else -(-REACH[reach] // (block_size * dr.kv_n * dr.d))
    block_num = first + max(1, sum(need)) + spare
    ids = list(range(first, block_num))
    shuffle = ch.int(1 if pins.get("table_shuffled") else 0,
                     0 if pins.get("table_shuffled") is False else 1 << 16)
    if shuffle:
        random.Random(shuffle).shuffle(ids)
        if pins.get("table_shuffled") and ids[: sum(need)] == sorted(ids[: sum(need)]):
            ids.reverse()
    stale = ch.one((-1, 0, block_num - 1))
    rows, at = [], 0
    for k in need:
        rows.append(ids[at:at + k] + [stale] * (width - k))
        at += k
    return rows, block_num


def page(dr: Draft, caches: tuple[str, ...], block_size: int, kv_lens: list[int],
         names: tuple[tuple[str, int], ...] = (("key", 0), ("value", 0))) -> int:
    """Put key/value (and key_rope) into a paged cache; returns block_num.

    `names` pairs each cached tensor with its head dim (0 = the draft's D/Dv).
    Sets block_table, block_size and S2 = table width * block size. A far draw (`reach`
    picked before) pages into a cache that stays lazy everywhere (LAZY_CACHES).
    """
    far = dr.reach != "near"
    cache = dr.ch.pick("cache", tuple(c for c in caches if c in LAZY_CACHES) if far
                       else caches)
    dr.lazy = far
    rows, block_num = table(dr, block_size, kv_lens, dr.reach)
    for name, dim in names:
        d = dim or (dr.dv if name == "value" else dr.d)
        dr.set(name, spec(cache_shape(cache, block_num, block_size, dr.kv_n, d, dr.kv_dtype),
                          dr.kv_dtype))
    dr.set("block_table", rows)
    dr.set("block_size", block_size)
    dr.s2 = len(rows[0]) * block_size
    dr.paged = True
    return block_num
