"""block_table / block_size: PagedAttention, K/V in a cache of blocks [V4 §PagedAttention].

Caches are (blocks, block_size, H) BnBsH, (blocks, KV_N, block_size, D)
BnNBsD, or 5-D NZ; the table has one row per batch, at least as wide as the
longest request needs (wider is allowed). Features: the cache form, block-size
edge, where the referenced blocks sit (32-bit offset edges) and the table's
irregularities; form `block_table_size` (exact or wider). Form `block_size_form`:
block_size left out, its default 0 given explicitly without a block table [MS block_size
默认值为 0], or a block size.
"""

from __future__ import annotations

import math
from typing import Any

from fia_fuzz.op import edges
from fia_fuzz.op.geometry import CACHE_FORM_OF_RANK, CACHE_FORMS, blocks_read
from fia_fuzz.op.registry import ATTR, VALUE, Arg, Param, register
from fia_fuzz.op.shape_forms import DEFAULT_FORMS, default_form, safe_feature, table_oversized

BOOL = (False, True)


def _cache_form(case: Any) -> str:
    if case.params.get("block_table") is None:
        return "none"
    return CACHE_FORM_OF_RANK.get(getattr(case.params["key"], "ndim", 0), "other")


def _block_edge(case: Any, decode: bool | None) -> str:
    """Block size at the smallest legal value, the largest (512) or between [SEM §2]."""
    if case.params.get("block_table") is None:
        return "none"
    bs = case.attr("block_size")
    k = case.params["key"]
    smallest = 128 if not decode else 32 if getattr(k, "dtype", "") == "int8" else 16
    return "max" if bs == 512 else "min" if bs == smallest else "mid"


#: The edges a referenced block's element offset is measured against (op/edges.py
#: NUMEL_EDGES: the 32-bit offset widths and float32's exact integers), largest first
REACHES = tuple((edge, name) for edge, name in edges.NUMEL_EDGES if edge > 1 << 16)


def _cache_reach(case: Any) -> str:
    """Element offset of the furthest referenced cache block: past 2^32, 2^31, 2^24 or
    below (block id x block_size x KV_N x D against REACHES)."""
    blocks = safe_feature(case.referenced_blocks)
    if blocks is None or not len(blocks):
        return "near"
    k = case.params["key"]
    start = int(blocks[-1]) * math.prod(k.shape[1:])
    return next((name for edge, name in REACHES if start >= edge), "near")


def _table_features(case: Any) -> dict[str, bool]:
    """Which block-table irregularities a paged case carries (fia-semantics.md §2)."""
    table = case.params.get("block_table")
    if table is None:
        return {"table_unused": False, "table_spare": False, "table_shuffled": False,
                "table_oversized": False}
    k = case.params["key"]
    bs = case.attr("block_size")
    lens = case.params.get("actual_seq_lengths_kv") or [0]
    bsz = len(table)
    lens = lens * bsz if len(lens) == 1 else lens[:bsz]
    used: list[int] = []
    unused = False
    needs = blocks_read(lens, bs)
    for row, need in zip(table, needs, strict=False):
        used.extend(row[:need])
        unused = unused or len(row) > need
    block_num = k.shape[0] if hasattr(k, "shape") else 0
    return {"table_unused": unused,
            "table_oversized": table_oversized(table, lens, bs),
            "table_spare": block_num > len(set(used)),
            "table_shuffled": used != sorted(used) or any(
                b - a != 1 for a, b in zip(used, used[1:], strict=False))}


def classify(case: Any, v: Any) -> dict[str, Any]:
    table = case.params.get("block_table")
    return {"paged": v.paged, "cache": _cache_form(case),
            "block_size": case.attr("block_size") if v.paged else 0,
            "block_edge": _block_edge(case, safe_feature(lambda: v.decode)),
            "cache_reach": _cache_reach(case), **_table_features(case),
            "table_width": edges.table_width(len(table[0]) if table else None)}


BLOCK_SIZE_FORM = "block_size_form"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    table = case.params.get("block_table")
    size = default_form(case, "block_size", 0)
    if table is None:
        return {"block_table_size": "none", BLOCK_SIZE_FORM: size}
    lens = case.params.get("actual_seq_lengths_kv") or [0]
    wider = table_oversized(table, lens, case.attr("block_size"))
    return {"block_table_size": f"{branch}:{'wider' if wider else 'exact'}",
            BLOCK_SIZE_FORM: size}


def special(dr: Any) -> None:
    """block_size 0 (its default: no paging) given explicitly without a block table."""
    if "block_table" not in dr.params and "block_size" not in dr.params and dr.pick_special(
            BLOCK_SIZE_FORM, "absent", {"absent": False, "explicit_default": True}):
        dr.set("block_size", 0)


_PAGED_ONLY = {"table_width": edges.TABLE_WIDTHS[1:]}

ARG = register(Arg(
    name="paging",
    params=(Param("block_table", VALUE, alone=lambda c: [[0]] * c.b),
            Param("block_size", ATTR, 0)),
    forms={"block_table_size": ("none", "prefill:exact", "prefill:wider", "decode:exact",
                                "decode:wider"),
           BLOCK_SIZE_FORM: DEFAULT_FORMS},
    implies={"block_table_size": lambda v: {"paged": True},
             BLOCK_SIZE_FORM: lambda v: {"paged": v == "set"}},
    form_of=form_of,
    special=special,
    specials={BLOCK_SIZE_FORM: ("explicit_default",)},
    features={"paged": BOOL, "cache": ("none", *CACHE_FORMS),
              "block_edge": ("none", "mid", "min", "max"),
              "cache_reach": ("near", "2^24", "2^31", "2^32"), "table_unused": BOOL,
              "table_spare": BOOL, "table_shuffled": BOOL, "table_oversized": BOOL,
              "table_width": edges.TABLE_WIDTHS},
    classify=classify,
    scope={"dense": {"cache": ("none", "BnBsH", "BnNBsD")},
           "antiquant": {"cache": ("none", "BnBsH", "BnNBsD")},
           "full_quant": {"paged": (False,), "cache": ("none",), "table_width": ("none",),
                          "table_oversized": (False,)},
           "packed": {"cache": ("none", "BnBsH", "BnNBsD")},
           "mla": {"paged": (True,), "cache": ("BnBsH", "BnNBsD", "NZ"), **_PAGED_ONLY},
           "gqa_nz": {"cache": ("NZ",), "paged": (True,), **_PAGED_ONLY},
           "workloads": {"paged": (True,), "cache": ("BnBsH",), **_PAGED_ONLY}},
    empty={"paged": False, "cache": "none", "table_width": "none", "table_oversized": False},
    rules=("paged", "nz"),
    golden=("fia_fuzz.golden.kv",),
    runners=("fia_fuzz.runners.composition.kv",),
))
