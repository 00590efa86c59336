"""sparse_mode, atten_mask presence and shape, pre/next tokens
[V4 约束说明 Mask, V4 当Q_S大于1时 Mask, SEM §4].

sparse_mode (and pre/next) only matter in the prefill branch and for MLA
(rope) decode: "Q_S为1且不带rope输入时该参数无效" [V4 参数说明 sparseMode].
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B

OPTIMIZED = 2048
OPTIMIZED_SHAPES = ((OPTIMIZED, OPTIMIZED), (1, OPTIMIZED, OPTIMIZED), (1, 1, OPTIMIZED, OPTIMIZED))


def sparse_applies(c: CallView) -> bool:
    """sparse_mode is read: Q_S > 1, a packed layout, or MLA (rope) input."""
    return not c.decode or c.rope


def full_mask_mode(c: CallView) -> bool:
    """The mask (if any) is a full (S1, S2) matrix rather than the 2048 template."""
    return not sparse_applies(c) or c.attr_int("sparse_mode") in (0, 1)


@rule("mask.sparse_mode_range", "sparse_mode is 0..4 (5..8 are documented as unsupported)",
      src("V4", "约束说明 Mask (5 prefix, 6 global, 7 dilated, 8 block_local: 不支持); "
                "当Q_S大于1时 (sparseMode取其它值时会报错)"))
def mask_sparse_mode_range(c: CallView) -> str | None:
    mode = c.attr_int("sparse_mode")
    if sparse_applies(c) and not 0 <= mode <= 4:
        return f"sparse_mode={mode} is not one of 0..4"
    return None


@rule("mask.mode1_required", "sparse_mode 1 (allMask) needs atten_mask",
      src("V4", "约束说明 Mask (1: 必须传入完整的attenmask矩阵)"))
def mask_mode1_required(c: CallView) -> str | None:
    if sparse_applies(c) and c.attr_int("sparse_mode") == 1 and not c.has("atten_mask"):
        return "sparse_mode=1 without atten_mask"
    return None


@rule("mask.optimized_required", "sparse_mode 2, 3 and 4 need the 2048x2048 atten_mask",
      src("V4", "当Q_S大于1时 Mask (sparseMode = 2、3、4 ... 不传入attenMask ... 报错)"))
def mask_optimized_required(c: CallView) -> str | None:
    mode = c.attr_int("sparse_mode")
    if sparse_applies(c) and mode in (2, 3, 4) and not c.has("atten_mask"):
        return f"sparse_mode={mode} without atten_mask"
    return None


@rule("mask.optimized_shape",
      "sparse_mode 2/3/4 masks are (2048,2048), (1,2048,2048) or (1,1,2048,2048)",
      src("V4", "当Q_S大于1时 Mask (attenMaskOptional的shape需要为（2048,2048）...)"))
def mask_optimized_shape(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    mode = c.attr_int("sparse_mode")
    if m is None or not sparse_applies(c) or mode not in (2, 3, 4):
        return None
    if m.shape not in OPTIMIZED_SHAPES:
        return f"sparse_mode={mode} with atten_mask.shape={list(m.shape)}, expected one of " \
               f"{[list(s) for s in OPTIMIZED_SHAPES]}"
    return None


@rule("mask.full_form",
      "a full mask is (S1,S2), (B|1,S1,S2) or (B|1,1,S1,S2); decode (B,S2), (B,1,S2), (B,1,1,S2)",
      src("V4", "参数说明 attenMaskOptional (建议shape输入)"))
def mask_full_form(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if m is None or c.packed or not full_mask_mode(c):
        return None
    sh = m.shape
    if c.decode and not c.rope:
        ok = (m.ndim == 2 and sh[0] == c.B) or (m.ndim == 3 and sh[:2] == (c.B, 1)) \
            or (m.ndim == 4 and sh[:3] == (c.B, 1, 1))
        want = "(B,S2), (B,1,S2) or (B,1,1,S2)"
    else:
        ok = m.ndim == 2 or (m.ndim == 3 and sh[0] in (1, c.B)) \
            or (m.ndim == 4 and sh[0] in (1, c.B) and sh[1] == 1)
        want = "(S1,S2), (B|1,S1,S2) or (B|1,1,S1,S2)"
    if not ok:
        return f"atten_mask.shape={list(sh)} with B={c.B}, Q_S={c.S1}: expected {want}"
    return None


@rule("mask.full_size", "a full mask covers Q_S rows and KV_S columns (it may be larger)",
      src("V4", "参数说明 attenMaskOptional (Q_S、KV_S非16或32对齐，可以向上取到对齐的S)"))
def mask_full_size(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if m is None or c.packed or not full_mask_mode(c) or m.ndim < 2:
        return None
    rows = 1 if (c.decode and not c.rope and m.ndim < 4) else m.shape[-2]
    cols = m.shape[-1]
    bad = []
    if rows < c.S1:
        bad.append(f"{rows} rows < Q_S={c.S1}")
    if not c.paged and cols < c.S2:
        bad.append(f"{cols} columns < KV_S={c.S2}")
    return f"atten_mask.shape={list(m.shape)}: " + ", ".join(bad) if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("mask.sparse_mode_range", "prefill", {"sparse_mode": 5}),
    ("mask.sparse_mode_range", "prefill", {"sparse_mode": 9}),
    ("mask.mode1_required", "prefill", {"sparse_mode": 1}),
    ("mask.optimized_required", "causal", {"atten_mask": None}),
    ("mask.optimized_shape", "causal", {"atten_mask": B(8, 32)}),
    ("mask.full_form", "masked", {"atten_mask": B(3, 4, 16)}),
    ("mask.full_form", "decode", {"atten_mask": B(1, 4, 16)}),
    ("mask.full_size", "masked", {"atten_mask": B(2, 1, 4, 8)}),
    ("mask.full_size", "masked", {"atten_mask": B(3, 16)}),
]
