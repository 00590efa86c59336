"""Rope: query_rope / key_rope, split off the head dim (MLA; its D = 512 rules are in mla.py)
[V4 MLA场景, V4 参数说明 queryRope/keyRope, SEM §9]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, bf

ROPE_D = 64


def rope_on(c: CallView) -> bool:
    return c.has("query_rope") and c.has("key_rope")


@rule("rope.both_or_neither", "query_rope and key_rope come together",
      src("V4", "参数说明 queryRope (要求同时配置或同时不配置)"))
def rope_both_or_neither(c: CallView) -> str | None:
    a, b = c.has("query_rope"), c.has("key_rope")
    return f"only {'query' if a else 'key'}_rope given" if a != b else None


def _last_d(c: CallView, name: str) -> int:
    """Head dim of query_rope/key_rope in its layout (BSH/BnBsH: H / heads; NZ: D1 * D0)."""
    t = c.need(name)
    heads = c.N if name == "query_rope" else c.KV_N
    hidden = (c.cache_layout == "BnBsH") if (name == "key_rope" and c.paged) \
        else c.in_layout == "BSH"
    if name == "key_rope" and c.paged and t.ndim == 5:
        return t.shape[2] * t.shape[4]
    if hidden:
        return t.shape[-1] // heads if t.shape[-1] % heads == 0 else -1
    return t.shape[-1]


@rule("rope.dim_64", "query_rope and key_rope have head dim 64",
      src("V4", "MLA场景 公共约束 (queryRope/keyRope shape除D=64之外与query/key保持一致)"))
def rope_dim_64(c: CallView) -> str | None:
    if not rope_on(c):
        return None
    for n in ("query_rope", "key_rope"):
        d = _last_d(c, n)
        if d != ROPE_D:
            return f"{n}.shape={list(c.need(n).shape)} has head dim {d}, expected {ROPE_D}"
    return None


def _drop_d(shape: tuple[int, ...], d_axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x for i, x in enumerate(shape) if i not in d_axes)


@rule("rope.shapes", "query_rope/key_rope match query/key except the head dim",
      src("V4", "MLA场景 公共约束 (shape除D=64之外与query/key保持一致)"))
def rope_shapes(c: CallView) -> str | None:
    if not rope_on(c):
        return None
    for rope, base in (("query_rope", "query"), ("key_rope", "key")):
        r, t = c.need(rope), c.need(base)
        if r.ndim != t.ndim:
            return f"{rope}.shape={list(r.shape)} vs {base}.shape={list(t.shape)}: rank differs"
        axes = (2, 4) if t.ndim == 5 else (t.ndim - 1,)
        if _drop_d(r.shape, axes) != _drop_d(t.shape, axes):
            return f"{rope}.shape={list(r.shape)} vs {base}.shape={list(t.shape)} differ " \
                   f"outside the head dim"
    return None


@rule("rope.dtype", "query_rope/key_rope have the query/key dtype (bfloat16 with an int8 query)",
      src("V4", "参数说明 queryRope (数据类型与query一致); MLA场景 全量化 (queryRope/keyRo"
                "pe BFLOAT16)"))
def rope_dtype(c: CallView) -> str | None:
    if not rope_on(c):
        return None
    q, k = c.need("query"), c.need("key")
    for rope, want in (("query_rope", q.dtype), ("key_rope", k.dtype)):
        want = "bfloat16" if q.dtype == "int8" else want
        t = c.need(rope)
        if t.dtype != want:
            return f"{rope}.dtype={t.dtype!r}, expected {want!r} (query {q.dtype}, key {k.dtype})"
    return None


@rule("rope.query_d", "with rope, query D is 512 or 128 (128 only in TND/NTD_TND)",
      src("V4", "MLA场景 (query d=512; query d=128 非量化 inputLayout TND、NTD_TND)"))
def rope_query_d(c: CallView) -> str | None:
    if not rope_on(c):
        return None
    lay = c.attrs["input_layout"]
    if c.D == 512 or (c.D == 128 and lay in ("TND", "NTD_TND")):
        return None
    return f"query D={c.D} with input_layout={lay!r} and query_rope/key_rope"


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("rope.both_or_neither", "mla", {"key_rope": None}),
    ("rope.dim_64", "mla", {"query_rope": bf(2, 1, 8, 32), "key_rope": bf(4, 128, 32)}),
    ("rope.shapes", "mla", {"query_rope": bf(2, 1, 4, 64)}),
    ("rope.dtype", "mla", {"query_rope": T(2, 1, 8, 64)}),
    ("rope.query_d", "prefill", {"query_rope": T(2, 8, 4, 64), "key_rope": T(2, 2, 16, 64)}),
]
