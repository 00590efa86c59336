"""`atlas-a2`: the Atlas A2 device's own argument checks over the documented rules.

One rule per row of device-a2.md (ids `a2.*`, row number in the summary),
each citing the device check it comes from. Rows that depend on the code
route state the route's conditions through `split_fuse_route` and
`old_decode_route`; every other A2 call takes the V3 route (device-a2.md,
"Where this comes from").
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import LAYOUTS
from fia_fuzz.rules.profiles.profile import Profile, register
from fia_fuzz.rules.rule import RULES, Rule, rule, src
from fia_fuzz.rules.rulebook.mask import OPTIMIZED_SHAPES, sparse_applies
from fia_fuzz.rules.rulebook.mla import MLA_HEADS
from fia_fuzz.rules.rulebook.paged import BLOCK_SIZE_MAX

NAME = "atlas-a2"
OWN: dict[str, Rule] = {}
#: the layouts only the device has: query BSH/BSND, output BNSD [device-a2.md row 4]
BNSD_OUT_LAYOUTS = ("BSH_BNSD", "BSND_BNSD")
#: the device's tree mask mode, with no documented arithmetic [row 3]
TREE_SPARSE = 9
#: the largest paged block of non-quant GQA on the V3 route [row 16]
BLOCK_SIZE_V3_MAX = 1024
#: the largest head dim of the TND split-fuse route
SPLIT_FUSE_D_MAX = 256
#: device memory (HBM) of one Atlas A2 NPU (Ascend 910B, 64 GB; the vendor's product
#: sheets, not the shared docs): what a campaign on the Ascend runners assumes a device
#: holds unless --device-memory says otherwise
DEVICE_MEMORY = 64 << 30


def _rule(id: str, summary: str, source: str):  # noqa: ANN202  (a decorator factory)
    return rule(id, summary, source, registry=OWN)


def _doc(rule_id: str, c: CallView) -> str | None:
    """A documented rule's verdict, for a device rule that keeps part of it."""
    return RULES[rule_id].check(c)


# ---- code routes (device-a2.md, "Where this comes from") -----------------------
def split_fuse_route(c: CallView) -> bool:
    """TND split-fuse ("FAI", CheckSpecConditions): a plain packed call (no rope, no
    quantisation) with sparse mode 0/3/4, inner_precise 0 unless MHA (N == KV_N),
    no post-quant and equal head dims of at most 256."""
    if not c.packed or c.rope or c.has("quant_scale2"):
        return False
    if c.need("query").dtype == "int8" or c.separate_antiquant or c.combined_antiquant:
        return False
    if c.attr_int("sparse_mode") not in (0, 3, 4):
        return False
    if c.G > 1 and c.attr_int("inner_precise") != 0:
        return False
    return c.D == c.Dk == c.Dv <= SPLIT_FUSE_D_MAX


def old_decode_route(c: CallView) -> bool:
    """The older decode route (incre_flash_attention): int8-KV antiquant decode, and
    MHA decode with D 256 (or D 80 with a shared prefix) without paging in BSH/BSND/BNSD."""
    if not c.decode:
        return False
    if c.need("key").dtype == "int8" and c.need("query").dtype != "int8":
        return True
    mha_d = c.D == 256 or (c.D == 80 and c.has("key_shared_prefix"))
    return c.G == 1 and not c.paged and c.attrs["input_layout"] in ("BSH", "BSND", "BNSD") \
        and mha_d


def _mla(c: CallView) -> bool:
    return c.rope and c.D == 512


def _non_quant_mla(c: CallView) -> bool:
    return _mla(c) and not c.mla_full_quant


# ---- row 1 ----------------------------------------------------------------------
@_rule("a2.precise_decode", "row 1: Q_S == 1 accepts inner_precise 0..3, except 0/1 only on "
       "the older decode route (int8-KV antiquant decode; MHA D 256, or D 80 with a prefix, "
       "unpaged BSH/BSND/BNSD)",
       src("A2-V3", "inner_precise range check 0..3; A2-IFA: precision mode should be 0 or 1"))
