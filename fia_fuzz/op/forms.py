"""Every documented form of the op's optional arguments, one coverage axis per argument.

An argument's form is what the docs tell apart: its shape pattern (per-tensor,
per-channel, per-token, per-head, batch or broadcast), the branch it is passed
in where the docs give each branch its own forms (prefill Q_S > 1, decode
Q_S = 1), the antiquant mode it belongs to, and whether it is larger than the
part the op reads (masks, pse and block tables may be). `argument_forms(case)`
names the form of each argument; `FORM_AXES` lists every documented value, so
`fia-fuzz coverage` shows a form no draw takes as "never reached". Shape
patterns are written in the docs' symbols: B, N, S1, S2, D, H; for KV scales N
is KV_N and H = KV_N*D, for quant_scale2 D is the output's Dv and H = N*Dv;
S2 of a per-token scale means ">= KV_S". The table in docs/forms.md is this
module's, with the citations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import blocks_read
from fia_fuzz.op.undetermined import Undetermined

if TYPE_CHECKING:
    from fia_fuzz.op.case import Case

BRANCHES = ("prefill", "decode")

#: quant_scale2 / quant_offset2: per-tensor, or per-channel over the output's N x Dv in the
#: output layout's shapes [V4 §INT8 quantScale2; SEM §8].
QUANT_SCALE2_SHAPES = ("1", "1,1,H", "H", "1,1,N,D", "1,N,1,D", "N,D")
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


def _branch_values(shapes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{b}:{s}" for b in BRANCHES for s in shapes)


def _mode_values(table: dict[str, tuple[tuple[int, str], ...]]) -> tuple[str, ...]:
    values = (f"{b}:m{m}:{s}" for b in BRANCHES for key in (b, "nz") if key in table
              for m, s in table[key])
    return tuple(dict.fromkeys(values))


#: axis -> its values, "none" (argument absent) first.
FORM_AXES: dict[str, tuple[Any, ...]] = {
    "pse_shift_form": ("none", "prefill:1,N,S1,S2", "prefill:B,N,S1,S2", "decode:1,N,1,S2",
                       "decode:B,N,1,S2"),
    "pse_shift_size": ("none", "prefill:exact", "prefill:rows", "prefill:cols",
                       "decode:exact", "decode:cols"),
    "atten_mask_size": ("none", "prefill:exact", "prefill:rows", "prefill:cols",
                        "decode:exact", "decode:cols", "prefill:2048", "decode:2048"),
    "block_table_size": ("none", "prefill:exact", "prefill:wider", "decode:exact",
                         "decode:wider"),
    "quant_scale2_form": ("none", *_branch_values(QUANT_SCALE2_SHAPES), "empty_kv"),
    "antiquant_scale_form": ("none", *_mode_values(COMBINED_SHAPES)),
    "key_antiquant_scale_form": ("none", *_mode_values(SEPARATE_SHAPES)),
    "value_antiquant_scale_form": ("none", *_mode_values(SEPARATE_SHAPES)),
    "query_padding_size_form": ("none", "prefill:1", "prefill:B"),
    "kv_padding_size_form": ("none", "prefill:1", "prefill:B", "decode:1", "decode:B"),
    "key_shared_prefix_form": ("none", "prefill", "decode"),
    "actual_shared_prefix_len_form": ("none", "0", "partial", "full"),
    "learnable_sink_form": ("none", "prefill", "decode"),
    "num_key_value_heads_form": ("absent", "0", "N", "KV_N"),
}


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except (Undetermined, KeyError, ValueError, TypeError, AttributeError, IndexError):
        return None


def _symbols(v: CallView, kv: bool) -> dict[str, int | None]:
    """The docs' shape symbols for KV-side scales (kv) or the output side (quant_scale2)."""
    n = _safe(lambda: v.KV_N if kv else v.N)
    d = _safe(lambda: v.D if kv else v.Dv)
    blocks = _safe(lambda: v.cache_dims("key")["blocks"]) if v.paged else None
    return {"B": _safe(lambda: v.B), "N": n, "D": d, "H": None if n is None or d is None
            else n * d, "S1": _safe(lambda: v.S1), "S2": _safe(lambda: v.S2),
            "blocks": blocks, "bs": v.attr_int("block_size") if v.paged else None}


def _matches(shape: tuple[int, ...], pattern: str, sym: dict[str, int | None]) -> bool:
    """Shape fits the pattern; S1/S2 match any size at least that large (padding allowed)."""
    parts = pattern.split(",")
    if len(parts) != len(shape):
        return False
    for dim, part in zip(shape, parts, strict=True):
        want = int(part) if part.isdigit() else sym.get(part)
        if want is None or (dim < want if part in ("S1", "S2") else dim != want):
            return False
    return True


