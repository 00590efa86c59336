"""Changes to a legal case: the `Change` type, consistent edits and named mutations.

A breaker must change exactly the quantity its rule is about; a block size
lives in the attribute, in every cache's block axis and in the PA-managed
antiquant scales, a head dim in every tensor's last axis, and so on. The
consistent edits return a `Change` that moves one quantity in all of those
places at once, so the case stays legal for every other rule (fia-semantics.md
§2 for the layouts and cache forms). The mutations (`MUTATIONS`) each change
one argument (an attribute value, one tensor's dtype or one axis, one
optional input added or dropped, one length value), or return None where they
do not apply: the raw material of the breaker search
(`fia_fuzz.strategies.illegal.search`), whose entries `illegal_cases` replays.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from fia_fuzz.op import args
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import BLOCK_AXIS, SEQ_AXIS
from fia_fuzz.op.params import ATTR_DEFAULTS, TENSOR_ARGS
from fia_fuzz.op.tensors import FLOAT_DTYPES, TensorSpec
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.values import INT_DISTS, MASK_DISTS
from fia_fuzz.strategies.choices import Chooser

Change = dict[str, Any]
DELETE = object()
#: keyword -> its Param (op/args), for the values legal on their own that `add` inserts.
_PARAMS = args.DerivedDict(lambda: {p.name: p for p in args.params()})
#: Key of a Change that sets fill recipes (e.g. a value argument's dtype) rather than params.
FILLS = "fills"
#: Key of a Change that names the side(s) of its rule's bound it broke (labels of SIDES);
#: `apply` drops it, and `illegal/width.py` counts it (or infers the side where it is absent).
SIDE = "side"
#: Sides of a bound: a number or size under or past it, a list or rank shorter or longer
#: than it, and which element of a list broke it.
SIDES = ("below", "above", "shorter", "longer", "first", "last")


def sided(change: Change, *sides: str) -> Change:
    """`change` labelled with the side(s) of its rule's bound it breaks."""
    assert set(sides) <= set(SIDES), sides
    return {**change, SIDE: (*change.get(SIDE, ()), *sides)}


def position(i: int, n: int) -> tuple[str, ...]:
    """The side labels of element `i` of `n`: first, last (both for a single one), or none."""
    return (("first",) if i == 0 else ()) + (("last",) if i == n - 1 else ())


def _dtype(t: Any) -> str | None:
    """The dtype of a tensor (or of a tensor list's first), None for anything else."""
    t = t[0] if isinstance(t, list) and t else t
    return t.dtype if isinstance(t, TensorSpec) else None


def _stale_float_fill(case: Case, name: str, new: Any) -> bool:
    """Whether `name`'s fill is a float recipe the new tensor's integer or bool dtype cannot
    take (a float fill does not materialise as one; values.default_fill then applies)."""
    fill, dtype = case.fills.get(name), _dtype(new)
    return (fill is not None and dtype is not None and dtype not in FLOAT_DTYPES
            and dtype != _dtype(case.params.get(name))
            and fill.get("dist") not in (*MASK_DISTS, *INT_DISTS))


def apply(case: Case, change: Change) -> Case:
    """The case with `change` applied (DELETE drops a parameter, FILLS merges fill recipes;
    a tensor turned integer or bool without a recipe of its own loses its float one)."""
    params = {k: v for k, v in {**case.params, **change}.items()
              if v is not DELETE and k not in (FILLS, SIDE)}
    given = change.get(FILLS, {})
    fills = {**case.fills, **given}
    stale = {k for k, v in change.items()
             if k not in (FILLS, SIDE) and k not in given and _stale_float_fill(case, k, v)}
    return Case(params=params, fills={k: v for k, v in fills.items()
                                      if k in params and k not in stale},
                seed=case.seed)


# ---- consistent edits: one quantity moved everywhere it appears ---------------------------
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
    """query (and what shares its S axis: the rope half, op/args) with S (packed: T) set
    to `s`."""
    ax = SEQ_AXIS[q_layout(case)]
    return {n: with_axis(case.params[n], ax, s) for n in args.with_role("query_seq")
            if case.params.get(n) is not None}


def head_dim(t: TensorSpec, lay: str, heads: int, d: int) -> TensorSpec:
    """A query/key/value tensor of `lay` with head dim `d` (BSH: H = heads * d)."""
    return with_axis(t, -1, heads * d if lay == "BSH" else d)