def _precise(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    if ip in (2, 3) and old_decode_route(c):
        return f"inner_precise={ip} with Q_S=1 on the older decode route (D={c.D}, " \
               f"G={c.G}, key {c.need('key').dtype}): precision mode should be 0 or 1"
    return None


# ---- row 2 ----------------------------------------------------------------------
@_rule("a2.sink_dtype", "row 2: learnable_sink is bfloat16 on the V3 route; the query's dtype "
       "on the TND split-fuse route, which also needs inner_precise 0",
       src("A2-V3", "learnable_sink checks; A2-FAI: sink dtype and innerPrecise 0"))
def _sink(c: CallView) -> str | None:
    t = c.spec("learnable_sink")
    if t is None:
        return None
    if split_fuse_route(c):
        q, ip = c.need("query").dtype, c.attr_int("inner_precise")
        if t.dtype != q or ip != 0:
            return f"learnable_sink {t.dtype} with inner_precise={ip} on the TND split-fuse " \
                   f"route: needs the query's dtype {q} and inner_precise 0"
        return None
    if t.dtype != "bfloat16":
        return f"learnable_sink.dtype={t.dtype!r} on the V3 route, expected 'bfloat16'"
    return None


# ---- row 3 ----------------------------------------------------------------------
@_rule("a2.sparse_range", "row 3: sparse_mode is 0..4 or 9 (the tree mask)",
       src("A2-V3", "sparse mode check (SPARSE_MODE_TREE 9)"))
def _sparse_range(c: CallView) -> str | None:
    mode = c.attr_int("sparse_mode")
    if sparse_applies(c) and not (0 <= mode <= 4 or mode == TREE_SPARSE):
        return f"sparse_mode={mode} is not one of 0..4 or 9"
    return None


@_rule("a2.sparse9", "row 3: sparse_mode 9 needs rope, a 1-D or 3-D atten_mask and Q_S <= KV_S",
       src("A2-V3", "tree mask checks (rope, mask dim 1 or 3, S1 <= S2)"))
def _sparse9(c: CallView) -> str | None:
    if not sparse_applies(c) or c.attr_int("sparse_mode") != TREE_SPARSE:
        return None
    m = c.spec("atten_mask")
    bad = []
    if not c.rope:
        bad.append("no query_rope/key_rope")
    if m is None or m.ndim not in (1, 3):
        bad.append(f"atten_mask {'absent' if m is None else list(m.shape)} (1-D or 3-D needed)")
    if c.S1 > c.S2:
        bad.append(f"Q_S={c.S1} > KV_S={c.S2}")
    return f"sparse_mode=9 with {', '.join(bad)}" if bad else None


# ---- row 4 ----------------------------------------------------------------------
@_rule("a2.layout_known", "row 4: input_layout is a documented layout, BSH_BNSD or BSND_BNSD",
       src("A2-V3", "layout checks (BSH_BNSD, BSND_BNSD)"))
def _layout_known(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if isinstance(lay, str) and lay not in LAYOUTS:
        return f"input_layout={lay!r} not in {sorted(LAYOUTS)}"
    return None


@_rule("a2.tnd_layouts", "row 4: packed layouts TND, NTD and NTD_TND; TND_NTD only for MLA "
       "(rope); query D 512 only TND/TND_NTD",
       src("A2-V3", "layout checks (NTD; TND_NTD rejected for GQA without MLA)"))
def _tnd_layouts(c: CallView) -> str | None:
    if not c.packed:
        return None
    lay = c.attrs["input_layout"]
    if c.D == 512:
        ok: tuple[str, ...] = ("TND", "TND_NTD")
    else:
        ok = ("TND", "NTD", "NTD_TND") + (("TND_NTD",) if c.rope else ())
    if lay not in ok:
        return f"input_layout={lay!r} with query D={c.D}{' and rope' if c.rope else ''}, " \
               f"expected one of {list(ok)}"
    return None


# ---- row 5 ----------------------------------------------------------------------
@_rule("a2.head_dims", "row 5: without rope, D 64 or 128 for BSH_BNSD, BSND_BNSD, NTD and "
       "NTD_TND, D 64/128/192 for TND (value D equal, or 128 with D 192; not 192 with "
       "GQA or paging); packed with rope 128/128/128",
       src("A2-V3", "per-layout head dim checks"))
def _head_dims(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if not (c.packed or lay in BNSD_OUT_LAYOUTS) or (c.packed and c.D == 512):
        return None
    if c.rope:
        return _doc("tnd.head_dims", c)
    allowed = (64, 128, 192) if lay == "TND" else (64, 128)
    if c.D not in allowed:
        return f"input_layout={lay!r} without rope: query D={c.D} not in {list(allowed)}"
    if not c.packed:
        return None
    vd = c.Dv
    ok = vd == c.D or (c.D == 192 and vd == 128)
    if ok and vd == 192 and (c.G > 1 or c.paged):
        ok = False
    if not ok:
        return f"input_layout={lay!r}: Q_D={c.D}, V_D={vd}, G={c.G}, paged={c.paged}"
    return None


# ---- row 6 ----------------------------------------------------------------------
@_rule("a2.mask_2d", "row 6: a 2-D atten_mask is rejected with rope or with qk-D != v-D",
       src("A2-V3", "mask shape checks (2-D mask with rope / unequal head dims)"))
def _mask_2d(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if m is None or m.ndim != 2:
        return None
    if c.rope:
        return f"2-D atten_mask {list(m.shape)} with query_rope/key_rope"
    if c.D != c.Dv:
        return f"2-D atten_mask {list(m.shape)} with qk-D={c.D} != v-D={c.Dv}"
    return None


# ---- row 7 ----------------------------------------------------------------------
@_rule("a2.band_sum", "row 7: pre_tokens + next_tokens >= 0",
       src("A2-V3", "pre_tokens/next_tokens check"))
def _band_sum(c: CallView) -> str | None:
    pre, nxt = c.attr_int("pre_tokens"), c.attr_int("next_tokens")
    return f"pre_tokens={pre} + next_tokens={nxt} < 0" if pre + nxt < 0 else None


# ---- row 8 ----------------------------------------------------------------------
@_rule("a2.value_head_dim", "row 8: value D may differ from query/key D in BSH/BSND/BNSD "
       "(and their BNSD-output forms) with sparse_mode 0, 2 or 3 only",
       src("A2-V3", "head dim checks (qk-D != v-D, sparse 0/2/3)"))
def _value_d(c: CallView) -> str | None:
    if c.paged or c.rope or c.packed or c.v_dims["D"] == c.D:
        return None
    mode = c.attr_int("sparse_mode")
    if mode not in (0, 2, 3):
        return f"value D={c.v_dims['D']} != query D={c.D} with sparse_mode={mode} " \
               f"(0, 2 or 3 only)"
    return None


# ---- rows 9, 10: non-quantised MLA -------------------------------------------------
@_rule("a2.mla_q_seq", "row 9: MLA D=512 query S (per batch for TND): 1..128 without "
       "quantisation, 1..16 with full quant",
       src("A2-V3", "MLA checks (non-quant Q_S <= 128)"))
def _mla_q_seq(c: CallView) -> str | None:
    if not _mla(c):
        return None
    top = 16 if c.mla_full_quant else 128
    lens = c.act_q if c.packed else [c.S1]
    bad = [s for s in lens if not 1 <= s <= top]
    return f"MLA D=512 with query lengths {bad[:4]} outside 1..{top}" if bad else None


@_rule("a2.mla_sparse", "row 9: non-quantised MLA D=512: sparse 0 without mask, 3/4 with the "
       "2048 mask, or 9; full quant as documented (mla.sparse)",
       src("A2-V3", "MLA checks (sparse modes 0, 3, 4, 9)"))
def _mla_sparse(c: CallView) -> str | None:
    if not _non_quant_mla(c):
        return _doc("mla.sparse", c)
    mode, m = c.attr_int("sparse_mode"), c.spec("atten_mask")
    if mode == TREE_SPARSE:
        return None
    ok = (mode == 0 and m is None) or (mode in (3, 4) and m is not None)
    if not ok:
        return f"MLA D=512 with sparse_mode={mode}, atten_mask " \
               f"{'given' if m is not None else 'absent'} (0 without mask, 3/4 with, or 9)"
    if m is not None and m.shape not in OPTIMIZED_SHAPES:
        return f"MLA D=512 atten_mask.shape={list(m.shape)} is not the 2048x2048 mask"
    return None


@_rule("a2.mla_num_heads", "row 10: MLA D=512: num_heads in 1,2,4,...,128 in every layout "
       "(TND included)",
       src("A2-V3", "MLA head count table (governs TND too)"))
def _mla_heads(c: CallView) -> str | None:
    if _mla(c) and c.N not in MLA_HEADS:
        return f"MLA D=512 with num_heads={c.N}, expected one of {list(MLA_HEADS)}"
    return None


# ---- row 11 ---------------------------------------------------------------------
@_rule("a2.empty_kv", "row 11: when every key/value tensor is empty the device accepts "
       "without further checks",
       src("A2-V3", "empty KV early return"))
def _empty_kv(c: CallView) -> str | None:
    ts = c.spec_list("key") + c.spec_list("value")
    if ts and all(t.numel == 0 for t in ts):
        return "every key/value tensor is empty"
    return None


# ---- rows 12-15: packed layouts --------------------------------------------------
@_rule("a2.tnd_sparse", "row 12: packed layouts: sparse 0 without mask, 3 with the mask, 4 "
       "(band, TND/NTD_TND) with the mask, or 9 with rope",
       src("A2-FAI", "sparse mode checks (TND/NTD_TND band, -next_tokens <= pre_tokens)"))
def _tnd_sparse(c: CallView) -> str | None:
    if not c.packed:
        return None
    mode, has = c.attr_int("sparse_mode"), c.has("atten_mask")
    lay = c.attrs["input_layout"]
    ok = (mode == 0 and not has) or (mode == 3 and has) \
        or (mode == 4 and has and lay in ("TND", "NTD_TND")) or (mode == TREE_SPARSE and c.rope)
    if not ok:
        return f"layout {lay!r} with sparse_mode={mode}, atten_mask " \
               f"{'given' if has else 'absent'}"
    return None


@_rule("a2.tnd_extras", "rows 14, 15: packed layouts: no left padding, tensor list, prefix, "
       "antiquant or full quant; pse_shift only on the split-fuse route; post-quant accepted",
       src("A2-FAI", "pse checks; A2-V3: pse is not supported when the inputLayout is TND"))
def _tnd_extras(c: CallView) -> str | None:
    if not c.packed:
        return None
    bad = [n for n, on in (
        ("left padding", c.left_padding), ("tensor list", c.is_kv_list),
        ("shared prefix", c.has("key_shared_prefix")),
        ("antiquant", c.separate_antiquant or c.combined_antiquant),
        ("int8 query", c.need("query").dtype == "int8"),
        ("pse_shift off the split-fuse route",
         c.has("pse_shift") and not split_fuse_route(c))) if on]
    return f"layout {c.attrs['input_layout']!r} with {bad}" if bad else None


@_rule("a2.tnd_post_quant", "row 15: packed post-quant: quant_scale2 of shape [1] or [N, Dv] "
       "(host checks pass; no TND int8-output kernel is registered)",
       src("A2-V3", "post-quant scale shape checks"))
def _tnd_post_quant(c: CallView) -> str | None:
    t = c.spec("quant_scale2")
    if t is None or not c.packed:
        return None
    if tuple(t.shape) not in ((1,), (c.N, c.Dv)):
        return f"packed quant_scale2.shape={list(t.shape)}, expected [1] or [{c.N}, {c.Dv}]"
    return None


# ---- row 16 ---------------------------------------------------------------------
@_rule("a2.block_size", "row 16: paged block_size: non-quant GQA D 64/128 a multiple of 16 in "
       "16..1024, other D prefill a multiple of 128 in 128..1024, decode <= 512; TND "
       "split-fuse a multiple of 16 <= 512; quantised KV as documented (<= 512, prefill x128)",
       src("A2-V3", "block size checks; A2-FAI: split-fuse block size"))
def _block_size(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if not c.paged or bs <= 0:
        return None
    if c.packed and split_fuse_route(c):
        if bs % 16 or bs > BLOCK_SIZE_MAX:
            return f"block_size={bs} on the TND split-fuse route: a multiple of 16 <= 512"
        return None
    quantised = c.need("key").dtype not in ("float16", "bfloat16") or c.rope
    if quantised:
        if bs > BLOCK_SIZE_MAX:
            return f"block_size={bs} > {BLOCK_SIZE_MAX} with quantised KV or rope"
        if not c.decode and bs % 128:
            return f"block_size={bs} with Q_S={c.S1} is not a multiple of 128"
        return None
    if c.D in (64, 128):
        if bs % 16 or bs > BLOCK_SIZE_V3_MAX:
            return f"block_size={bs} with D={c.D}: a multiple of 16 in 16..1024"
    elif not c.decode:
        if bs % 128 or bs > BLOCK_SIZE_V3_MAX:
            return f"block_size={bs} with D={c.D}, Q_S={c.S1}: a multiple of 128 in 128..1024"
    elif bs > BLOCK_SIZE_MAX:
        return f"block_size={bs} with D={c.D}, Q_S=1: at most {BLOCK_SIZE_MAX}"
    return None


NOTES = """### Decisions where device-a2.md is ambiguous

1. **Split-fuse route, "inner_precise 0 (non-MHA)"** is read as: inner_precise
   must be 0 unless N == KV_N; "equal head dims" as query D == key D == value D
   (<= 256); an int8 query or antiquant keeps a call off the route.
2. **Older decode route** (row 1): "int8-KV antiquant decode" means a float query
   with int8 key/value (int4 KV is not named, so it stays on V3); "MHA" means
   N == KV_N.
3. **Row 2**: on the split-fuse route the sink takes the query's dtype (TND
   queries are bfloat16, so bfloat16 everywhere in practice); the shape rule
   (`sink.shape`, (N,)) is the documented one.
4. **Row 4**: TND_NTD stays legal for MLA with query D 128 (rope), since only
   "GQA without MLA" is named; plain NTD follows NTD_TND's D table (row 5).
5. **Row 5/8**: packed value D is the query D, or 128 with query D 192 (the
   documented pairs); unequal D is not extended to paged KV (paged key and
   value caches keep one shape).
6. **Row 7** holds for every sparse mode (the table names no condition).
7. **Row 6** is read literally: any 2-D atten_mask, the (2048, 2048) template
   included, is rejected with rope or unequal D; such calls take the
   (1, 2048, 2048) or (1, 1, 2048, 2048) template, which the docs also allow.
8. **Row 9**: non-quantised MLA with sparse 0 takes no mask; full-quant MLA
   keeps every documented MLA rule (paging via `mla.full_quant_nz`, Q_S <= 16,
   masks).
9. **Row 11**: the argument rules (`args.*`) still apply before the shortcut;
   the golden model computes nothing for such calls (not drawn).
10. **Row 13**: "packed T equals the last cumulative length" is the documented
   `lengths.packed_total` (query and unpaged key/value), which this profile
   holds; only the act_q/act_kv comparison (`tnd.causal_lengths`) is dropped.
11. **Row 16**: "non-quant" means float16/bfloat16 key/value without rope;
    quantised KV and MLA keep the documented block limits. A packed call off
    the split-fuse route follows the V3 GQA limits.
12. **Sparse mode 9**: legal under this profile with rope, a 1-D or 3-D mask
    and Q_S <= KV_S; strategies never draw it and the golden model refuses it.
"""

PROFILE = register(Profile(
    NAME, "the Atlas A2 device's own argument checks (device-a2.md, sixteen rows)",
    own=OWN,
    removed={"tnd.causal_lengths": "row 13: the device does not compare act_q with act_kv "
                                   "(act_q > act_kv is accepted; rows without keys come out "
                                   "invalid)",
             "mla.paged_required": "row 9: non-quantised MLA does not need paged KV; full-quant "
                                   "MLA still does, through mla.full_quant_nz (5-D NZ caches "
                                   "are paged)"},
    replaced={
        "precise.decode_01": "a2.precise_decode",
        "sink.dtype": "a2.sink_dtype",
        "mask.sparse_mode_range": "a2.sparse_range",
        "layout.known": "a2.layout_known",
        "tnd.layout_by_d": "a2.tnd_layouts",
        "tnd.head_dims": "a2.head_dims",
        "layout.value_head_dim": "a2.value_head_dim",
        "mla.q_seq": "a2.mla_q_seq",
        "mla.sparse": "a2.mla_sparse",
        "mla.num_heads": "a2.mla_num_heads",
        "tnd.sparse": "a2.tnd_sparse",
        "tnd.no_extras": "a2.tnd_extras",
        "paged.block_size_max": "a2.block_size",
        "paged.block_size_prefill": "a2.block_size",
        "tnd.block_size": "a2.block_size",
    },
    added=("a2.sparse9", "a2.mask_2d", "a2.band_sum", "a2.tnd_post_quant"),
    accept_when="a2.empty_kv",
    notes=NOTES,
))
