"""Sparse modes, attention masks and the pre/next band [V4 §Mask] (the pse draw: op/args/pse.py).

Modes 0/1 take a full mask (S1, S2) in five batch forms, possibly larger than
S1 x S2 (alignment padding); modes 2-4 take the optimized 2048x2048 mask;
decode masks are (B, S2) in three forms. S2 here counts the shared prefix and,
for paged KV, the whole block-table width (fia-semantics.md §4, §6).
"""

from __future__ import annotations

from fia_fuzz.op.geometry import NO_BAND
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import Draft, numel_allows, spec

MASK_DTYPES = ("bool", "int8", "uint8")
FULL_SHAPES = ("S1,S2", "B,S1,S2", "1,S1,S2", "B,1,S1,S2", "1,1,S1,S2")
DECODE_SHAPES = ("B,S2", "B,1,S2", "B,1,1,S2")
OPTIMIZED_SHAPES = ("2048", "1,2048", "1,1,2048")
FULL_FILLS = ("bernoulli", "zeros", "nearly_full")
HUGE = (1 << 20, 10**9, NO_BAND - 1)
#: `values` that need a mask masking keys (strategies/values.py); masked_row a user mask
MASKED_VALUES = ("nan_masked", "inf_masked", "masked_row")
#: Elements of the optimized mask of modes 2-4
OPTIMIZED_NUMEL = 2048 * 2048


def band(dr: Draft, classes: tuple[str, ...] = ("default", "small", "huge", "negative")
         ) -> None:
    """pre_tokens/next_tokens: default, small, huge, or with a negative side."""
    ch = dr.ch
    cls = ch.pick("band", classes)
    span = dr.s1 + dr.s2_total
    if cls == "default":
        return
    if cls == "small":
        pre, nxt = ch.int(0, span), ch.int(0, span)
    elif cls == "huge":
        pre, nxt = ch.one(HUGE), ch.one(HUGE)
    else:
        neg = -ch.int(1, max(1, dr.s1))
        other = ch.int(0, span + 1)
        pre, nxt = (neg, other) if ch.coin() else (other, neg)
    dr.set("pre_tokens", pre)
    dr.set("next_tokens", nxt)


