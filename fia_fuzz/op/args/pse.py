"""pse_shift: an additive position bias of the scores, (B|1, N, S1, S2) in the query dtype.

[V4 §pseShift] Prefill takes (B|1, N, S1, S2) with rows and columns at
least Q_S and KV_S (larger is allowed: alignment); decode (B|1, N, 1, KV_S).
An int8 query takes a float16 pse. Forms: the batch form per branch
(`pse_shift_form`) and whether it is larger than the part the op reads
(`pse_shift_size`).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.shape_forms import extent, safe_feature, shape_form, symbols
from fia_fuzz.op.tensors import TensorSpec

NAME = "pse_shift"


def _alone(c: Any) -> Any:
    return None if c.d == 0 else TensorSpec((1, c.n, c.s1, c.s2), c.fdt)


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    pse = case.params.get(NAME)
    if pse is None:
        return {"pse_shift_form": "none", "pse_shift_size": "none"}
    rows = "1,N,1,S2" if branch == "decode" else "1,N,S1,S2"
    pats = (rows, rows.replace("1,N", "B,N", 1))
    return {"pse_shift_form": shape_form(pse.shape, branch, pats, symbols(v, False)),
            "pse_shift_size": f"{branch}:{extent(case, v, pse.shape[-2], pse.shape[-1])}"}


def classify(case: Any, v: Any) -> dict[str, Any]:
    pse = case.params.get(NAME)
    b = safe_feature(lambda: v.B)
    if pse is None:
        batch = "none"
    else:
        batch = "B" if pse.shape[0] == b and b != 1 else "1" if pse.shape[0] == 1 else "B"
    return {"pse": pse is not None, "pse_batch": batch}


def put(dr: Any, shape: tuple[int, ...], dtype: str, fill: dict[str, Any]) -> None:
    """Set the bias of a draw (`dr`: the strategies' Draft) in `shape` and `dtype`."""
    dr.set(NAME, TensorSpec(tuple(int(x) for x in shape), dtype))
    dr.fills[NAME] = fill


def draw(dr: Any) -> None:
    """pse_shift (B|1, N, S1, S2) in the query dtype (fp16 for int8 query), rows and columns
    exact or larger; decode (B|1, N, 1, S2) [V4 §pseShift]."""
    ch = dr.ch
    form = ch.pick("pse_batch", ("none", "B", "1"))
    if form == "none":
        ch.fixed("pse_shift_form", "none")
        ch.fixed("pse_shift_size", "none")
        return
    rows = "1" if dr.decode else "S1"
    ch.fixed("pse_shift_form", f"{dr.branch}:{form},N,{rows},S2")
    kinds = ("exact", "cols") if dr.decode else ("exact", "rows", "cols")
    kind = dr.pick_form("pse_shift_size", {f"{dr.branch}:{k}": k for k in kinds})
    rows_n = dr.s1 + (ch.int(1, 4) if kind == "rows" else 0)
    cols = dr.s2_total + (ch.int(1, 4) if kind == "cols" else ch.int(0, 4) if kind == "rows"
                          else 0)
    dtype = "float16" if dr.q_dtype == "int8" else dr.q_dtype
    dr.set(NAME, TensorSpec((dr.b if form == "B" else 1, dr.n, rows_n, cols), dtype))
    dr.fills[NAME] = {"dist": ch.one(("normal", "uniform")), "scale": 1.0}


ARG = register(Arg(
    name="pse",
    params=(Param(NAME, TENSOR, roles=frozenset({"bias"}), alone=_alone),),
    forms={"pse_shift_form": ("none", "prefill:1,N,S1,S2", "prefill:B,N,S1,S2",
                              "decode:1,N,1,S2", "decode:B,N,1,S2"),
           "pse_shift_size": ("none", "prefill:exact", "prefill:rows", "prefill:cols",
                              "decode:exact", "decode:cols")},
    implies={"pse_shift_form": lambda v: {"pse_batch": v.split(":")[1].split(",")[0]},
             "pse_shift_size": lambda v: {"pse": True}},
    form_of=form_of,
    features={"pse": (False, True), "pse_batch": ("none", "B", "1")},
    classify=classify,
    families=("dense", "antiquant", "full_quant"),
    absent={"pse": False},
    empty={"pse": False, "pse_batch": "none"},
    draw=draw,
    own_step=True,
    rules=("pse",),
    golden=("fia_fuzz.golden.core",),
    runners=("fia_fuzz.runners.composition.attend",),
    notes={34: """34. **Decode pse_shift rows.** V4's pseShift table has Q_S >= query S only in
    its Q_S > 1 row; the Q_S = 1 row (and V2, IFA, MindSpore) gives
    (B|1, N, 1, KV_S). `pse.shape` holds a decode pse to one row (it once
    took any row count >= 1); docs/forms.md lists the forms drawn."""},
))