def head_dims(case: Case, d: int, dv: int) -> Change:
    """query and key with head dim `d`, value with `dv`, in any layout and in a paged cache
    (BSH and a BnBsH cache hold H = heads * D); not for 5-D NZ caches."""
    v = case.view()
    lay = q_layout(case)
    out: Change = {"query": head_dim(case.params["query"], lay, v.N, d)}
    for name, dd in (("key", d), ("value", dv)):
        t = case.params[name]
        paged_h = len(t.shape) == 3 and case.params.get("block_table") is not None
        out[name] = with_axis(t, -1, v.KV_N * dd) if paged_h else head_dim(t, lay, v.KV_N, dd)
    return out


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


# ---- edits shared by several rules' breakers ----------------------------------------------
def bnsd(case: Case) -> tuple[int, int, int, int, int, int, str]:
    """(B, N, S1, D, KV_N, S2, dtype) of a plain BNSD case."""
    b, n, s1, d = case.params["query"].shape
    _, kv_n, s2, _ = case.params["key"].shape
    return b, n, s1, d, kv_n, s2, case.params["query"].dtype


def bnsd_qkv(b: int, n: int, s1: int, d: int, kv_n: int, s2: int, dtype: str,
             dv: int | None = None) -> Change:
    """BNSD query/key/value of these sizes, with the head counts to match."""
    return {"query": TensorSpec((b, n, s1, d), dtype),
            "key": TensorSpec((b, kv_n, s2, d), dtype),
            "value": TensorSpec((b, kv_n, s2, dv or d), dtype),
            "num_heads": n, "num_key_value_heads": kv_n}