def _branch(v: CallView) -> str | None:
    decode = _safe(lambda: v.decode)
    return None if decode is None else "decode" if decode else "prefill"


def _shape_form(shape: tuple[int, ...], branch: str, patterns: tuple[str, ...],
                sym: dict[str, int | None]) -> str:
    for p in patterns:
        if _matches(shape, p, sym):
            return f"{branch}:{p}"
    return "other"


def _pse_forms(case: Case, v: CallView, branch: str) -> dict[str, str]:
    pse = case.params.get("pse_shift")
    if pse is None:
        return {"pse_shift_form": "none", "pse_shift_size": "none"}
    rows = "1,N,1,S2" if branch == "decode" else "1,N,S1,S2"
    pats = (rows, rows.replace("1,N", "B,N", 1))
    return {"pse_shift_form": _shape_form(pse.shape, branch, pats, _symbols(v, False)),
            "pse_shift_size": f"{branch}:{_extent(case, v, pse.shape[-2], pse.shape[-1])}"}


def _extent(case: Case, v: CallView, rows: int, cols: int) -> str:
    """"rows" when the tensor has more query rows than Q_S, "cols" more key columns than
    KV_S (the shared prefix's S included; paged: the block table's reach), else "exact"."""
    s1, s2 = _safe(lambda: v.S1), _safe(lambda: v.S2)
    if s1 is None or s2 is None:
        return "exact"
    if case.params.get("key_shared_prefix") is not None:
        s2 += _safe(lambda: v.prefix_S) or 0
    return "rows" if rows > s1 else "cols" if cols > s2 else "exact"


#: The optimized mask of sparse modes 2-4 is 2048 x 2048 whatever S1/S2 are [V4 §Mask].
OPTIMIZED_MASK = 2048


def mask_extent(case: Case, v: CallView | None = None) -> str:
    """How a user mask covers S1 x S2: "exact", "rows", "cols", or "2048" (optimized).
    `v`: the case's view when the caller has built it already."""
    m = case.params.get("atten_mask")
    if m is None:
        return "none"
    if case.attr("sparse_mode") in (2, 3, 4):
        return str(OPTIMIZED_MASK)
    v = case.view() if v is None else v
    rows = 1 if _safe(lambda: v.decode) else m.shape[-2]
    return _extent(case, v, rows, m.shape[-1])


def table_oversized(table: Any, lens: list[int], block_size: int) -> bool:
    """A block table wider than the most blocks a batch reads (maxBlockNumPerSeq, the
    least width the docs admit [V2 blockTable]); `lens`: actual_seq_lengths_kv."""
    need = max(blocks_read(lens[: len(table)], block_size), default=0)
    width = len(table[0]) if len(table) else 0
    return width > need


def _table_size(case: Case, branch: str) -> str:
    table = case.params.get("block_table")
    if table is None:
        return "none"
    lens = case.params.get("actual_seq_lengths_kv") or [0]
    wider = table_oversized(table, lens, case.attr("block_size"))
    return f"{branch}:{'wider' if wider else 'exact'}"


def _antiquant_forms(case: Case, v: CallView, branch: str) -> dict[str, str]:
    p = case.params
    sym = _symbols(v, True)
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


def _mode_form(shape: tuple[int, ...], branch: str, mode: int,
               table: dict[str, tuple[tuple[int, str], ...]], sym: dict[str, int | None],
               row: str = "") -> str:
    for m, p in table[row or branch]:
        if m == mode and _matches(shape, p, sym):
            return f"{branch}:m{m}:{p}"
    return "other"


def _quant_scale2_form(case: Case, v: CallView, branch: str) -> str:
    qs2 = case.params.get("quant_scale2")
    if qs2 is None:
        return "none"
    if _safe(lambda: v.S2) == 0 and not v.paged:
        return "empty_kv"
    return _shape_form(qs2.shape, branch, QUANT_SCALE2_SHAPES, _symbols(v, False))


def _padding_form(case: Case, name: str, branch: str) -> str:
    pads = case.params.get(name)
    if pads is None:
        return "none"
    return f"{branch}:{'1' if len(pads) == 1 else 'B'}"


