"""antiquant_* / key_/value_antiquant_*: int8/int4 KV dequantised in the op [V4 §AntiQuant].

Combined antiquant_scale/offset (first dim 2 = key, value) per antiquant_mode,
or separate key_/value_antiquant_scale/offset per key_/value_antiquant_mode:
per-tensor, per-channel, per-token, per-head and PA-managed shapes per branch
[V4 伪量化参数约束; SEM §7, §9]. Forms: the scale's shape per branch and mode; each
mode attribute left out, its default 0 (per-channel / per-tensor) given explicitly
[MS antiquant_mode / key_antiquant_mode / value_antiquant_mode 默认值为 0], or set.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, TENSOR, Arg, Param, register
from fia_fuzz.op.shape_forms import (
    BRANCHES,
    DEFAULT_FORMS,
    default_form,
    matches,
    safe_feature,
    symbols,
)
from fia_fuzz.op.tensors import TensorSpec

#: Combined antiquant_scale/offset (first dim 2 = key, value) per antiquant_mode [SEM §7].
COMBINED_SHAPES: dict[str, tuple[tuple[int, str], ...]] = {
    "prefill": ((0, "2"), (0, "2,N,1,D"), (0, "2,N,D"), (0, "2,H")),
    "decode": ((0, "2"), (0, "2,N,1,D"), (0, "2,N,D"), (0, "2,H"), (1, "2,B,S2")),
}
#: Separate key_/value_antiquant_scale per mode: the V4 tables of both branches, the 5-D NZ
#: caches' table (per-channel in the query layout's shape, per-token (B, S) in both
#: branches) and MLA full quant's per-tensor fp32 scale [V4 伪量化参数约束; SEM §7, §9].
SEPARATE_SHAPES: dict[str, tuple[tuple[int, str], ...]] = {
    "prefill": ((0, "1"), (0, "N,D"), (0, "N,1,D"), (0, "H"), (1, "B,S2")),
    "decode": ((0, "1"), (0, "1,N,1,D"), (0, "1,N,D"), (0, "1,H"), (1, "1,B,S2"), (2, "N"),
               (3, "B,N,S2"), (4, "blocks,bs"), (5, "blocks,N,bs")),
    "nz": ((0, "1"), (0, "N,1,D"), (0, "N,D"), (0, "H"), (1, "B,S2")),
}


def _mode_values(table: dict[str, tuple[tuple[int, str], ...]]) -> tuple[str, ...]:
    values = (f"{b}:m{m}:{s}" for b in BRANCHES for key in (b, "nz") if key in table
              for m, s in table[key])
    return tuple(dict.fromkeys(values))


def _mode_form(shape: tuple[int, ...], branch: str, mode: int,
               table: dict[str, tuple[tuple[int, str], ...]], sym: dict[str, int | None],
               row: str = "") -> str:
    for m, p in table[row or branch]:
        if m == mode and matches(shape, p, sym):
            return f"{branch}:m{m}:{p}"
    return "other"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    p = case.params
    sym = symbols(v, True)
    out = {}
    scale = p.get("antiquant_scale")
    mode = case.attr("antiquant_mode")
    out["antiquant_scale_form"] = "none" if scale is None else _mode_form(
        scale.shape, branch, mode, COMBINED_SHAPES, sym)
    for side in ("key", "value"):
        scale = p.get(f"{side}_antiquant_scale")
        mode = case.attr(f"{side}_antiquant_mode")
        out[f"{side}_antiquant_scale_form"] = "none" if scale is None else _mode_form(
            scale.shape, branch, mode, SEPARATE_SHAPES, sym, "nz" if v.nz else branch)
    return out


#: mode attribute -> the scale it belongs to, and its form axis.
MODE_SCALES = {"antiquant_mode": "antiquant_scale", "key_antiquant_mode": "key_antiquant_scale",
               "value_antiquant_mode": "value_antiquant_scale"}


def mode_forms(case: Any, v: Any, branch: str) -> dict[str, str]:
    return {f"{mode}_form": default_form(case, mode, 0) for mode in MODE_SCALES}


def special(dr: Any) -> None:
    """A mode 0 given explicitly where the draw left it out beside its scale."""
    for mode, scale in MODE_SCALES.items():
        if scale in dr.params and mode not in dr.params and dr.pick_special(
                f"{mode}_form", "absent", {"absent": False, "explicit_default": True}):
            dr.set(mode, 0)


def _separate_modes(value: str, side: str) -> dict[str, Any]:
    """The antiquant feature a separate-scale form implies where its mode names one pair
    (mode 0 may be MLA full quant or the key of the 0/1 pair; value mode 1 the 0/1 pair)."""
    mode = int(value.split(":")[1][1])
    if mode >= 2 or (mode == 1 and side == "key"):
        return {"antiquant": f"separate:{mode}/{mode}"}
    return {}


def _antiquant_form(p: dict[str, Any], case: Any) -> str:
    if p.get("key_antiquant_scale") is not None:
        return f"separate:{case.attr('key_antiquant_mode')}/{case.attr('value_antiquant_mode')}"
    if p.get("antiquant_scale") is not None:
        return f"combined:{case.attr('antiquant_mode')}"
    return "none"


def _kv_quant_sym(p: dict[str, Any]) -> str:
    if p.get("key_antiquant_scale") is None and p.get("antiquant_scale") is None:
        return "none"
    offset = p.get("key_antiquant_offset") if p.get("key_antiquant_scale") is not None \
        else p.get("antiquant_offset")
    return "asym" if offset is not None else "sym"


def classify(case: Any, v: Any) -> dict[str, Any]:
    mla_fq = bool(safe_feature(lambda: v.mla_full_quant))
    p = case.params
    return {"antiquant": "none" if mla_fq else _antiquant_form(p, case),
            "kv_quant_sym": "none" if mla_fq else _kv_quant_sym(p)}


def _scale(lead: int) -> Any:
    return lambda c: TensorSpec((lead,), c.fdt)


_NONE = {"kv_quant_sym": ("none",)}

ARG = register(Arg(
    name="antiquant",
    params=(Param("antiquant_scale", TENSOR, alone=_scale(2)),
            Param("antiquant_offset", TENSOR, alone=_scale(2)),
            Param("key_antiquant_scale", TENSOR, alone=_scale(1),
                  partner="value_antiquant_scale"),
            Param("key_antiquant_offset", TENSOR, alone=_scale(1)),
            Param("value_antiquant_scale", TENSOR, alone=_scale(1)),
            Param("value_antiquant_offset", TENSOR, alone=_scale(1)),
            Param("antiquant_mode", ATTR, 0), Param("key_antiquant_mode", ATTR, 0),
            Param("value_antiquant_mode", ATTR, 0)),
    forms={"antiquant_scale_form": ("none", *_mode_values(COMBINED_SHAPES)),
           "key_antiquant_scale_form": ("none", *_mode_values(SEPARATE_SHAPES)),
           "value_antiquant_scale_form": ("none", *_mode_values(SEPARATE_SHAPES)),
           **{f"{mode}_form": DEFAULT_FORMS for mode in MODE_SCALES}},
    implies={"antiquant_scale_form": lambda v: {"antiquant": f"combined:{v.split(':')[1][1]}"},
             "key_antiquant_scale_form": lambda v: _separate_modes(v, "key"),
             "value_antiquant_scale_form": lambda v: _separate_modes(v, "value"),
             "antiquant_mode_form": lambda v: {"antiquant": "combined:0"}
             if v == "explicit_default" else {}},
    form_of=lambda case, v, branch: {**form_of(case, v, branch),
                                     **mode_forms(case, v, branch)},
    special=special,
    specials={f"{mode}_form": ("explicit_default",) for mode in MODE_SCALES},
    features={"antiquant": ("none", "combined:0", "combined:1", "separate:0/0",
                            "separate:1/1", "separate:2/2", "separate:3/3", "separate:4/4",
                            "separate:5/5", "separate:0/1"),
              "kv_quant_sym": ("none", "sym", "asym")},
    classify=classify,
    families=("antiquant", "gqa_nz"),
    absent={"antiquant": "none"},
    scope={"dense": _NONE, "mla": _NONE,
           "gqa_nz": {"antiquant": ("separate:0/0", "separate:1/1"),
                      "kv_quant_sym": ("sym",)}},
    rules=("antiquant",),
    golden=("fia_fuzz.golden.antiquant",),
    runners=("fia_fuzz.runners.composition.antiquant",),
))

#: The scale and offset tensors (combined and separate): where the `values` axis puts
#: NaN/Inf into the dequantisation (op/specials.py).
TENSORS = tuple(p.name for p in ARG.params if p.kind == TENSOR)
