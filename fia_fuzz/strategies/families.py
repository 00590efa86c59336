"""The six families of legal calls, each drawn in dependency order.

The op's documented feature matrix splits into families whose features
combine freely inside and hardly across (fia-semantics.md, V4 §约束说明):
- dense: float q/k/v in BSH/BSND/BNSD(_BSND), with every optional input
  (masks, pse, lengths, left padding, paged or tensor-list KV, prefix,
  post-quant, sink, lse);
- antiquant: float query with int8/int4 KV (combined and separate params);
- full_quant: int8 q/k/v with dequant scales (prefill);
- packed: TND / NTD_TND (bf16, D 128/192, Dv may differ, MLA rope D 128);
- mla: query D 512 with rope, paged KV mandatory (incl. 5-D NZ) and NBSD output,
  float or fully quantised (int8 q/k/v, bf16 rope);
- gqa_nz: bf16 query over int8 5-D NZ caches without rope (its own constraint table).
FAMILY_SCOPE lists, per family, the feature values it can reach, so filters
pick only families that can honour them: the core features here, each optional
argument's from its module in `fia_fuzz/op/args/` (the families that may carry
it, and its draw, which the families call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fia_fuzz.op import args
from fia_fuzz.op.args import pse
from fia_fuzz.op.args import rope as rope_arg
from fia_fuzz.op.features import VALUES
from fia_fuzz.op.geometry import dense_shape, packed_shape
from fia_fuzz.rules.profiles.a2_routes import dispatch
from fia_fuzz.rules.profiles.a2_routes.dispatch import V3_GQA_DIMS
from fia_fuzz.rules.rulebook.antiquant import INT4_MODES
from fia_fuzz.rules.rulebook.mla import MLA_HEADS, MLA_TND_HEADS
from fia_fuzz.rules.rulebook.nz import NZ_BLOCK_SIZES, NZ_D, NZ_HEADS, NZ_LAYOUTS
from fia_fuzz.rules.rulebook.nz import per_channel_shape as nz_scale_shape
from fia_fuzz.rules.rulebook.prefix import COMBINED_PER_TOKEN_MODES, PER_TOKEN_MODES
from fia_fuzz.rules.rulebook.tnd import HEAD_DIMS as TND_HEAD_DIMS
from fia_fuzz.rules.rulebook.tnd import ROPE_HEAD_DIMS as TND_ROPE_HEAD_DIMS
from fia_fuzz.strategies import masks, paged, quant, sizes
from fia_fuzz.strategies.choices import Dead
from fia_fuzz.strategies.draft import (
    Draft,
    aim_units,
    batch_cap,
    effective,
    empty_batch_lo,
    empty_batches,
    g_class,
    heads,
    kv_len,
    lengths,
    numel_allows,
    q_seq_bounds,
    s1_cap,
    s2_cap,
    spec,
    wants_empty,
    weighted,
)
from fia_fuzz.strategies.tail import common_tail
from fia_fuzz.strategies.workloads import OWN, mla_pattern, workloads

FLOAT = ("float16", "bfloat16")
GROUPS = (1, 2, 4, 8, 3, 5, 6, 16, 12, 32, 64)
LENGTH_FORMS = ("absent", "one", "per_batch", "longer")
#: Feature values an empty query or S2 = 0 case carries: no tensor-list KV, and each
#: argument's `empty` values (op/args: none of the optional inputs but post-quant, which
#: an empty KV may take without an offset).
EMPTY_OK: args.DerivedDict = args.DerivedDict(
    lambda: {"kv_list": False, **args.empty_features()})

#: The op/forms.py pattern of the NZ per-channel scale shape of each query layout.
NZ_CHANNEL_FORMS = {"BSH": "H", "BNSD": "N,1,D", "BSND": "N,D"}

#: Per family, the core feature values it can reach; FAMILY_SCOPE adds each argument's
#: (op/args: the families that may carry it, and the values each reaches).
CORE_SCOPE: dict[str, dict[str, tuple[Any, ...]]] = {
    "dense": {"q_dtype": FLOAT, "kv_dtype": FLOAT, "dv": ("equal",),
              "layout": ("BNSD", "BSND", "BSH", "BNSD_BSND"),
              "workload": ("none", "paged_decode_bsh", "paged_decode_bnsd", "sliding_band")},
    "antiquant": {"q_dtype": FLOAT, "kv_dtype": ("int8", "int4", "int32"),
                  "layout": ("BNSD", "BSND", "BSH", "BNSD_BSND"), "kv_list": (False,),
                  "empty": ("none",), "plain": (False,), "dv": ("equal",),
                  "workload": ("none", "int8_kv_decode")},
    "full_quant": {"q_dtype": ("int8",), "kv_dtype": ("int8",), "kv_list": (False,),
                   "branch": ("prefill",), "empty": ("none",), "plain": (False,),
                   "layout": ("BNSD", "BSND", "BSH", "BNSD_BSND"), "dv": ("equal",),
                   "workload": ("none",), "values": ("finite",)},  # int8 query: no specials
    "packed": {"q_dtype": ("bfloat16",), "kv_dtype": ("bfloat16",), "layout": ("TND", "NTD_TND"),
               "kv_list": (False,), "branch": ("prefill",), "plain": (False,),
               "empty": ("none", "kv"),
               "workload": ("none", "vllm_prefill", "vllm_chunked", "vllm_prefix_hit",
                            "vllm_decode"),
               # packed lengths leave no padding rows or columns (strategies/values.py)
               "values": tuple(v for v in VALUES if not v.endswith("_padding"))},
    "mla": {"q_dtype": FLOAT + ("int8",), "kv_dtype": FLOAT + ("int8",), "kv_list": (False,),
            "plain": (False,), "empty": ("none",),
            "layout": ("BNSD", "BSND", "BSH", "TND", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD",
                       "TND_NTD"), "dv": ("equal",), "q_seq": ("1", "2-16"),
            "workload": ("none", "mla_decode", "mla_mtp"),
            # a paged block of 128 tokens of D 512 is 2^16 elements already
            "numel_class": ("2^16", "2^24", "2^31", "2^32")},
    "gqa_nz": {"q_dtype": ("bfloat16",), "kv_dtype": ("int8",), "layout": NZ_LAYOUTS,
               "d_class": ("64-128",), "dv": ("equal",), "q_seq": ("1", "2-16"),
               "kv_list": (False,), "empty": ("none",), "plain": (False,),
               "workload": ("none", "int8_kv_decode")},
    # production patterns (strategies/workloads.py): TND/BSH/BNSD over paged BnBsH caches
    "workloads": {"q_dtype": FLOAT, "kv_dtype": FLOAT, "layout": ("TND", "BSH", "BNSD"),
                  "d_class": ("64-128", "129-256"),
                  "kv_list": (False,), "plain": (False,), "empty": ("none",), "dv": ("equal",),
                  "workload": OWN},
}


def _scope() -> dict[str, dict[str, tuple[Any, ...]]]:
    own = args.family_scope(tuple(CORE_SCOPE))
    return {f: {**core, **own[f]} for f, core in CORE_SCOPE.items()}


FAMILY_SCOPE: args.DerivedDict = args.DerivedDict(_scope)


def _optional_args(dr: Draft, family: str, allowed: bool = True) -> None:
    """The draws of the arguments `family` may carry that draw where the optional inputs
    are drawn (op/args: `families`, `draw`); `allowed` False where the path carries none."""
    for a in args.ARGS.values():
        if a.draw is not None and not a.own_step and a.families and family in a.families:
            a.draw(dr, allowed)


def _layout(dr: Draft, options: tuple[str, ...]) -> None:
    if dr.ch.pins.get("cache") == "BnNBsD":    # only with a BNSD/TND query [V4 §PagedAttention]
        options = tuple(x for x in options if x in ("BNSD", "TND"))
    if "out_layout" in dr.ch.pins:    # implied by an output-shaped argument form (op/forms.py)
        options = tuple(x for x in options if x.split("_")[-1] == dr.ch.pins["out_layout"])
    dr.layout = dr.ch.pick("layout", options)
    parts = dr.layout.split("_")
    dr.q_layout = parts[0]
    dr.out_layout = parts[-1]


def _qkv_contiguous(dr: Draft, kv_d: int | None = None) -> None:
    """query and contiguous key/value in the query layout (int32 KV packs 8 int4 in D)."""
    dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, dr.d), dr.q_dtype))
    kd = kv_d or dr.d
    vd = kv_d or dr.dv
    dr.set("key", spec(dense_shape(dr.q_layout, dr.b, dr.kv_n, dr.s2, kd), dr.kv_dtype))
    dr.set("value", spec(dense_shape(dr.q_layout, dr.b, dr.kv_n, dr.s2, vd), dr.kv_dtype))


def _head_dims(dr: Draft, options: tuple[int, ...], s1_min: int, s2_min: int = 1) -> None:
    """D (= Dv) among `options` that fit N x S1 and KV_N x S2 within the budget (d_class pins)."""
    ch = dr.ch
    if ch.pinned("route", "v3.gqa"):  # the dims V3's GQA kernel has templates for
        options = tuple(d for d in options if (d, 0, d) in V3_GQA_DIMS) or options
    budget = dr.prof.max_elements // 2 // _batch_min(dr)
    fit = [d for d in options if dr.n * d * s1_min + dr.kv_n * s2_min * 2 * d <= budget] \
        or [min(options)]
    fit = [d for d in fit if ch.allows("d_class", _d_class(d))]
    dr.d = dr.dv = ch.pick("_d", fit)


#: Head dims of the dense family (shrink order)
DENSE_DIMS = (16, 32, 64, 128, 48, 80, 96, 256, 320, 512)


#: Float routes of the legacy kernels, which a V3 template's head dims would leave
LEGACY_FLOAT = ("ifa.float", "pfa.float")


def _dense_dims(dr: Draft) -> tuple[int, ...]:
    """DENSE_DIMS, steered by a route or route_edge filter (routes.aim pins the route) whose
    route needs some of them: int8 output (post_quant) a D of a multiple of 32, the V3 GQA
    kernel over a legacy layout one of its templates' (dispatch.V3_GQA_DIMS: else the
    legacy kernels take the call), the legacy float kernels (without a pse, which V3
    declines) another."""
    dims = DENSE_DIMS
    if dr.ch.pinned("post_quant", True) and "route" in dr.ch.pins:
        dims = tuple(d for d in dims if d % 32 == 0)
    if dr.layout in dispatch.LEGACY_GQA_LAYOUTS:
        v3 = {d for d in dims if (d, 0, d) in dispatch.V3_GQA_DIMS}
        if dr.ch.pinned("route", "v3.gqa"):
            dims = tuple(d for d in dims if d in v3)
        elif dr.ch.pins.get("route") in LEGACY_FLOAT and not dr.ch.pinned("pse", True):
            dims = tuple(d for d in dims if d not in v3)
    return dims


def _d_class(d: int) -> str:
    return "<64" if d < 64 else "64-128" if d <= 128 else "129-256" if d <= 256 \
        else "257-511" if d < 512 else "512"


def _max_heads(dr: Draft, s1_min: int, d_min: int) -> int:
    return max(1, min(dr.prof.max_heads,
                      dr.prof.max_elements // 2 // (s1_min * d_min * _batch_min(dr))))


def _batch_min(dr: Draft) -> int:
    """The least B a batch_class filter takes (1 without one): heads and head dims leave
    room in the budget for that many batches."""
    return sizes.CLASS_BATCHES[dr.ch.pins["batch_class"]][0] if "batch_class" in dr.ch.pins \
        else 1


def _q_class(dr: Draft, classes: tuple[str, ...], d_min: int = 16) -> tuple[str, int, int]:
    """A q_seq class and its query S range; under a numel_class filter only the classes whose
    shortest query of one head of D `d_min` fits it."""
    ch = dr.ch
    if "numel_class" in ch.pins:
        classes = tuple(c for c in classes if numel_allows(ch, q_seq_bounds(dr, c)[0] * d_min))
    if "q_rows" in ch.pins:  # the classes a q_rows filter's query lengths fall in
        classes = tuple(c for c in classes if _fits(sizes.narrow_query(ch, *q_seq_bounds(dr, c))))
    cls = ch.pick("q_seq", classes)
    lo, hi = sizes.narrow_query(ch, *q_seq_bounds(dr, cls))
    return cls, lo, hi


#: What a dense case on the V3 GQA route (a route filter) leaves out: the inputs that
#: kernel has no template for and an empty call (a2_routes dispatch.v3_gqa_fits).
V3_GQA_PINS: dict[str, Any] = {"pse_batch": "none", "q_padding": False, "kv_padding": False,
                               "prefix": False, "post_quant": False, "empty": "none"}


def _fits(span: tuple[int, int]) -> bool:
    return span[0] <= span[1]


def _branch(dr: Draft, options: tuple[str, ...]) -> str:
    """The branch, among `options` the one a query length filter (q_seq, q_rows) allows:
    decode has one query row."""
    span = sizes.query_span(dr.ch)
    if span is not None:
        options = tuple(b for b in options if (b == "decode") == (span[1] <= 1)) or options
    return dr.ch.pick("branch", options)


#: Decisions that make a dense case "plain" (no optional inputs at all).
PLAIN_PINS: dict[str, Any] = {
    "empty": "none", "kv_list": False, "paged": False, "post_quant": False, "prefix": False,
    "actual_q": "absent", "actual_kv": "absent", "q_padding": False, "kv_padding": False,
    "mask": "none", "_mask_on": False, "sparse_mode": 0, "pse_batch": "none", "sink": False,
}
PLAIN_LAYOUTS = ("BNSD", "BSND", "BSH")
#: Features whose value a plain case fixes although no decision of the dense path pins them.
PLAIN_IMPLIED: dict[str, Any] = {
    "mask_shape": "none", "mask_fill": "none", "mask_oversized": False, "pse": False,
    "post_quant_form": "none", "post_quant_offset": False, "prefix_len": "none",
    "act_zero": False, "cache": "none", "table_unused": False, "table_spare": False,
    "table_shuffled": False, "table_oversized": False, "table_width": "none",
    "block_edge": "none", "kv_quant_sym": "none",
}


def _kv_hi(dr: Draft) -> int:
    """The longest KV a draw may take: max_seq, long_seq beside a long query (S1 > 2048),
    long_kv for a long-KV draw."""
    return dr.prof.long_kv if dr.long else dr.prof.long_seq if dr.s1 > 2048 \
        else dr.prof.max_seq


def _optional_lengths(dr: Draft, feature: str, arg: str, full: int, lo: int = 0) -> None:
    """Draw `arg` (actual_seq_lengths or _kv) in any accepted form; set it unless absent."""
    values = lengths(dr, feature, [full] * dr.b, LENGTH_FORMS, lo)
    if values is not None:
        dr.set(arg, values)


# ---- dense -------------------------------------------------------------------------------
def dense(dr: Draft) -> None:
    """Float attention with every optional input the float path documents.

    A quarter of the draws are plain (no optional input), so backends that
    express only the core op still get a steady stream; the rest combine
    extras freely.
    """
    ch = dr.ch
    if ch.pinned("route", "v3.gqa"):
        ch.pins = {**V3_GQA_PINS, **ch.pins}
    can_plain = all(ch.allows(k, v) for k, v in {**PLAIN_PINS, **PLAIN_IMPLIED}.items()) \
        and ch.pins.get("layout", "BSH") in PLAIN_LAYOUTS and ch.pins.get("out_dtype") != "int8" \
        and not wants_empty(ch) and ch.pins.get("values") not in masks.MASKED_VALUES
    plain = ch.pick("plain", (True, False, False, False) if can_plain else (False,))
    if plain:
        ch.pins = {**ch.pins, **PLAIN_PINS}
    dr.q_dtype = ch.pick("q_dtype", FLOAT)
    dr.kv_dtype = ch.pick("kv_dtype", (dr.q_dtype,))
    # a paged-cache filter (paged.wanted) steers off the paths that exclude paging: an
    # empty tensor, left padding, tensor-list KV
    page_pinned = paged.wanted(dr) or ch.pinned("paged", True)
    wants_prefix = _wants_prefix(dr)  # a prefix excludes the same paths (and paging)
    page_pinned = page_pinned or wants_prefix
    empties = ["none"] * 6
    # (nor a `values` filter: an empty call carries only finite values)
    finite = ch.pins.get("values", "finite") == "finite"
    if not page_pinned and finite and all(ch.allows(k, v) for k, v in EMPTY_OK.items()):
        empties.append("kv")
        if ch.allows("q_seq", "0") and ch.allows("branch", "prefill"):
            empties.append("query")
    if ch.pinned("q_seq", "0"):
        empties = ["query"]
    empty = ch.pick("empty", tuple(empties))
    branch = _branch(dr, ("prefill",) if empty == "query" or masks.prefill_only(ch)
                     else ("prefill", "decode"))
    dr.decode = branch == "decode"
    cls, lo, hi = _q_class(dr, ("1",) if dr.decode else ("0",) if empty == "query"
                           else ("2-16", "17-2048", ">2048"))
    # BNSD_BSND needs Q_S > 1 [V4 inputLayout], so not for decode or an empty query
    _layout(dr, PLAIN_LAYOUTS if dr.decode or plain or empty == "query"
            else (*PLAIN_LAYOUTS, "BNSD_BSND"))
    # left padding first: it excludes paged and tensor-list KV, prefix and int8 output
    full = empty == "none"
    pad_q = ch.pick("q_padding", (False, True) if full and not dr.decode and not page_pinned
                    else (False,))
    pad_kv = ch.pick("kv_padding", (False, True) if full and not page_pinned else (False,))
    dr.padded = pad_q or pad_kv
    free = full and not dr.padded and not wants_prefix
    dr.kv_list = ch.pick("kv_list", (False, True) if free and not page_pinned else (False,))
    can_page = free and not dr.kv_list and not ch.pinned("actual_kv", "absent")
    dr.paged = ch.pick("paged", ((True,) if paged.wanted(dr) else (False, True)) if can_page
                       else (False,))
    if dr.paged:
        paged.reach(dr)
    # a paged S2 is at least one block and the unused columns (masks and pse span them)
    s2_floor = min(paged.block_sizes(dr, False)) * (1 + paged.MAX_UNUSED) if dr.paged else 1
    heads(dr, min(_max_heads(dr, max(1, lo), 16),
                  max(1, dr.prof.max_scores // (max(1, lo) * s2_floor))), GROUPS)
    _head_dims(dr, _dense_dims(dr), max(1, lo), s2_floor)
    dr.long = sizes.long_kv(ch, dr.n, _batch_lo(dr))
    dr.b = sizes.batch(ch, dr.n, _batch_lo(dr), batch_cap(dr, max(1, lo), s2_floor,
                                                          dr.prof.max_batch), dr.long,
                       kv_n=aim_units(dr),
                       wide=batch_cap(dr, max(1, lo), s2_floor, dr.prof.core_batch))
    dr.s1 = sizes.query_length(ch, lo, s1_cap(dr, lo, hi, s2_floor))
    s2_hi = _kv_hi(dr)
    s2max = s2_cap(dr, 1, s2_hi, dr.s1)
    # int8 output needs D % 32 == 0 [V4 约束说明 D轴限制]; an empty KV takes it too, and
    # decode with kv left padding (only prefill excludes it [V4 Q_S>1 INT8量化场景])
    # (nor for a filter that empties some batches' KV: int8 output needs lengths >= 1)
    post_ok = (full or empty == "kv") and (dr.decode or not dr.padded) and dr.d % 32 == 0 \
        and not wants_empty(ch) and ch.pins.get("values", "finite") == "finite"
    if post_ok and ch.pick("post_quant", (False, True, True)):
        quant.post_quant(dr, ("per_tensor", "per_channel"), empty_kv=empty == "kv")
    else:
        ch.pick("post_quant", (False,))
        quant.post_quant(dr, ("none",))
    lo_len = 1 if dr.int8_out else 0
    kv_caps: list[int]
    if dr.paged:
        bs = paged.block_size(dr, paged.block_sizes(dr, False))
        kv = lengths(dr, "actual_kv", [s2max] * dr.b, ("one", "per_batch", "longer"), lo_len)
        assert kv is not None
        dr.kv_lens = effective(kv, dr.b, [])
        paged.page(dr, ("BnBsH", "BnNBsD") if dr.layout == "BNSD" else ("BnBsH",), bs,
                   dr.kv_lens)
        dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, dr.d), dr.q_dtype))
        dr.set("actual_seq_lengths_kv", kv)
    else:
        dr.s2 = 0 if empty == "kv" else kv_len(dr, 1, s2max)
        if dr.kv_list:
            per = [kv_len(dr, 1, dr.s2, top=True) for _ in range(dr.b)]
            dr.s2 = max(per)
            dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, dr.d), dr.q_dtype))
            for name in ("key", "value"):
                dr.set(name, [spec(dense_shape(dr.q_layout, 1, dr.kv_n, s, dr.d), dr.kv_dtype)
                              for s in per])
            kv_caps = per
        else:
            _qkv_contiguous(dr)
            kv_caps = [dr.s2] * dr.b
        _prefix(dr, s2max)
        forms = LENGTH_FORMS[1:] if pad_kv else LENGTH_FORMS if full else ("absent",)
        kv = lengths(dr, "actual_kv", kv_caps, forms, lo_len)
        dr.kv_lens = effective(kv, dr.b, kv_caps)
        if kv is not None:
            dr.set("actual_seq_lengths_kv", kv)
    forms = LENGTH_FORMS[1:] if pad_q else LENGTH_FORMS if full else ("absent",)
    q = lengths(dr, "actual_q", [dr.s1] * dr.b, forms, min(lo_len, dr.s1))
    dr.q_lens = effective(q, dr.b, [dr.s1] * dr.b)
    if q is not None:
        dr.set("actual_seq_lengths", q)
    if pad_q:
        _padding(dr, "query_padding_size", dr.s1, dr.q_lens)
    if pad_kv:
        _padding(dr, "kv_padding_size", dr.s2, dr.kv_lens)
    if empty != "none":
        ch.pick("sparse_mode", (0,))
        masks.band(dr, ("default",))
        for name, value in (("mask", "none"), ("mask_shape", "none"), ("pse_batch", "none")):
            ch.pick(name, (value,))
        _optional_args(dr, "dense", allowed=False)
    else:
        if dr.decode:
            masks.decode_sparse(dr)
        else:
            masks.prefill_sparse(dr, (0, 1, 2, 4) if dr.int8_offset else (0, 1, 2, 3, 4))
        pse.draw(dr)
        _optional_args(dr, "dense")
    common_tail(dr, (1, 0) if dr.decode else (1, 0, 2, 3))


def _batch_lo(dr: Draft) -> int:
    """2 when a filter needs B > 1 to be told apart from the broadcast form (pse/mask "B")."""
    pins = dr.ch.pins
    needs_two = pins.get("pse_batch") == "B" or pins.get("mask_shape") in (
        "1,S1,S2", "1,1,S1,S2") or any(
        str(pins.get(f"{a}_form", "")).endswith(":B") for a in (
            "query_padding_size", "kv_padding_size"))
    return max(2 if needs_two else 1, empty_batch_lo(dr.ch))


def _wants_prefix(dr: Draft) -> bool:
    """True when a filter needs a shared prefix."""
    return dr.ch.pinned("prefix", True) or dr.ch.pins.get("prefix_len", "none") != "none"


def _prefix(dr: Draft, s2max: int, allowed: bool = True) -> None:
    """key/value_shared_prefix (batch 1, key layout and dtype, int32 packing 8 int4 in D)
    and actual_shared_prefix_len [SEM §6]."""
    ch = dr.ch
    ok = allowed and not dr.kv_list and not dr.paged and not dr.padded and dr.s2 > 0 \
        and dr.q_dtype != "int8"
    if not ch.pick("prefix", ((True,) if _wants_prefix(dr) else (False, True)) if ok
                   else (False,)):
        ch.pick("prefix_len", ("none",))
        ch.fixed("key_shared_prefix_form", "none")
        ch.fixed("actual_shared_prefix_len_form", "none")
        return
    ch.fixed("key_shared_prefix_form", dr.branch)
    len_form = ch.pins.get("actual_shared_prefix_len_form", "none")
    dr.prefix_s = ch.int(2 if len_form == "partial" else 1, max(2, s2max // 2))
    pack = 8 if dr.kv_dtype == "int32" else 1
    dr.set("key_shared_prefix", spec(dense_shape(dr.q_layout, 1, dr.kv_n, dr.prefix_s,
                                                 dr.d // pack), dr.kv_dtype))
    dr.set("value_shared_prefix", spec(dense_shape(dr.q_layout, 1, dr.kv_n, dr.prefix_s,
                                                   dr.dv // pack), dr.kv_dtype))
    if ch.pick("prefix_len", ("absent", "given") if len_form == "none" else ("given",)) \
            == "absent":
        ch.fixed("actual_shared_prefix_len_form", "none")
        return
    # 0 and the whole prefix are documented edges of 0 <= len <= prefix S [V2 prefix]
    forms = {"0": 0, "full": dr.prefix_s}
    if dr.prefix_s > 1:
        forms["partial"] = ch.int(1, dr.prefix_s - 1)
    dr.set("actual_shared_prefix_len", [dr.pick_form("actual_shared_prefix_len_form", forms)])


def _padding(dr: Draft, name: str, s: int, lens: list[int]) -> None:
    """Left padding: pad[b] with S - pad - act >= 0; shape (B) or (1); negatives count as 0."""
    ch = dr.ch
    if dr.pick_form(f"{name}_form", {f"{dr.branch}:1": True, f"{dr.branch}:B": False}):
        pads = [ch.int(-1, s - max(lens))]
    else:
        pads = [ch.int(-1, s - n) for n in lens]
    dr.set(name, pads)


# ---- antiquant ---------------------------------------------------------------------------
def antiquant(dr: Draft) -> None:
    """Float query, int8/int4 KV dequantised in the op [V4 §AntiQuant, SEM §7]."""
    ch = dr.ch
    int4 = ch.pins.get("kv_dtype") in INT4_FORMS   # int4 KV is decode-only here [V4 §AntiQuant]
    # decode twice as often: its forms hold twice the scale shapes (ANTIQUANT_WEIGHTS)
    # and only decode pages (a paged-cache filter: paged.wanted)
    branch = _branch(dr, ("decode",) if int4 or paged.wanted(dr)
                     else ("decode", "decode", "prefill"))
    dr.decode = branch == "decode"
    if dr.decode:
        _antiquant_decode(dr)
    else:
        _antiquant_prefill(dr)


#: Antiquant forms of decode: separate (key/value modes) and combined (antiquant_mode).
ANTIQUANT_DECODE_FORMS = ("separate:0/0", "combined:0", "separate:1/1", "combined:1",
                          "separate:2/2", "separate:3/3", "separate:4/4", "separate:5/5",
                          "separate:0/1")


def _position_free(form: str) -> bool:
    """Scales that do not depend on the token position: no per-token mode."""
    kind, modes = form.split(":")
    per_token = PER_TOKEN_MODES if kind == "separate" else COMBINED_PER_TOKEN_MODES
    return not any(int(m) in per_token for m in modes.split("/"))


#: Draw weight per antiquant form (default 1): about the number of scale shapes the form
#: splits into (quant.py), so each shape is about as common as a one-shape form.
ANTIQUANT_WEIGHTS = {"separate:0/0": 3, "combined:0": 4, "separate:0/1": 2}
#: The only antiquant forms a shared prefix may take (prefix.per_token_antiquant).
POSITION_FREE_FORMS = tuple(f for f in ANTIQUANT_DECODE_FORMS if _position_free(f))
#: int4 (true or int32-packed) KV: separate params, these modes (antiquant.int4_modes).
INT4_ANTIQUANT = tuple(f"separate:{k}/{v}" for k, v in INT4_MODES)
INT4_FORMS = ("int4", "int32")


def _pinned_forms(dr: Draft, forms: tuple[str, ...]) -> tuple[str, ...]:
    """The antiquant forms left when filters ask for int4 KV or a shared prefix."""
    pins = dr.ch.pins
    if pins.get("kv_dtype") in INT4_FORMS:
        forms = tuple(f for f in forms if f in INT4_ANTIQUANT)
    if pins.get("prefix") or pins.get("prefix_len", "none") != "none":
        forms = tuple(f for f in forms if f in POSITION_FREE_FORMS)
    return forms


def _antiquant_decode(dr: Draft) -> None:
    ch = dr.ch
    forms = weighted(_pinned_forms(dr, ANTIQUANT_DECODE_FORMS), ANTIQUANT_WEIGHTS)
    form = ch.pick("antiquant", forms)
    int4_ok = form in INT4_ANTIQUANT
    # paged caches take no int4 behind a float query [V4 §PagedAttention]
    pa_pinned = ch.pinned("paged", True) or paged.wanted(dr)
    kv_opts = ("int8", "int4", "int32") if int4_ok and not pa_pinned else ("int8",)
    dr.kv_dtype = ch.pick("kv_dtype", kv_opts)
    int8 = dr.kv_dtype == "int8"
    # the key-0/value-1 pair on int8 KV takes a float16 query only [V4 §AntiQuant row 3]
    fp16_only = form == "separate:0/1" and int8
    dr.q_dtype = ch.pick("q_dtype", ("float16",) if fp16_only else FLOAT)
    needs_pa = form in ("separate:4/4", "separate:5/5")
    needs_pa = needs_pa or paged.wanted(dr)
    page_ok = int8 and not _wants_prefix(dr)
    dr.paged = ch.pick("paged", (True,) if needs_pa else (False, True) if page_ok else (False,))
    if dr.paged and form not in ("separate:4/4", "separate:5/5"):  # PA-managed scales span
        paged.reach(dr)  # the whole cache, never lazy: those caches stay near
    ch.pick("q_seq", ("1",))
    _layout(dr, ("BNSD", "BSND", "BSH"))
    heads(dr, _max_heads(dr, 1, 64), GROUPS)
    s2_floor = min(paged.block_sizes(dr, True)) if dr.paged else 1
    _head_dims(dr, (64, 32, 128, 96, 256) if int8 else (64, 128, 256), 1, s2_floor)
    dr.long = sizes.long_kv(ch, dr.n)
    dr.b = sizes.batch(ch, dr.n, empty_batch_lo(ch),
                       batch_cap(dr, 1, s2_floor, dr.prof.max_batch), dr.long,
                       kv_n=aim_units(dr),
                       wide=batch_cap(dr, 1, s2_floor, dr.prof.core_batch))
    dr.s1 = 1
    s2max = s2_cap(dr, 1, _kv_hi(dr), 1)
    block_num = 0
    if dr.paged:
        bs = paged.block_size(dr, paged.block_sizes(dr, True))
        kv = lengths(dr, "actual_kv", [s2max] * dr.b, ("one", "per_batch", "longer"))
        assert kv is not None
        dr.kv_lens = effective(kv, dr.b, [])
        block_num = paged.page(dr, ("BnBsH", "BnNBsD") if dr.layout == "BNSD" else ("BnBsH",),
                               bs, dr.kv_lens)
        dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, 1, dr.d), dr.q_dtype))
        dr.set("actual_seq_lengths_kv", kv)
    else:
        dr.s2 = kv_len(dr, 1, s2max)
        _qkv_contiguous(dr, dr.d // 8 if dr.kv_dtype == "int32" else None)
        _prefix(dr, s2max, form in POSITION_FREE_FORMS)
        _optional_lengths(dr, "actual_kv", "actual_seq_lengths_kv", dr.s2)
    _optional_lengths(dr, "actual_q", "actual_seq_lengths", 1)
    offset = ch.pick("kv_quant_sym", ("sym", "asym")) == "asym"
    kind, modes = form.split(":")
    if kind == "combined":
        quant.combined(dr, int(modes), offset)
    else:
        km, vm = (int(x) for x in modes.split("/"))
        quant.separate_decode(dr, (km, vm), int8 and km == 0 and vm == 0, offset, block_num)
    masks.decode_sparse(dr)
    pse.draw(dr)
    common_tail(dr, (1, 0))


def _int8_kv_prefill_sizes(dr: Draft, cls: str, lo: int, hi: int) -> None:
    """Heads, D (int8-aligned), B, S1, S2 and contiguous q/k/v of an int8-KV prefill."""
    ch = dr.ch
    heads(dr, _max_heads(dr, lo, 32), GROUPS)
    _head_dims(dr, (64, 32, 128, 96, 256), lo)
    dr.long = sizes.long_kv(ch, dr.n)
    dr.b = sizes.batch(ch, dr.n, empty_batch_lo(ch),
                       batch_cap(dr, lo, 1, dr.prof.max_batch), dr.long,
                       kv_n=aim_units(dr),
                       wide=batch_cap(dr, lo, 1, dr.prof.core_batch))
    dr.s1 = sizes.query_length(ch, lo, s1_cap(dr, lo, hi))
    s2_hi = _kv_hi(dr)
    dr.s2 = kv_len(dr, 1, s2_cap(dr, 1, s2_hi, dr.s1))
    _qkv_contiguous(dr)


def _antiquant_prefill(dr: Draft) -> None:
    """Prefill: combined mode 0 (fp16 query) or separate 0/1 (bf16 query, Q_S <= 16) [V4]."""
    ch = dr.ch
    form = ch.pick("antiquant", weighted(_pinned_forms(dr, (
        "combined:0", "separate:0/0", "separate:1/1")), {"combined:0": 2, "separate:0/0": 2}))
    sep = form.startswith("separate")
    dr.q_dtype = ch.pick("q_dtype", ("bfloat16",) if sep else ("float16",))
    dr.kv_dtype = ch.pick("kv_dtype", ("int8",))
    ch.pick("paged", (False,))
    cls, lo, hi = _q_class(dr, ("2-16",) if sep else ("2-16", "17-2048", ">2048"), 32)
    _layout(dr, ("BNSD", "BSND", "BSH") if sep else ("BNSD", "BSND", "BSH", "BNSD_BSND"))
    _int8_kv_prefill_sizes(dr, cls, lo, hi)
    _prefix(dr, dr.s2, form in POSITION_FREE_FORMS)
    _optional_lengths(dr, "actual_kv", "actual_seq_lengths_kv", dr.s2)
    _optional_lengths(dr, "actual_q", "actual_seq_lengths", dr.s1)
    offset = ch.pick("kv_quant_sym", ("sym", "asym")) == "asym"
    if sep:
        quant.separate_prefill(dr, int(form[-1]), offset)
    else:
        quant.combined(dr, 0, offset)
    masks.prefill_sparse(dr)
    pse.draw(dr)
    common_tail(dr, (1, 0, 2, 3))


# ---- full int8 quant ---------------------------------------------------------------------
def full_quant(dr: Draft) -> None:
    """int8 q/k/v with per-tensor dequant scales; fp16 or int8 output [V4 §INT8, SEM §8]."""
    ch = dr.ch
    dr.q_dtype = ch.pick("q_dtype", ("int8",))
    dr.kv_dtype = ch.pick("kv_dtype", ("int8",))
    ch.pick("branch", ("prefill",))
    cls, lo, hi = _q_class(dr, ("2-16", "17-2048", ">2048"), 32)
    _layout(dr, ("BNSD", "BSND", "BSH", "BNSD_BSND"))
    _int8_kv_prefill_sizes(dr, cls, lo, hi)
    quant.full_quant_scales(dr)
    if ch.pick("post_quant", (False, True, True)):
        quant.post_quant(dr, ("per_tensor", "per_channel"))
    else:
        quant.post_quant(dr, ("none",))
    lo_len = 1 if dr.int8_out else 0
    _optional_lengths(dr, "actual_kv", "actual_seq_lengths_kv", dr.s2, lo_len)
    _optional_lengths(dr, "actual_q", "actual_seq_lengths", dr.s1, lo_len)
    masks.prefill_sparse(dr, (0, 1, 2, 4) if dr.int8_offset else (0, 1, 2, 3, 4))
    pse.draw(dr)
    common_tail(dr, (1, 0, 2, 3))


# ---- packed TND / NTD_TND ----------------------------------------------------------------
def packed(dr: Draft) -> None:
    """TND / NTD_TND: cumulative lengths, bf16, D 128 or 192 [V4 §TND]."""
    ch = dr.ch
    dr.q_dtype = ch.pick("q_dtype", ("bfloat16",))
    dr.kv_dtype = ch.pick("kv_dtype", ("bfloat16",))
    ch.pick("branch", ("prefill",))
    page_pinned = paged.wanted(dr) or ch.pinned("paged", True)
    rope = ch.pick("rope_d", ("none",) if page_pinned else ("none", "128")) == "128"
    _layout(dr, ("TND", "NTD_TND"))
    dims = TND_ROPE_HEAD_DIMS if rope else TND_HEAD_DIMS[dr.layout]
    want = ch.pins.get("dv")
    dims = tuple(x for x in dims if want is None or (want == "equal") == (x[0] == x[1]))
    if ch.pins.get("gqa", "mha") != "mha":  # V_D 192 takes G 1 only (groups below)
        dims = tuple(x for x in dims if x[1] != 192)
    if page_pinned:  # a paged-cache filter: only equal dims under 192 page (below)
        dims = tuple(x for x in dims if x[0] == x[1] != 192)
    dr.d, dr.dv = ch.pick("_dims", dims)
    # paged caches hold key and value in equal shapes [V4 §PagedAttention] and PA takes
    # no V_D 192 [V4 §TND], so only 128/128 pages
    no_pa = rope or dr.d != dr.dv or dr.dv == 192
    dr.paged = ch.pick("paged", (False,) if no_pa else (True,) if paged.wanted(dr)
                       else (False, True))
    if dr.paged:
        paged.reach(dr)
    groups = (1,) if dr.dv == 192 else GROUPS
    budget_heads = max(1, dr.prof.max_elements // 2 // (16 * (dr.d + 64)))
    if dr.paged:  # one 128-token block per batch (B >= 1) and spares must fit the budget too
        budget_heads = min(budget_heads, max(1, dr.prof.max_elements // (128 * 2 * dr.d * 4)))
    heads(dr, min(dr.prof.max_heads, budget_heads), groups)
    classes = ("2-16", "1", "17-2048")
    if "q_rows" in ch.pins:
        classes = tuple(c for c in classes
                        if _fits(sizes.narrow_query(ch, *sizes.Q_SEQ_SPAN[c])))
    cls = ch.pick("q_seq", classes)
    low, top = sizes.narrow_query(ch, {"1": 1, "2-16": 2, "17-2048": 17}[cls],
                                  {"1": 1, "2-16": 16, "17-2048": 2048}[cls])
    dr.long = sizes.long_kv(ch, dr.n)
    floor = 128 if dr.paged else 1
    dr.b = sizes.batch(ch, dr.n, empty_batch_lo(ch),
                       batch_cap(dr, low, floor, dr.prof.max_batch), dr.long,
                       kv_n=aim_units(dr), wide=batch_cap(dr, low, floor, dr.prof.core_batch))
    m = sizes.query_length(ch, low, s1_cap(dr, low, top))
    q_lens = [m] + [sizes.length(ch, 0, m, top=True, role="q") for _ in range(dr.b - 1)]
    dr.s1 = m
    mode = ch.pick("sparse_mode", masks.optimized_modes(dr, (0, 3)))
    s2max = s2_cap(dr, 1, _kv_hi(dr), m)
    if mode == 3:  # act_q <= act_kv; equal is the no-cache causal prefill [docs/rules.md 4]
        kv_lens = [kv_len(dr, q, max(q, s2max)) for q in q_lens]
    else:
        kv_lens = [kv_len(dr, 0, s2max, top=True) for _ in q_lens]
    if wants_empty(ch) and not dr.paged:  # a filter's empty batches, their queries too
        kv_lens = empty_batches(dr, kv_lens)
        q_lens = [min(q, k) if mode == 3 else q for q, k in zip(q_lens, kv_lens, strict=True)]
    ch.pick("actual_q", ("per_batch",))
    ch.pick("actual_kv", ("per_batch",))
    t_q = sum(q_lens)
    dr.set("actual_seq_lengths", _cumulative(q_lens))
    dr.set("query", spec(packed_shape(dr.q_layout, t_q, dr.n, dr.d), dr.q_dtype))
    if dr.paged:
        kv_lens = _non_decreasing(kv_lens)
        bs = paged.block_size(dr, (128, 512))
        paged.page(dr, ("BnBsH", "BnNBsD") if dr.layout == "TND" else ("BnBsH",), bs, kv_lens)
        dr.set("actual_seq_lengths_kv", kv_lens)
    else:
        t_kv = sum(kv_lens)
        dr.s2 = max(kv_lens)
        dr.set("key", spec(packed_shape(dr.q_layout, t_kv, dr.kv_n, dr.d), dr.kv_dtype))
        dr.set("value", spec(packed_shape(dr.q_layout, t_kv, dr.kv_n, dr.dv), dr.kv_dtype))
        dr.set("actual_seq_lengths_kv", _cumulative(kv_lens))
        if rope:
            rd = rope_arg.ROPE_D
            rope_arg.set_query(dr, packed_shape(dr.q_layout, t_q, dr.n, rd), dr.q_dtype)
            rope_arg.set_key(dr, packed_shape(dr.q_layout, t_kv, dr.kv_n, rd), dr.kv_dtype)
    if mode == 3:
        dr.set("sparse_mode", 3)
        masks.optimized_mask(dr)
    common_tail(dr, (1, 0, 2, 3))


def _cumulative(lens: list[int]) -> list[int]:
    out, total = [], 0
    for n in lens:
        total += n
        out.append(total)
    return out


def _non_decreasing(lens: list[int]) -> list[int]:
    """Paged TND KV lengths are per batch [V4 §TND]; non-decreasing values also read
    as valid cumulative offsets, so the draw is legal under either reading."""
    out, top = [], 0
    for n in lens:
        top = max(top, n)
        out.append(top)
    return out


# ---- MLA, query D 512 --------------------------------------------------------------------
#: MLA full quant: int8 q/k/v in 5-D NZ caches, bf16 rope; not BNSD with NZ, not TND
#: [TNPU v2 query d=512 全量化; V4 §TND (不支持...全量化)].
MLA_FULL_QUANT_LAYOUTS = ("BSH", "BSND", "BSND_NBSD", "BSH_NBSD")


def mla(dr: Draft) -> None:
    """Query D 512 + rope 64, KV_N 1, paged KV in BnBsH/BnNBsD/NZ [V4 §MLA]; with an int8
    query, full quant: int8 NZ caches, bf16 rope and dequant scales [TNPU v2 全量化]. Half
    the draws are DeepSeek's decode or MTP step (workloads.mla_pattern): bf16 or int8,
    N = 128 / TP, S1 1 without mask or 2..4 with the causal mask."""
    ch = dr.ch
    kind, prod_heads, (q_lo, q_hi) = mla_pattern(ch)
    fq_ok = ch.allows("cache", "NZ") and ch.pins.get("layout", "BSH") in MLA_FULL_QUANT_LAYOUTS
    q_opts = (() if ch.pinned("full_quant", True) else FLOAT) + (("int8",) if fq_ok else ())
    if kind != "none":
        q_opts = tuple(x for x in q_opts if x in ("bfloat16", "int8"))
    dr.q_dtype = ch.pick("q_dtype", q_opts)
    dr.kv_dtype = ch.pick("kv_dtype", (dr.q_dtype,))
    full_quant = dr.q_dtype == "int8"
    if not full_quant and not ch.pinned("cache", "NZ"):  # NZ caches are never lazy
        paged.reach(dr)
    rope_dtype = "bfloat16" if full_quant else dr.q_dtype
    layouts = MLA_FULL_QUANT_LAYOUTS if full_quant else FAMILY_SCOPE["mla"]["layout"]
    if ch.pinned("cache", "NZ"):  # MLA's 5-D caches not with BNSD/BNSD_NBSD [V4 §MLA]
        layouts = tuple(x for x in layouts if not x.startswith("BNSD"))
    decode = kind == "mla_decode" or (ch.pinned("branch", "decode") and "route" in ch.pins)
    if decode:  # decode: S1 = 1, so neither TND nor an NBSD output
        layouts = tuple(x for x in layouts if "TND" not in x and not x.endswith("NBSD"))
    _layout(dr, layouts)
    tnd = dr.q_layout == "TND"
    nbsd = dr.out_layout == "NBSD"
    classes = ("2-16",) if nbsd else ("1", "2-16")
    if kind != "none":
        classes = ("1",) if kind == "mla_decode" else ("2-16",)
    if decode:
        classes = tuple(c for c in classes if c == "1")
    cls, lo, hi = _q_class(dr, classes)
    if kind != "none":
        lo, hi = max(lo, q_lo), min(hi, q_hi)
    dr.decode = not tnd and cls == "1"
    ch.pick("branch", ("decode",) if dr.decode else ("prefill",))
    dr.d = dr.dv = 512
    per_head = 576 * lo
    table = tuple(n for n in (MLA_TND_HEADS if tnd else MLA_HEADS)
                  if not prod_heads or n in prod_heads)
    n_opts = tuple(n for n in table if n * per_head <= dr.prof.max_elements // 2) or table[:1]
    heads(dr, max(n_opts), n_opts, kv_fixed=1)
    dr.long = sizes.long_kv(ch, dr.n)
    dr.b = sizes.batch(ch, dr.n, empty_batch_lo(ch),
                       batch_cap(dr, lo, 1, dr.prof.max_batch), dr.long,
                       kv_n=aim_units(dr),
                       wide=batch_cap(dr, lo, 1, dr.prof.core_batch))
    dr.s1 = sizes.query_length(ch, lo, s1_cap(dr, lo, hi))
    s2max = s2_cap(dr, 1, _kv_hi(dr), dr.s1)
    if tnd:
        q_lens = [dr.s1] + [sizes.length(ch, lo, dr.s1, top=True, role="q")
                            for _ in range(dr.b - 1)]
        ch.pick("actual_q", ("per_batch",))
        kv_lens = _non_decreasing([kv_len(dr, q, max(q, s2max)) for q in q_lens])
        ch.pick("actual_kv", ("per_batch",))
        t_q = sum(q_lens)
        dr.set("actual_seq_lengths", _cumulative(q_lens))
        dr.set("query", spec(packed_shape("TND", t_q, dr.n, 512), dr.q_dtype))
        rope_arg.set_query(dr, packed_shape("TND", t_q, dr.n, rope_arg.ROPE_D), rope_dtype)
        kv: list[int] = kv_lens
    else:
        ch.pick("actual_q", ("absent",))
        kv_opt = lengths(dr, "actual_kv", [s2max] * dr.b, ("one", "per_batch", "longer"))
        assert kv_opt is not None
        kv = kv_opt
        kv_lens = effective(kv, dr.b, [])
        dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, 512), dr.q_dtype))
        rope_arg.set_query(dr, dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, rope_arg.ROPE_D),
                           rope_dtype)
    caches = ["BnBsH"]
    if dr.layout in ("BNSD", "TND"):
        caches.append("BnNBsD")
    if dr.q_layout != "BNSD":
        caches.append("NZ")
    if full_quant:
        block_num = paged.page(dr, ("NZ",), 128, kv_lens, (("key", 512), ("value", 512)))
        dr.set("key_rope", spec(paged.cache_shape("NZ", block_num, 128, 1, 64, rope_dtype),
                                rope_dtype))
        quant.mla_full_quant_scales(dr)
    else:
        paged.page(dr, tuple(caches), 128, kv_lens,
                   (("key", 512), ("value", 512), ("key_rope", 64)))
        ch.pick("deq_dtype", ("none",))
    dr.set("actual_seq_lengths_kv", kv)
    # TND allows only 0-without-mask and 3-with-mask, MLA (never decode in TND) 3/4 with
    # mask: TND takes 3 [V4 §TND, §MLA]
    modes = (3,) if tnd else (3, 4) if dr.s1 > 1 else (0, 4)
    if kind != "none":  # MTP's causal mask; a production decode has none
        modes = (3,) if kind == "mla_mtp" else (0,)
    mode = ch.pick("sparse_mode", modes)
    if mode == 0:
        for name in ("mask", "mask_shape"):
            ch.pick(name, ("none",))
        masks.band(dr, ("default",))
    else:
        dr.set("sparse_mode", mode)
        masks.optimized_mask(dr)
        if mode == 4:
            masks.band(dr)
        else:
            masks.band(dr, ("default",))
    ch.pick("lse", (False,))
    common_tail(dr, (1, 0), lse=(False,))


# ---- GQA antiquant over 5-D NZ caches ----------------------------------------------------
def gqa_nz(dr: Draft) -> None:
    """bf16 query, int8 KV in 5-D NZ caches, D 128, Q_S 1..16, the four documented
    (N, KV_N) pairs, block size 128/512, separate symmetric antiquant 0/0 or 1/1
    [V4 GQA/MHA/MQA伪量化场景下key/value shape为五维时的参数约束; rulebook/nz.py]."""
    ch = dr.ch
    dr.q_dtype = ch.pick("q_dtype", ("bfloat16",))
    dr.kv_dtype = ch.pick("kv_dtype", ("int8",))
    # a query past one row takes the optimized mask (sparse 3)
    small = not numel_allows(ch, masks.OPTIMIZED_NUMEL)
    cls, lo, hi = _q_class(dr, ("1",) if small else ("1", "2-16"))
    dr.decode = cls == "1"
    ch.pick("branch", ("decode",) if dr.decode else ("prefill",))
    _layout(dr, NZ_LAYOUTS)
    pairs = [p for p in NZ_HEADS if sizes.heads_cap(ch, p[0]) == p[0]
             and numel_allows(ch, min(NZ_BLOCK_SIZES) * p[1] * NZ_D)
             and ch.allows("g_class", g_class(p[0] // p[1]))
             and ch.allows("gqa", "mqa" if p[1] == 1 else "gqa")]
    if not pairs:
        raise Dead("no documented NZ head pair has the pinned GQA class")
    dr.n, dr.kv_n = ch.one(pairs)
    dr.d = dr.dv = NZ_D
    dr.long = sizes.long_kv(ch, dr.n)
    dr.b = sizes.batch(ch, dr.n, empty_batch_lo(ch),
                       batch_cap(dr, lo, min(NZ_BLOCK_SIZES), dr.prof.max_batch),
                       dr.long,
                       kv_n=aim_units(dr),
                       wide=batch_cap(dr, lo, min(NZ_BLOCK_SIZES), dr.prof.core_batch))
    dr.s1 = sizes.query_length(ch, lo, s1_cap(dr, lo, hi))
    s2max = s2_cap(dr, 1, _kv_hi(dr), dr.s1)
    bs = paged.block_size(dr, NZ_BLOCK_SIZES)
    kv = lengths(dr, "actual_kv", [s2max] * dr.b, ("one", "per_batch", "longer"))
    assert kv is not None
    dr.kv_lens = effective(kv, dr.b, [])
    paged.page(dr, ("NZ",), bs, dr.kv_lens)
    dr.set("query", spec(dense_shape(dr.q_layout, dr.b, dr.n, dr.s1, dr.d), dr.q_dtype))
    dr.set("actual_seq_lengths_kv", kv)
    _optional_lengths(dr, "actual_q", "actual_seq_lengths", dr.s1, 1)
    ch.pick("kv_quant_sym", ("sym",))
    # symmetric: per-channel bf16, or per-token fp32 (B, >= table width x block size)
    # per channel thrice as often: its scale takes one of three shapes (one per layout)
    if ch.pick("antiquant", weighted(("separate:0/0", "separate:1/1"), {"separate:0/0": 3})) \
            == "separate:0/0":
        quant.separate_same(dr, {NZ_CHANNEL_FORMS[dr.q_layout]: nz_scale_shape(
            dr.q_layout, dr.kv_n, dr.d)}, "bfloat16", 0)
    else:
        quant.separate_same(dr, {"B,S2": (dr.b, dr.s2 + ch.int(0, 8))}, "float32", 1)
    if dr.decode:
        for name, value in (("sparse_mode", 0), ("mask", "none"), ("mask_shape", "none")):
            ch.pick(name, (value,))
    else:
        dr.set("sparse_mode", ch.pick("sparse_mode", (3,)))
        masks.optimized_mask(dr)
    masks.band(dr, ("default",))
    ch.pick("pse", (False,))
    common_tail(dr, (1,))
    dr.set("inner_precise", 1)


FAMILIES: dict[str, Callable[[Draft], None]] = {
    "dense": dense, "antiquant": antiquant, "full_quant": full_quant, "packed": packed,
    "mla": mla, "gqa_nz": gqa_nz, "workloads": workloads,
}