def _oversize(dr: Draft, rows: int, cols: int) -> tuple[int, int]:
    """Mask rows and columns: exact, or grown in rows (prefill) or columns to 16/32
    alignment or beyond, as the docs allow [V4 attenMask]."""
    ch = dr.ch
    over = ch.pick("mask_oversized", (False, True))
    kinds = (("cols",) if dr.decode else ("rows", "cols")) if over else ("exact",)
    kind = dr.pick_form("atten_mask_size", {f"{dr.branch}:{k}": k for k in kinds})
    if kind == "exact":
        return rows, cols
    align = ch.one((16, 32, 0))

    def grow(x: int) -> int:
        up = -(-x // align) * align if align else x
        return up if up > x else x + ch.int(1, 8)

    return (grow(rows), cols + ch.int(0, 8)) if kind == "rows" else (rows, grow(cols))


def full_mask(dr: Draft) -> None:
    """A user mask for modes 0/1 (prefill) in one of the documented batch forms."""
    ch = dr.ch
    form = ch.pick("mask_shape", FULL_SHAPES)
    rows, cols = _oversize(dr, dr.s1, dr.s2_total)
    lead = {"S1,S2": (), "B,S1,S2": (dr.b,), "1,S1,S2": (1,), "B,1,S1,S2": (dr.b, 1),
            "1,1,S1,S2": (1, 1)}[form]
    _set_mask(dr, (*lead, rows, cols), ch.pick("mask_fill", _fills(ch)))


def decode_mask(dr: Draft) -> None:
    """A decode mask (B, S2), (B, 1, S2) or (B, 1, 1, S2) [V4 attenMask Q_S=1]."""
    ch = dr.ch
    form = ch.pick("mask_shape", DECODE_SHAPES)
    _, cols = _oversize(dr, 1, dr.s2_total)
    lead = {"B,S2": (dr.b,), "B,1,S2": (dr.b, 1), "B,1,1,S2": (dr.b, 1, 1)}[form]
    _set_mask(dr, (*lead, cols), ch.pick("mask_fill", _fills(ch)))


def _fills(ch: Chooser) -> tuple[str, ...]:
    """A user mask's fills; a masked `values` filter takes those that mask a key."""
    return FULL_FILLS[::2] if ch.pins.get("values") in MASKED_VALUES else FULL_FILLS


def optimized_mask(dr: Draft) -> None:
    """The 2048x2048 upper-triangular mask of modes 2/3/4 [V4 §Mask]."""
    form = dr.ch.pick("mask_shape", OPTIMIZED_SHAPES)
    dr.ch.fixed("atten_mask_size", f"{dr.branch}:2048")
    lead = {"2048": (), "1,2048": (1,), "1,1,2048": (1, 1)}[form]
    _set_mask(dr, (*lead, 2048, 2048), dr.ch.pick("mask_fill", ("triu",)))


def _set_mask(dr: Draft, shp: tuple[int, ...], fill: str) -> None:
    dtype = dr.ch.pick("mask", MASK_DTYPES)
    dr.set("atten_mask", spec(shp, dtype))
    recipe = {"dist": fill}
    if fill == "bernoulli":
        recipe["p"] = dr.ch.one((0.2, 0.5, 0.9))
    if fill == "triu":
        recipe["k"] = 1
    dr.fills["atten_mask"] = recipe


def _wants_full_mask(dr: Draft) -> bool:
    ch = dr.ch
    return ch.pinned("mask_oversized", True) or ch.pins.get("mask_shape") in FULL_SHAPES \
        or ch.pins.get("mask_fill") in FULL_FILLS or ch.pinned("values", "masked_row")


def prefill_only(ch: Chooser) -> bool:
    """True when a filter names a mask form or sparse mode only prefill takes (decode draws
    sparse mode 0 and the (B, S2) masks)."""
    return ch.pins.get("mask_shape") in (*FULL_SHAPES, *OPTIMIZED_SHAPES) \
        or ch.pins.get("sparse_mode", 0) != 0 or ch.pins.get("mask_fill") == "triu"


def wants_mask(dr: Draft) -> bool:
    return not dr.ch.allows("mask", "none") or not dr.ch.allows("mask_shape", "none") or \
        not dr.ch.allows("mask_fill", "none") or dr.ch.pins.get("values") in MASKED_VALUES


def prefill_sparse(dr: Draft, modes: tuple[int, ...] = (0, 1, 2, 3, 4)) -> None:
    """sparse_mode with its mask and band, for Q_S > 1 without packed layouts."""
    ch = dr.ch
    if _wants_full_mask(dr):
        modes = tuple(m for m in modes if m in (0, 1))
    elif ch.pins.get("mask_shape") in OPTIMIZED_SHAPES or ch.pinned("mask_fill", "triu"):
        modes = tuple(m for m in modes if m in (2, 3, 4))
    mode = ch.pick("sparse_mode", optimized_modes(dr, modes))
    if mode:
        dr.set("sparse_mode", mode)
    if mode == 0:
        if ch.pick("_mask_on", (True,) if wants_mask(dr) else (False, True)):
            full_mask(dr)
        else:
            no_mask(dr)
    elif mode == 1:
        full_mask(dr)
    else:
        optimized_mask(dr)
    band(dr, ("default", "huge") if dr.int8_out else
         ("default", "small", "huge", "negative"))


def optimized_modes(dr: Draft, modes: tuple[int, ...]) -> tuple[int, ...]:
    """`modes`, less those of the optimized mask (2-4) where a numel_class filter is below
    its elements; unchanged where none is."""
    if numel_allows(dr.ch, OPTIMIZED_NUMEL):
        return modes
    return tuple(m for m in modes if m not in (2, 3, 4))


def no_mask(dr: Draft) -> None:
    for name, value in (("mask", "none"), ("mask_shape", "none"), ("mask_fill", "none"),
                        ("mask_oversized", False)):
        dr.ch.pick(name, (value,))
    dr.ch.fixed("atten_mask_size", "none")


def decode_sparse(dr: Draft) -> None:
    """Decode without rope: sparse_mode, pre/next are ignored [V4 sparseMode]; masks allowed."""
    ch = dr.ch
    ch.pick("sparse_mode", (0,))
    if ch.pick("_mask_on", (True,) if wants_mask(dr) else (False, True)):
        decode_mask(dr)
    else:
        no_mask(dr)
    band(dr)