def kv_dtype(case: Case, dtype: str) -> Change:
    """key, value (and a shared prefix) in `dtype`; int32 packs 8 int4 values, so its last
    axis is 1/8."""
    out: Change = {}
    for n in ("key", "value", "key_shared_prefix", "value_shared_prefix"):
        t = case.params.get(n)
        if t is None:
            continue
        out[n] = with_axis(t, -1, t.shape[-1] // 8) if dtype == "int32" else t
        out[n] = with_dtype(out[n], dtype)
    return out


def follow_dsq(case: Case, tokens: int | None = None, n: int | None = None) -> Change:
    """MLA full quant's dequant_scale_query (tokens, N, 1) following a change of S or N."""
    t = case.params.get("dequant_scale_query")
    if t is None:
        return {}
    return {"dequant_scale_query": TensorSpec((tokens or t.shape[0], n or t.shape[1], 1),
                                              t.dtype)}


def block_size(case: Case) -> int:
    """The block_size attribute of a paged case."""
    return int(case.params["block_size"])


# ---- mutations: one argument changed, for the breaker search --------------------------
Mutation = Callable[[Chooser, Case], "Change | None"]
ATTR_VALUES: dict[str, tuple[Any, ...]] = {
    "sparse_mode": (5, 6, 9, -1, 0, 1, 2, 3, 4),
    "inner_precise": (4, -1, 2, 3, 0),
    "block_size": (0, 24, 1024, 640, 8, 48, 256, 512, 64, 16),
    "input_layout": ("NTD", "BNSD_BSND", "TND_NTD", "NTD_TND", "BSH_NBSD", "BNSD_NBSD", "TND",
                     "BSND", "BSH", "BNSD", "SBH"),
    "softmax_lse_flag": (True,),
    "antiquant_mode": (1, 2, 3),
    "key_antiquant_mode": (1, 2, 3, 4, 5, 6, 0),
    "value_antiquant_mode": (1, 2, 3, 4, 5, 6, 0),
    "pre_tokens": (-5, -1),
    "next_tokens": (-5, -1),
    "query_quant_mode": (3, 1),
    "num_key_value_heads": (0, 1, 2, 3, 1000),
    "num_heads": (300, 2, 3, 128),
}
DTYPE_CHOICES = ("float16", "bfloat16", "float32", "int8", "uint8", "bool", "int32", "int64",
                 "uint64", "int4")
VALUE_ARGS_INT = ("actual_seq_lengths", "actual_seq_lengths_kv", "query_padding_size",
                  "kv_padding_size", "actual_shared_prefix_len")


def _view(case: Case) -> CallView:
    return CallView(case.specs())


def _dim(view: CallView, name: str, default: int = 1) -> int:
    try:
        return int(getattr(view, name))
    except (Undetermined, KeyError, ValueError, TypeError, AttributeError):
        return default


def attr(name: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        return {name: ch.one(ATTR_VALUES[name])}
    return mutate


def dtype(name: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        t = case.params.get(name)
        if t is None:
            return None
        new = ch.one(DTYPE_CHOICES)
        if isinstance(t, list):
            return {name: [TensorSpec(x.shape, new) for x in t]}
        return {name: TensorSpec(t.shape, new)}
    return mutate


def pair_dtype(a: str, b: str) -> Mutation:
    """The same dtype change on two tensors that must agree (key/value, scale pairs)."""
    def mutate(ch: Chooser, case: Case) -> Change | None:
        ta, tb = case.params.get(a), case.params.get(b)
        if ta is None or tb is None or isinstance(ta, list):
            return None
        new = ch.one(DTYPE_CHOICES)
        return {a: TensorSpec(ta.shape, new), b: TensorSpec(tb.shape, new)}
    return mutate


def axis(name: str, pos: int, how: str, also: str = "") -> Mutation:
    """Change axis `pos` (negative: from the end) of tensor `name` (and `also`)."""
    def mutate(ch: Chooser, case: Case) -> Change | None:
        out: Change = {}
        for n in (name, also) if also else (name,):
            t = case.params.get(n)
            if t is None or isinstance(t, list) or len(t.shape) < abs(pos) + (pos >= 0):
                return None
            shp = list(t.shape)
            d = shp[pos]
            shp[pos] = {"+1": d + 1, "+16": d + 16, "-1": max(0, d - 1), "x2": d * 2, "=1": 1,
                        "=2048": 2048, "=3": 3, "x8": d * 8, "/8": max(1, d // 8)}[how]
            if shp[pos] == d:
                return None
            out[n] = TensorSpec(tuple(shp), t.dtype)
            side = "above" if shp[pos] > d else "below"
        return sided(out, side)
    return mutate


def rank(name: str, how: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        t = case.params.get(name)
        if t is None or isinstance(t, list):
            return None
        shp = (*t.shape, 1) if how == "up" else t.shape[1:] if len(t.shape) > 1 else None
        if shp is None:
            return None
        return sided({name: TensorSpec(tuple(shp), t.dtype)},
                     "longer" if how == "up" else "shorter")
    return mutate


def drop(name: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        return {name: DELETE} if case.params.get(name) is not None else None
    return mutate


def add(name: str) -> Mutation:
    """Add an optional input in a shape that is legal on its own."""
    def mutate(ch: Chooser, case: Case) -> Change | None:
        if case.params.get(name) is not None:
            return None
        v = _view(case)
        q = case.params["query"]
        b, n = _dim(v, "B"), _dim(v, "N")
        s1, s2, d = _dim(v, "S1"), _dim(v, "S2"), _dim(v, "D", 64)
        fdt = "float16" if q.dtype == "int8" else q.dtype
        k = case.params["key"]
        k0 = k[0] if isinstance(k, list) else k
        # each argument's module gives a value legal on its own (Param.alone), and the
        # keyword added with it (Param.partner: a value scale with its key scale, ...)
        ctx = SimpleNamespace(b=b, n=n, s1=s1, s2=s2, d=d, q=q, k0=k0, fdt=fdt)
        param = _PARAMS[name]
        if param.alone is None:
            raise KeyError(name)
        value = param.alone(ctx)
        if value is None:
            return None
        if param.partner is not None:
            return {name: value, param.partner: _PARAMS[param.partner].alone(ctx)}
        return {name: value}
    return mutate


def values(name: str, how: str) -> Mutation:
    """Change an int-valued argument: negative, too large, odd count, decreasing, non-int."""
    def mutate(ch: Chooser, case: Case) -> Change | None:
        vals = case.params.get(name)
        if vals is None:
            return None
        vals = list(vals)
        side: tuple[str, ...] = ()
        if how in ("neg", "big"):
            if not vals:
                return None
            if how == "neg":
                new = -ch.int(1, 4)
                i = ch.int(0, len(vals) - 1)
                vals[i] = new
            else:
                i = ch.int(0, len(vals) - 1)
                vals[i] += ch.int(1, 4) + max(vals) * 2 + 4096
            side = ("below" if how == "neg" else "above", *position(i, len(vals)))
        elif how == "count":
            b = _dim(_view(case), "B", len(vals))
            if b < 3:
                return None
            vals = (vals * b)[:ch.int(2, b - 1)]
            side = ("shorter",)
        elif how == "decreasing":
            if len(vals) < 2 or vals[0] == 0:
                return None
            vals = [vals[-1] + 1] + vals[1:]
            side = ("first",)
        elif how == "empty":
            vals = []
            side = ("shorter",)
        elif how == "extra":
            vals = [*vals, vals[-1] if vals else 0]
            side = ("longer",)
        elif how == "many":
            vals = vals + [vals[-1]] * (4097 - len(vals) + 1)
            side = ("longer",)
        return sided({name: vals}, *side)
    return mutate


def table(how: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        rows = case.params.get("block_table")
        if rows is None:
            return None
        if how == "narrow":
            if len(rows[0]) < 2 and all(r[0] == rows[0][0] for r in rows):
                return sided({"block_table": [r[:0] for r in rows]}, "shorter")
            return sided({"block_table": [r[:max(0, len(r) - 1)] for r in rows]}, "shorter")
        if how == "extra_row":
            return sided({"block_table": [*rows, list(rows[0])]}, "longer")
        if how == "drop_row":
            return sided({"block_table": rows[:-1]}, "shorter") if len(rows) > 1 else None
        if how == "flat":
            return sided({"block_table": [x for r in rows for x in r]}, "shorter")
        return None
    return mutate


def kv_list(how: str) -> Mutation:
    def mutate(ch: Chooser, case: Case) -> Change | None:
        k, v = case.params.get("key"), case.params.get("value")
        if not isinstance(k, list) or not isinstance(v, list):
            return None
        if how == "drop":
            if len(k) < 2:
                return None
            return sided({"key": k[:-1], "value": v[:-1]}, "shorter")
        if how == "extra":
            return sided({"key": [*k, k[-1]], "value": [*v, v[-1]]}, "longer")
        if how == "batch2":
            k2 = [TensorSpec((2, *k[0].shape[1:]), k[0].dtype), *k[1:]]
            v2 = [TensorSpec((2, *v[0].shape[1:]), v[0].dtype), *v[1:]]
            return sided({"key": k2, "value": v2}, "above", "first")
        if how == "d":
            return sided({"value": [TensorSpec((*v[0].shape[:-1], v[0].shape[-1] + 16),
                                               v[0].dtype), *v[1:]]}, "above", "first")
        return None
    return mutate


def _build() -> dict[str, Mutation]:
    out: dict[str, Mutation] = {}
    for name in ATTR_VALUES:
        out[f"attr:{name}"] = attr(name)
    for name in TENSOR_ARGS:
        out[f"dtype:{name}"] = dtype(name)
        out[f"drop:{name}"] = drop(name)
        out[f"add:{name}"] = add(name)
        out[f"rank_up:{name}"] = rank(name, "up")
        out[f"rank_down:{name}"] = rank(name, "down")
        for pos in (0, 1, -1, -2, -3):
            for how in ("+1", "+16", "-1", "x2", "=1", "=3", "=2048", "x8", "/8"):
                out[f"axis:{name}:{pos}:{how}"] = axis(name, pos, how)
    for a, b in args.partners():
        out[f"pair_dtype:{a}"] = pair_dtype(a, b)
        for pos in (0, 1, -1, -2):
            for how in ("+1", "+16", "x2", "=1", "=3", "x8", "/8"):
                out[f"pair_axis:{a}:{pos}:{how}"] = axis(a, pos, how, also=b)
    for name in VALUE_ARGS_INT:
        out[f"drop:{name}"] = drop(name)
        out[f"add:{name}"] = add(name)
        for how in ("neg", "big", "count", "decreasing", "empty", "many", "extra"):
            out[f"values:{name}:{how}"] = values(name, how)
    out["drop:block_table"] = drop("block_table")
    out["add:block_table"] = add("block_table")
    for how in ("narrow", "extra_row", "drop_row", "flat"):
        out[f"table:{how}"] = table(how)
    for how in ("drop", "extra", "batch2", "d"):
        out[f"kv_list:{how}"] = kv_list(how)
    return out


MUTATIONS: dict[str, Mutation] = _build()
