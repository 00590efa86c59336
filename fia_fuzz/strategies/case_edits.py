"""Consistent edits of a legal case: one quantity changed everywhere it appears.

A breaker must change exactly the quantity its rule is about; a block size
lives in the attribute, in every cache's block axis and in the PA-managed
antiquant scales, a head dim in every tensor's last axis, and so on. These
helpers return a `Change` that moves one quantity in all of those places at
once, so the case stays legal for every other rule (fia-semantics.md §2 for
the layouts and cache forms).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.spec.geometry import BLOCK_AXIS, SEQ_AXIS
from fia_fuzz.spec.params import ATTR_DEFAULTS
from fia_fuzz.strategies.mutations import Change

#: Tensors held in the paged cache form.
CACHED = ("key", "value", "key_rope")
SEP_SCALES = ("key_antiquant_scale", "value_antiquant_scale", "key_antiquant_offset",
              "value_antiquant_offset")


def layout(case: Case) -> str:
    """The input_layout attribute (the op's default when absent)."""
    return case.params.get("input_layout") or ATTR_DEFAULTS["input_layout"]


def q_layout(case: Case) -> str:
    """Layout of query (and contiguous key/value): the part before '_'."""
    return layout(case).split("_")[0]


def with_axis(t: TensorSpec, pos: int, value: int) -> TensorSpec:
    shp = list(t.shape)
    shp[pos] = value
    return TensorSpec(tuple(shp), t.dtype)


def with_dtype(t: Any, dtype: str) -> Any:
    """A tensor (or tensor list) with another dtype, shapes unchanged."""
    if isinstance(t, list):
        return [TensorSpec(x.shape, dtype) for x in t]
    return TensorSpec(t.shape, dtype)


def query_seq(case: Case, s: int) -> Change:
    """query (and query_rope) with S (packed: T) set to `s`."""
    ax = SEQ_AXIS[q_layout(case)]
    return {n: with_axis(case.params[n], ax, s) for n in ("query", "query_rope")
            if case.params.get(n) is not None}


def head_dim(t: TensorSpec, lay: str, heads: int, d: int) -> TensorSpec:
    """A query/key/value tensor of `lay` with head dim `d` (BSH: H = heads * d)."""
    return with_axis(t, -1, heads * d if lay == "BSH" else d)


def modes(case: Case) -> tuple[int, int]:
    return (int(case.params.get("key_antiquant_mode") or 0),
            int(case.params.get("value_antiquant_mode") or 0))


def _pa_scales(case: Case, blocks: int | None, bs: int) -> Change:
    """Antiquant modes 4/5 hold scales per (block, [head,] slot): follow the cache."""
    out: Change = {}
    if not any(m in (4, 5) for m in modes(case)):
        return out
    for name in SEP_SCALES:
        t = case.params.get(name)
        if t is None:
            continue
        t = with_axis(t, -1, bs)
        out[name] = with_axis(t, 0, blocks) if blocks is not None else t
    return out


def grow_blocks(case: Case, bs: int) -> Change:
    """Block size `bs` (larger than the case's): the same table, larger blocks.

    S2 (= table width * block size) grows, so only for cases without a full mask or pse.
    """
    out: Change = {"block_size": bs}
    for name in CACHED:
        t = case.params.get(name)
        if t is not None:
            out[name] = with_axis(t, BLOCK_AXIS[len(t.shape)], bs)
    return {**out, **_pa_scales(case, None, bs)}


def split_blocks(case: Case, k: int) -> Change:
    """Block size divided by `k`: every block becomes k consecutive ones, same token layout.

    Physical block x turns into blocks x*k .. x*k+k-1, so each batch still reads
    the same tokens in the same order and the table stays wide enough.
    """
    bs = int(case.params["block_size"])
    assert bs % k == 0, (bs, k)
    rows = [[x * k + j if x >= 0 else x for x in row for j in range(k)]
            for row in case.params["block_table"]]
    out: Change = {"block_size": bs // k, "block_table": rows}
    blocks = 0
    for name in CACHED:
        t = case.params.get(name)
        if t is not None:
            blocks = t.shape[0] * k
            out[name] = with_axis(with_axis(t, BLOCK_AXIS[len(t.shape)], bs // k), 0, blocks)
    return {**out, **_pa_scales(case, blocks, bs // k)}


def repage(case: Case) -> Change:
    """The fewest blocks the KV lengths need: block b..., one table row each, no spares.

    Changes S2 (= table width * block size), so only for cases without a mask or pse.
    """
    bs = int(case.params["block_size"])
    kv = case.view().act_kv
    need = [max(1, -(-max(a, 0) // bs)) for a in kv]
    width = max(need)
    rows, at = [], 0
    for k in need:
        rows.append(list(range(at, at + k)) + [-1] * (width - k))
        at += k
    out: Change = {"block_table": rows}
    for name in CACHED:
        t = case.params.get(name)
        if t is not None:
            out[name] = with_axis(t, 0, at)
    return {**out, **_pa_scales(case, at, bs)}
