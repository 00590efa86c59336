"""What a case exercises: the flat, report-ready features `case.features()` returns.

Raw sizes (B, N, S1, ...) sit beside bucketed axes (q_seq, g_class, ...) whose
values are the finite sets `fia-fuzz coverage` counts and `cases(**filters)`
pins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fia_fuzz.op import args, edges
from fia_fuzz.op.args import DerivedTuple, antiquant, pse
from fia_fuzz.op.call import CallView
from fia_fuzz.op.params import ALL_ARGS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.undetermined import Undetermined


class Case(Protocol):
    """What the features read of a case (op/case.py's `Case`, which imports this module to
    compute them, so this one names the case by what it reads instead of importing it)."""

    params: dict[str, Any]
    fills: dict[str, dict[str, Any]]

    def view(self) -> CallView: ...

    def attr(self, name: str) -> Any: ...

    def fill(self, name: str) -> dict[str, Any]: ...

    def device_bytes(self) -> int: ...


#: Features a higher layer decides (name of the group -> function of the case returning
#: features), filled when that layer is imported: the device route model
#: (`fia_fuzz.rules.profiles.a2_routes`: `route`, `route_edge`) lives in `rules`, which
#: the op layer cannot import. A group that cannot judge a case gives its features None.
DERIVED: dict[str, Callable[[Case], dict[str, Any]]] = {}


def _safe(fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except (Undetermined, KeyError, ValueError, TypeError):
        return default


def _bucket(x: int | None, edges: tuple[tuple[int, str], ...]) -> str | None:
    if x is None:
        return None
    for top, name in edges:
        if x <= top:
            return name
    return edges[-1][1]


def case_features(case: Case) -> dict[str, Any]:
    """Flat, report-ready features; `cases(**filters)` filters by these names.

    Raw sizes (B, N, S1, ...) sit beside bucketed axes (q_seq, g_class, ...)
    whose values are the finite sets the coverage command counts.
    """
    v = case.view()
    p = case.params
    q = v.spec("query")
    k = v.spec("key")
    b = _safe(lambda: v.B)
    s1 = _safe(lambda: v.S1)
    n = _safe(lambda: v.N)
    kv_n = _safe(lambda: v.KV_N)
    g = _safe(lambda: v.G)
    d = _safe(lambda: v.D)
    dv = _safe(lambda: _dv(case, v))
    decode = _safe(lambda: v.decode)
    out_dtype = _safe(lambda: v.out_dtype)
    feats: dict[str, Any] = {
        "layout": case.attr("input_layout"),
        "in_layout": _safe(lambda: v.in_layout),
        "out_layout": _safe(lambda: v.out_layout),
        "q_dtype": q.dtype if q else None,
        "kv_dtype": k.dtype if k else None,
        "out_dtype": out_dtype,
        "branch": None if s1 is None else ("decode" if decode else "prefill"),
        "q_seq": _bucket(s1, ((0, "0"), (1, "1"), (16, "2-16"), (2048, "17-2048"),
                              (1 << 62, ">2048"))),
        "B": b,
        "N": n,
        "KV_N": kv_n,
        "G": g,
        "gqa": None if g is None else ("mha" if g == 1 else "mqa" if kv_n == 1 else "gqa"),
        "g_class": _bucket(g, ((1, "1"), (8, "2-8"), (63, "9-63"), (64, "64"))),
        "S1": s1,
        "S2": _safe(lambda: v.S2),
        "D": d,
        "Dv": dv,
        "d_class": _bucket(d, ((63, "<64"), (128, "64-128"), (256, "129-256"),
                               (511, "257-511"), (512, "512"))),
        "dv": None if d is None or dv is None else ("equal" if d == dv else "unequal"),
        "kv_list": v.is_kv_list,
        "device_bytes": case.device_bytes(),
        "empty": _empty(q, s1, v),
        "q_dist": case.fill("query").get("dist") if q else None,
        "k_dist": case.fill("key").get("dist") if k else None,
        "v_dist": case.fill("value").get("dist") if p.get("value") is not None else None,
        "logits": _logits(case),
        "values": values_class(case.fills),
        # each optional argument's features (fia_fuzz/op/args/<module>.py)
        **args.classify(case, v),
    }
    feats["plain"] = _plain(case, feats)
    feats["view"] = "strided" if any(getattr(t, "strides", None) is not None
                                     for t in p.values()) else "contiguous"
    feats["workload"] = _safe(lambda: _workload(case, v, feats), "none")
    feats["size_edge"] = _safe(lambda: _size_edge(v, feats), "free")
    feats["numel_class"] = edges.numel_class(_largest_numel(p))
    feats["empty_share"] = _safe(lambda: edges.empty_share(v.act_kv or [v.S2]), "none")
    feats["batch_class"] = None if b is None else edges.batch_class(b)
    feats.update(args.argument_forms(case, v))
    for group in DERIVED:
        feats.update(derived(case, group))
    return feats


def derived(case: Case, group: str) -> dict[str, Any]:
    """The features of one DERIVED group alone ({} where it cannot judge the case): for a
    caller that needs those and not the rest, as a draw aiming at a route cell."""
    return _safe(lambda: DERIVED[group](case), {})


def _size_edge(v: CallView, f: dict[str, Any]) -> str:
    """op/edges.py's size_edge over S1, S2 (not for paged: a table width times the block
    size) and the per-request lengths."""
    lens = [f["S1"], *([] if f["paged"] else [f["S2"]]), *v.act_q, *v.act_kv]
    bn = f["B"] * f["N"] if f["B"] and f["N"] else None
    return edges.size_edge(bn, [x for x in lens if x is not None], v.act_kv)


def _largest_numel(params: dict[str, Any]) -> int:
    """Elements of the largest tensor argument (a lazy cache counts whole: the kernel
    addresses it so)."""
    return max((t.numel for v in params.values() if v is not None
                for t in (v if isinstance(v, list) else [v]) if isinstance(t, TensorSpec)),
               default=0)


#: Production call patterns (production-calls.md); strategies/workloads.py draws them.
WORKLOADS = ("none", "vllm_prefill", "vllm_chunked", "vllm_prefix_hit", "vllm_decode",
             "sliding_causal", "paged_decode_bsh", "paged_decode_bnsd", "sliding_band",
             "mla_decode", "mla_mtp", "int8_kv_decode")


_PAGED_FLOAT: dict[str, Any] = {"paged": True, "cache": "BnBsH", "rope_d": "none",
                                "kv_list": False, "empty": "none"}
_PLAIN_FLOAT: dict[str, Any] = {**_PAGED_FLOAT, "pse_batch": "none", "post_quant": False}
#: Per workload, feature values every case `_workload` names so takes (block_size is no
#: axis, but a feature a pin may steer): a workload filter pins them too, so every family
#: that can carry the workload is steered onto it rather than hitting it by chance.
WORKLOAD_PINS: dict[str, dict[str, Any]] = {
    **{f"paged_decode_{lay.lower()}": {**_PLAIN_FLOAT, "layout": lay, "branch": "decode",
                                       "block_size": 128} for lay in ("BSH", "BNSD")},
    **{w: {**_PAGED_FLOAT, "layout": "TND", "sparse_mode": 3}
       for w in ("vllm_prefill", "vllm_chunked", "vllm_prefix_hit", "vllm_decode")},
    "sliding_causal": {**_PAGED_FLOAT, "layout": "TND", "sparse_mode": 3, "band": "small"},
    "sliding_band": {**_PLAIN_FLOAT, "sparse_mode": 4, "band": "small"},
    "mla_decode": {"rope_d": "512", "paged": True, "branch": "decode"},
    "mla_mtp": {"rope_d": "512", "paged": True, "branch": "prefill", "sparse_mode": 3},
    "int8_kv_decode": {"branch": "decode", "kv_dtype": "int8"},
}


#: DeepSeek MLA per device: N = 128 / TP, TP 1..8 (production-calls.md, DeepSeek MLA).
MLA_PRODUCTION_HEADS = (16, 32, 64, 128)
#: Multi-token prediction decodes Q_S 2..4 query tokens with a causal mask (same page).
MTP_Q_S = (2, 3, 4)


def _workload(case: Case, v: CallView, f: dict[str, Any]) -> str:
    """The production pattern a case is an instance of, "none" for other calls."""
    if f["rope_d"] == "512":
        if f["N"] not in MLA_PRODUCTION_HEADS or not f["paged"]:
            return "none"
        if f["branch"] == "decode":
            return "mla_decode"
        return "mla_mtp" if f["S1"] in MTP_Q_S and f["sparse_mode"] == 3 else "none"
    if f["rope"]:
        return "none"
    if f["branch"] == "decode" and f["kv_dtype"] == "int8" and f["antiquant"] != "none" \
            and f["q_dtype"] in ("float16", "bfloat16"):
        return "int8_kv_decode"
    if f["layout"] == "TND" and f["cache"] == "BnBsH" and f["sparse_mode"] == 3:
        q, kv, bs = v.act_q, v.act_kv, int(case.attr("block_size"))
        if f["band"] == "small" and case.attr("next_tokens") == 0:
            return "sliding_causal"
        if all(x == 1 for x in q) and any(k > 1 for k in kv):
            return "vllm_decode"
        if q == kv:
            return "vllm_prefill"
        if all(k - x >= bs and (k - x) % bs == 0 for x, k in zip(q, kv, strict=False)):
            return "vllm_prefix_hit"
        return "vllm_chunked"
    if f["cache"] != "BnBsH" or f["pse"] or f["post_quant"] or f["q_dtype"] != f["kv_dtype"]:
        return "none"
    if f["branch"] == "decode" and f["layout"] in ("BSH", "BNSD") and f["block_size"] == 128:
        return f"paged_decode_{f['layout'].lower()}"
    if f["sparse_mode"] == 4 and f["band"] == "small" and case.attr("next_tokens") == 0:
        return "sliding_band"
    return "none"


def _dv(case: Case, v: CallView) -> int:
    """Value head dim, also for 5-D NZ caches, where the view does not derive it."""
    val = v.spec("value")
    if v.paged and val is not None and val.ndim == 5:
        return val.shape[2] * val.shape[4]
    return v.Dv


def _empty(q: TensorSpec | None, s1: int | None, v: CallView) -> str:
    if q is not None and q.numel == 0:
        return "query"
    s2 = _safe(lambda: v.S2)
    return "kv" if s2 == 0 else "none"


#: The `values` axis: where arithmetic breaks (docs/values.md). "finite" first (the shrink
#: order); NaN/Inf placed by region (op/specials.py); position-bias and antiquant
#: scale/offset specials; a fully masked
#: row; and regimes of finite fills (magnitudes that overflow fp16 Q.K^T and an unshifted
#: exp, subnormals, exact ties and rows of equal scores).
VALUES = ("finite", "nan_attended", "nan_masked", "nan_padding", "inf_attended",
          "inf_masked", "inf_padding", "pse_neg_inf", "pse_nan", "antiquant_nan",
          "antiquant_inf", "masked_row", "overflow", "subnormal", "ties")
#: A fill's label of the finite regime it was drawn for (no effect on its values).
REGIME = "regime"


def values_class(fills: dict[str, dict[str, Any]]) -> str:
    """The `values` axis value of a case's fills."""
    for name in ("query", "key", "value"):
        f = fills.get(name, {})
        special = f.get("special")
        if special in ("nan", "inf", "-inf"):
            return f"{'nan' if special == 'nan' else 'inf'}_{f.get('where', 'attended')}"
    special = fills.get(pse.NAME, {}).get("special")
    if special in ("nan", "-inf"):
        return "pse_nan" if special == "nan" else "pse_neg_inf"
    for name in antiquant.TENSORS:
        special = fills.get(name, {}).get("special")
        if special in ("nan", "inf", "-inf"):
            return "antiquant_nan" if special == "nan" else "antiquant_inf"
    if fills.get("atten_mask", {}).get("special") == "full_row":
        return "masked_row"
    for f in fills.values():
        if f.get(REGIME) in VALUES:
            return str(f[REGIME])
    return "finite"


def _logits(case: Case) -> str:
    """"all_negative" when every q.k product is <= 0 by construction of the fills."""
    fq, fk = case.fills.get("query", {}), case.fills.get("key", {})
    if fq.get("dist") == "positive" and fk.get("dist") == "negative":
        return "all_negative"
    if fq.get("dist") == "int" and fk.get("dist") == "int" and fq.get("low", -1) >= 0 \
            and fk.get("high", 1) <= 0:
        return "all_negative"
    return "mixed"


#: Optional tensor/value arguments; a "plain" case has none of them.
_EXTRAS = DerivedTuple(lambda: tuple(a for a in ALL_ARGS if a not in ("query", "key", "value")
                                     and (a in TENSOR_ARGS or a in VALUE_ARGS)))


def _plain(case: Case, f: dict[str, Any]) -> bool:
    """Float BSH/BSND/BNSD attention without optional inputs: what simple backends express."""
    return (f["layout"] in ("BSH", "BSND", "BNSD") and f["q_dtype"] in ("float16", "bfloat16")
            and f["kv_dtype"] == f["q_dtype"] and not f["kv_list"] and f["empty"] == "none"
            and all(case.params.get(a) is None for a in _EXTRAS))