def _prefix_len_form(case: Case, v: CallView) -> str:
    given = case.params.get("actual_shared_prefix_len")
    if case.params.get("key_shared_prefix") is None or given is None:
        return "none"
    n = int(given[0])
    return "0" if n == 0 else "full" if n == _safe(lambda: v.prefix_S) else "partial"


def _kv_heads_form(case: Case, v: CallView) -> str:
    if "num_key_value_heads" not in case.params:
        return "absent"
    kv_n = case.params["num_key_value_heads"]
    return "0" if kv_n == 0 else "N" if kv_n == _safe(lambda: v.N) else "KV_N"


def argument_forms(case: Case, v: CallView | None = None) -> dict[str, str]:
    """The documented form each optional argument of `case` takes (FORM_AXES values).
    `v`: the case's view when the caller has built it already."""
    v = case.view() if v is None else v
    branch = _branch(v)
    if branch is None:
        return {axis: "other" for axis in FORM_AXES}
    p = case.params
    extent = mask_extent(case, v)
    return {
        **_pse_forms(case, v, branch),
        "atten_mask_size": "none" if extent == "none" else f"{branch}:{extent}",
        "block_table_size": _table_size(case, branch),
        "quant_scale2_form": _quant_scale2_form(case, v, branch),
        **_antiquant_forms(case, v, branch),
        "query_padding_size_form": _padding_form(case, "query_padding_size", branch),
        "kv_padding_size_form": _padding_form(case, "kv_padding_size", branch),
        "key_shared_prefix_form": branch if p.get("key_shared_prefix") is not None
        else "none",
        "actual_shared_prefix_len_form": _prefix_len_form(case, v),
        "learnable_sink_form": branch if p.get("learnable_sink") is not None else "none",
        "num_key_value_heads_form": _kv_heads_form(case, v),
    }


#: The output layout a per-channel quant_scale2 shape belongs to [SEM §8].
_OUT_LAYOUT_OF = {"1,1,H": {"out_layout": "BSH"}, "H": {"out_layout": "BSH"},
                  "1,1,N,D": {"out_layout": "BSND"}, "1,N,1,D": {"out_layout": "BNSD"}}

#: Feature values a form implies, so a form filter steers the draw's earlier decisions.
_IMPLIES: dict[str, Any] = {
    "pse_shift_form": lambda v: {"pse_batch": v.split(":")[1].split(",")[0]},
    "pse_shift_size": lambda v: {"pse": True},
    "atten_mask_size": lambda v: {"mask_oversized": v.endswith(("rows", "cols"))},
    "block_table_size": lambda v: {"paged": True},
    "quant_scale2_form": lambda v: {"post_quant": True, **(
        {"empty": "kv"} if v == "empty_kv" else
        {"post_quant_form": "per_tensor" if v.endswith(":1") else "per_channel",
         **_OUT_LAYOUT_OF.get(v.split(":")[-1], {})})},
    "query_padding_size_form": lambda v: {"q_padding": True},
    "kv_padding_size_form": lambda v: {"kv_padding": True},
    "key_shared_prefix_form": lambda v: {"prefix": True},
    "actual_shared_prefix_len_form": lambda v: {"prefix": True, "prefix_len": "given"},
    "learnable_sink_form": lambda v: {"sink": True},
    "num_key_value_heads_form": lambda v: {} if v == "KV_N" else {"gqa": "mha"},
    "antiquant_scale_form": lambda v: {"antiquant": f"combined:{v.split(':')[1][1]}"},
    "key_antiquant_scale_form": lambda v: _separate_modes(v, "key"),
    "value_antiquant_scale_form": lambda v: _separate_modes(v, "value"),
}


def _separate_modes(value: str, side: str) -> dict[str, Any]:
    """The antiquant feature a separate-scale form implies where its mode names one pair
    (mode 0 may be MLA full quant or the key of the 0/1 pair; value mode 1 the 0/1 pair)."""
    mode = int(value.split(":")[1][1])
    if mode >= 2 or (mode == 1 and side == "key"):
        return {"antiquant": f"separate:{mode}/{mode}"}
    return {}


def implied_pins(filters: dict[str, Any]) -> dict[str, Any]:
    """The features form filters imply (branch, presence), so draws take them first;
    filters given explicitly win."""
    out: dict[str, Any] = {}
    for axis, value in filters.items():
        if axis not in FORM_AXES or value in ("none", "other"):
            continue
        head = str(value).split(":", 1)[0]
        if head in BRANCHES:
            out["branch"] = head
        if axis in _IMPLIES:
            out.update(_IMPLIES[axis](str(value)))
    return {k: v for k, v in out.items() if k not in filters}
