"""Shape patterns in the docs' symbols, shared by the argument modules' form classifiers.

Patterns are written in B, N, S1, S2, D, H; for KV scales N is KV_N and
H = KV_N*D, for output-side tensors D is the output's Dv and H = N*Dv; S1/S2
of a pattern match any size at least that large (padding allowed). The views
these functions read are `fia_fuzz.op.call.CallView`s, duck-typed (this
module imports nothing of ours above `op/geometry.py`).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.geometry import blocks_read
from fia_fuzz.op.undetermined import Undetermined

BRANCHES = ("prefill", "decode")
#: The optimized mask of sparse modes 2-4 is 2048 x 2048 whatever S1/S2 are [V4 §Mask].
OPTIMIZED_MASK = 2048


def safe(fn: Any, default: Any = None) -> Any:
    """fn(), or `default` where what it reads is missing or illegal."""
    try:
        return fn()
    except (Undetermined, KeyError, ValueError, TypeError, AttributeError, IndexError):
        return default


def symbols(v: Any, kv: bool) -> dict[str, int | None]:
    """The docs' shape symbols for KV-side scales (kv) or the output side."""
    n = safe(lambda: v.KV_N if kv else v.N)
    d = safe(lambda: v.D if kv else v.Dv)
    blocks = safe(lambda: v.cache_dims("key")["blocks"]) if v.paged else None
    return {"B": safe(lambda: v.B), "N": n, "D": d, "H": None if n is None or d is None
            else n * d, "S1": safe(lambda: v.S1), "S2": safe(lambda: v.S2),
            "blocks": blocks, "bs": v.attr_int("block_size") if v.paged else None}


def matches(shape: tuple[int, ...], pattern: str, sym: dict[str, int | None]) -> bool:
    """Shape fits the pattern; S1/S2 match any size at least that large (padding allowed)."""
    parts = pattern.split(",")
    if len(parts) != len(shape):
        return False
    for dim, part in zip(shape, parts, strict=True):
        want = int(part) if part.isdigit() else sym.get(part)
        if want is None or (dim < want if part in ("S1", "S2") else dim != want):
            return False
    return True


def branch_of(v: Any) -> str | None:
    decode = safe(lambda: v.decode)
    return None if decode is None else "decode" if decode else "prefill"


def shape_form(shape: tuple[int, ...], branch: str, patterns: tuple[str, ...],
               sym: dict[str, int | None]) -> str:
    for p in patterns:
        if matches(shape, p, sym):
            return f"{branch}:{p}"
    return "other"


def branch_values(shapes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{b}:{s}" for b in BRANCHES for s in shapes)


def extent(case: Any, v: Any, rows: int, cols: int) -> str:
    """"rows" when the tensor has more query rows than Q_S, "cols" more key columns than
    KV_S (the shared prefix's S included; paged: the block table's reach), else "exact"."""
    s1, s2 = safe(lambda: v.S1), safe(lambda: v.S2)
    if s1 is None or s2 is None:
        return "exact"
    if case.params.get("key_shared_prefix") is not None:
        s2 += safe(lambda: v.prefix_S) or 0
    return "rows" if rows > s1 else "cols" if cols > s2 else "exact"


def table_oversized(table: Any, lens: list[int], block_size: int) -> bool:
    """A block table wider than the most blocks a batch reads (maxBlockNumPerSeq, the
    least width the docs admit [V2 blockTable]); `lens`: actual_seq_lengths_kv."""
    need = max(blocks_read(lens[: len(table)], block_size), default=0)
    width = len(table[0]) if len(table) else 0
    return width > need


def safe_feature(fn: Any, default: Any = None) -> Any:
    """fn(), or `default` where what it reads is undetermined (the features' narrower net:
    a view that cannot even be read raises)."""
    try:
        return fn()
    except (Undetermined, KeyError, ValueError, TypeError):
        return default


#: The values of an attribute's form axis: left out, its default given explicitly, another.
DEFAULT_FORMS = ("absent", "explicit_default", "set")


def default_form(case: Any, name: str, default: Any) -> str:
    """An attribute's DEFAULT_FORMS value in `case` (`default`: its documented default)."""
    if name not in case.params:
        return "absent"
    return "explicit_default" if case.params[name] == default else "set"


def leave_out_or_spell(dr: Any, axis: str, name: str, default: Any) -> None:
    """The special draw of an attribute whose default means "none of it": where the draw
    left `name` out, give its default explicitly once in a while (Draft.pick_special)."""
    if name not in dr.params and dr.pick_special(
            axis, "absent", {"absent": False, "explicit_default": True}):
        dr.set(name, default)
