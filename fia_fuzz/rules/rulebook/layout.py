"""input_layout and the tensor shapes it implies [V4 参数说明 inputLayout, SEM §2]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import DEVICE_ONLY_LAYOUTS, LAYOUTS
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T

NBSD_LAYOUTS = ("BSH_NBSD", "BSND_NBSD", "BNSD_NBSD")
DOC_LAYOUTS = tuple(lay for lay in LAYOUTS if lay not in DEVICE_ONLY_LAYOUTS)


@rule("layout.known", "input_layout is one of the documented layouts",
      src("V4", "参数说明 inputLayout"))
def layout_known(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if not isinstance(lay, str):
        return None
    if lay not in DOC_LAYOUTS:
        return f"input_layout={lay!r} not in {sorted(DOC_LAYOUTS)}"
    return None


@rule("layout.query_rank", "query has the rank of its layout (BSH/TND/NTD 3, BSND/BNSD 4)",
      src("V4", "参数说明 inputLayout"))
def layout_query_rank(c: CallView) -> str | None:
    q = c.spec("query")
    if q is None:
        return None
    lay = c.in_layout
    if q.ndim != len(lay):
        return f"query.shape={list(q.shape)} has rank {q.ndim}, layout {lay} needs {len(lay)}"
    return None


@rule("layout.bsh_h_divisible", "BSH query hidden size H is a multiple of num_heads",
      src("V4", "参数说明 numHeads"))
def layout_bsh_h_divisible(c: CallView) -> str | None:
    q = c.spec("query")
    if q is None or c.in_layout != "BSH" or q.ndim != 3:
        return None
    if q.shape[2] % c.N:
        return f"query H={q.shape[2]} is not a multiple of num_heads={c.N}"
    return None


@rule("layout.query_heads", "the query's N axis equals num_heads",
      src("V4", "参数说明 numHeads"))
def layout_query_heads(c: CallView) -> str | None:
    d = c.q_dims
    if d["N"] != c.N:
        return f"query has N={d['N']} heads, num_heads={c.N}"
    return None


@rule("layout.kv_rank", "contiguous key/value have the rank of the layout",
      src("V4", "参数说明 inputLayout"))
def layout_kv_rank(c: CallView) -> str | None:
    if c.paged:
        return None
    lay = c.in_layout
    for name in ("key", "value"):
        for t in c.spec_list(name):
            if t.ndim != len(lay):
                return (f"{name}.shape={list(t.shape)} has rank {t.ndim}, "
                        f"layout {lay} needs {len(lay)}")
    return None


@rule("layout.kv_batch", "contiguous key/value batch equals the query batch",
      src("V4", "参数说明 key/value"))
def layout_kv_batch(c: CallView) -> str | None:
    if c.paged or c.packed or c.is_kv_list:
        return None
    kb, vb, qb = c.kv_dims["B"], c.v_dims["B"], c.q_dims["B"]
    if kb != qb or vb != qb:
        return f"key B={kb}, value B={vb}, query B={qb}"
    return None


@rule("layout.kv_heads", "key/value have num_key_value_heads heads",
      src("V4", "参数说明 numKeyValueHeads"))
def layout_kv_heads(c: CallView) -> str | None:
    if c.paged:
        return None
    try:
        kd, vd = c.kv_dims, c.v_dims
    except Undetermined:
        k = c.need("key")   # value may be the malformed one: blame key only when it is wrong
        if c.in_layout == "BSH" and k.ndim == 3 and k.shape[-1] * c.kv_pack % c.KV_N:
            return (f"key H={k.shape[-1] * c.kv_pack} is not a multiple of "
                    f"num_key_value_heads={c.KV_N}")
        raise
    if kd["N"] != c.KV_N or vd["N"] != c.KV_N:
        return f"key N={kd['N']}, value N={vd['N']}, num_key_value_heads={c.KV_N}"
    return None


@rule("layout.kv_seq_match", "key and value have the same sequence length",
      src("V4", "参数说明 key/value (shape 需要完全一致)"))
def layout_kv_seq_match(c: CallView) -> str | None:
    if c.paged or c.is_kv_list:
        return None
    kd, vd = c.kv_dims, c.v_dims
    key = "T" if c.packed else "S"
    if kd[key] != vd[key]:
        return f"key {key}={kd[key]} != value {key}={vd[key]}"
    return None


@rule("layout.qk_head_dim", "key head dim D equals the query's",
      src("V4", "参数说明 key/value"))
def layout_qk_head_dim(c: CallView) -> str | None:
    if c.paged:
        return None
    if c.kv_dims["D"] != c.D:
        return f"key D={c.kv_dims['D']} != query D={c.D}"
    return None


@rule("layout.value_head_dim",
      "value D equals query/key D, except MLA rope and the packed-layout D combinations",
      src("V4", "参数说明 key/value (shape 需要完全一致); TND 综合限制"))
def layout_value_head_dim(c: CallView) -> str | None:
    if c.paged or c.rope or c.packed:
        return None
    if c.v_dims["D"] != c.D:
        return f"value D={c.v_dims['D']} != query D={c.D} without query_rope/key_rope"
    return None


@rule("layout.bnsd_bsnd_prefill", "BNSD_BSND is a prefill layout (Q_S > 1)",
      src("V4", "参数说明 inputLayout (Q_S>1: BSH、BSND、BNSD、BNSD_BSND)"))
def layout_bnsd_bsnd_prefill(c: CallView) -> str | None:
    if c.attrs["input_layout"] == "BNSD_BSND" and c.S1 <= 1:
        return f"input_layout='BNSD_BSND' needs Q_S > 1, got Q_S={c.S1}"
    return None


@rule("layout.nbsd_seq", "the *_NBSD output layouts need 1 < Q_S <= 16",
      src("V4", "参数说明 inputLayout (1<Q_S<=16: BSH_NBSD、BSND_NBSD、BNSD_NBSD)"))
def layout_nbsd_seq(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if lay in NBSD_LAYOUTS and not 1 < c.S1 <= 16:
        return f"input_layout={lay!r} needs 1 < Q_S <= 16, got Q_S={c.S1}"
    return None


@rule("layout.nbsd_rope", "the *_NBSD output layouts are MLA (query_rope/key_rope) layouts",
      src("V4", "MLA场景 query d=512 inputLayout; SEM §2"))
def layout_nbsd_rope(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if lay in NBSD_LAYOUTS and not c.rope:
        return f"input_layout={lay!r} without query_rope/key_rope"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("layout.known", "prefill", {"input_layout": "XYZ"}),
    ("layout.query_rank", "prefill", {"query": T(2, 8, 256)}),
    ("layout.bsh_h_divisible", "decode", {"query": T(2, 1, 8 * 64 + 4)}),
    ("layout.query_heads", "prefill", {"query": T(2, 4, 4, 64)}),
    ("layout.kv_rank", "prefill", {"key": T(2, 32, 64), "value": T(2, 32, 64)}),
    ("layout.kv_batch", "prefill", {"key": T(3, 2, 16, 64), "value": T(3, 2, 16, 64)}),
    ("layout.kv_heads", "prefill", {"key": T(2, 4, 16, 64), "value": T(2, 4, 16, 64)}),
    ("layout.kv_heads", "decode", {"key": T(2, 16, 2 * 64 + 1), "value": T(2, 16, 2 * 64 + 1)}),
    ("layout.kv_seq_match", "prefill", {"value": T(2, 2, 24, 64)}),
    ("layout.qk_head_dim", "prefill", {"key": T(2, 2, 16, 128)}),
    ("layout.value_head_dim", "prefill", {"value": T(2, 2, 16, 128)}),
    ("layout.bnsd_bsnd_prefill", "decode",
     {"query": T(2, 8, 1, 64), "key": T(2, 2, 16, 64), "value": T(2, 2, 16, 64),
      "input_layout": "BNSD_BSND"}),
    ("layout.nbsd_seq", "mla_nz", {"query": T(1, 1, 8, 512), "query_rope": T(1, 1, 8, 64),
                                   "sparse_mode": 4}),
    ("layout.nbsd_rope", "prefill", {"input_layout": "BNSD_NBSD"}),
]
