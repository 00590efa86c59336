"""The golden op, callable like `torch_npu.npu_fused_infer_attention_score` on NumPy arrays.

The pipeline, one module per step: validate (spec) -> query to BNSD
(op.geometry) -> KV sources to BNSD (kv: contiguous, tensor list, packed, paged,
prefix) -> dequantisation hooks (kv.dequantise; mla_quant for MLA full
quant) -> masks and pse (masks) -> attention (core) -> row-invalid policy ->
output post-processing hook (`finish_output`) -> output layout (op.geometry).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.golden.core import PRECISIONS, WORK, attention, to_output
from fia_fuzz.golden.kv import KV, dequantise, load_kv
from fia_fuzz.golden.masks import Masking, pse_bias
from fia_fuzz.golden.mla_quant import P_DTYPE as MLA_P_DTYPE
from fia_fuzz.golden.mla_quant import dequantise_mla
from fia_fuzz.golden.quant import POST_QUANT_ORDERS, full_quant_of_call, post_quantise_call
from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import from_bnsd, pack, query_window, to_bnsd, unpack
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.params import V2_TO_CANONICAL
from fia_fuzz.op.tensors import NUMPY_DTYPES
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.profiles.atlas_a2 import TREE_SPARSE
from fia_fuzz.rules.validate import check_view, require_legal

#: How rows whose every key is masked come out [SEM §4 "Fully masked row"]:
#: "reference" zeroes them always (out 0, lse +inf), as the vendor's CPU
#: reference does; "docs" zeroes them only where the docs promise the
#: row-invalid correction (inner_precise 2/3, or sparse_mode 3 with some
#: batch's S1 > S2, which the op detects itself) and otherwise models the
#: uncorrected kernel: every key carries the same fill score, so the row is
#: the mean of its valid values and lse is FILL + log(count).
ROW_INVALID = ("reference", "docs")
#: The finite score the uncorrected kernel gives masked keys (vendor reference fill).
FILL = -1.7e38


def npu_fused_infer_attention_score(query: Any, key: Any, value: Any, *,
                                    precision: str = "device", row_invalid: str = "reference",
                                    post_quant_order: str = "round_then_offset",
                                    rules: str = DEFAULT,
                                    **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """(attention_out, softmax_lse) of a call legal under the rule profile `rules`
    (`fia_fuzz.rules.profiles`); IllegalCall otherwise.

    precision="device" (default) returns the dtypes the device returns (lse
    float32) computed in the device's precision flow; precision="fp64"
    returns the ideal result unrounded, both outputs as float64 (an int8
    output as its unrounded value, clip(x*qs2 + qo2, -128, 127)).
    row_invalid picks the fully-masked-row model (see ROW_INVALID);
    post_quant_order the order of the int8 output's rounding and offset
    (see POST_QUANT_ORDERS).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}, expected one of {PRECISIONS}")
    if row_invalid not in ROW_INVALID:
        raise ValueError(f"row_invalid={row_invalid!r}, expected one of {ROW_INVALID}")
    if post_quant_order not in POST_QUANT_ORDERS:
        raise ValueError(f"post_quant_order={post_quant_order!r}, expected one of "
                         f"{POST_QUANT_ORDERS}")
    view = require_legal(query, key, value, rules=rules, **kwargs)
    why = _undefined(view, rules)
    if why:
        raise NotImplementedError(why)
    call = {"query": query, "key": key, "value": value, **kwargs}
    return _compute(view, call, precision, row_invalid, post_quant_order)


def _undefined(view: CallView, rules: str) -> str | None:
    """Why a call a device profile accepts has no defined result, or None.

    Everything else a profile accepts is computed with the documented arithmetic.
    """
    if rules == DEFAULT:
        return None
    if view.attrs["sparse_mode"] == TREE_SPARSE:
        return ("sparse_mode 9 (the A2 tree mask, device-a2.md row 3) has no documented "
                "arithmetic: the golden model does not guess it")
    kv = view.spec_list("key") + view.spec_list("value")
    broken = [v.rule for v in check_view(view)] if all(t.numel == 0 for t in kv) else []
    if broken:
        return (f"every key/value tensor is empty, so rules={rules!r} accepts the call "
                f"without further checks (the device returns early, device-a2.md row 11); "
                f"its outputs are undocumented (the docs' rules broken: {broken})")
    return None


def _compute(view: CallView, call: dict[str, Any], precision: str, row_invalid: str,
             post_quant_order: str) -> tuple[np.ndarray, np.ndarray]:
    out_spec, lse_spec = output_specs(view)
    work = WORK[precision]
    query = np.asarray(call["query"])
    if query.size == 0:  # empty query: return at once [V4 约束说明 入参为空]
        return (np.zeros(out_spec.shape, _out_dtype(out_spec.dtype, precision)),
                np.zeros(lse_spec.shape, work if precision == "fp64" else np.float32))
    kv = dequantise(load_kv(view, call), view, call, precision)
    p_dtype = view.need("query").dtype
    if view.mla_full_quant:
        call, kv = dequantise_mla(view, call, kv, precision)
        p_dtype = MLA_P_DTYPE
    q = query_bnsd(view, call)
    q_len, q_off = query_window(view)
    k = kv.key if kv.key_rope is None else np.concatenate([kv.key, kv.key_rope], axis=-1)
    s2b = kv.kv_len + kv.prefix
    masking = Masking(view, call, q_len, q_off, s2b, kv.kv_off)
    pse = None if call.get("pse_shift") is None else np.asarray(call["pse_shift"])

    def mods(bsl: slice, rows: slice, cols: slice) -> tuple[Any, Any]:
        return pse_bias(pse, bsl, rows, cols), masking.excluded(bsl, rows, cols)

    sink = call.get("learnable_sink")
    out, lse = attention(q, k, kv.value, scale=float(view.attrs["scale"]), precision=precision,
                         p_dtype=NUMPY_DTYPES[p_dtype], mods=mods,
                         sink=None if sink is None else np.asarray(sink),
                         row_span=(q_off, q_off + q_len), col_span=(kv.kv_off, kv.kv_off + s2b),
                         matmuls=full_quant_of_call(call, precision))
    if row_invalid == "docs" and not _corrected(view, q_len, s2b):
        _uncorrected_rows(out, lse, q_len, q_off, kv, view.N)
    out = finish_output(out, lse, view, call, precision, post_quant_order)
    return _to_layout(out, lse, view, precision)


def query_bnsd(view: CallView, call: dict[str, Any]) -> np.ndarray:
    """The query (with query_rope appended on D for MLA [SEM §9]) as BNSD."""
    parts = [np.asarray(call["query"])]
    if call.get("query_rope") is not None:
        parts.append(np.asarray(call["query_rope"]))
    if view.packed:
        lens = np.asarray(view.packed_lengths("actual_seq_lengths"), np.int64)
        bnsd = [unpack(p, view.in_layout, lens) for p in parts]
    else:
        bnsd = [to_bnsd(p, view.in_layout, view.N) for p in parts]
    return bnsd[0] if len(bnsd) == 1 else np.concatenate(bnsd, axis=-1)


def _corrected(view: CallView, q_len: np.ndarray, s2b: np.ndarray) -> bool:
    """Whether the docs promise the row-invalid correction for this call [V4 innerPrecise]."""
    if view.attr_int("inner_precise") in (2, 3):
        return True
    return view.attr_int("sparse_mode") == 3 and bool((q_len > s2b).any())


def _uncorrected_rows(out: np.ndarray, lse: np.ndarray, q_len: np.ndarray, q_off: np.ndarray,
                      kv: KV, heads: int) -> None:
    """Fully masked valid rows as the uncorrected kernel leaves them (see ROW_INVALID)."""
    g = heads // kv.value.shape[1]
    s2b = kv.kv_len + kv.prefix
    for b in range(out.shape[0]):
        if s2b[b] == 0:
            continue
        rows = slice(int(q_off[b]), int(q_off[b] + q_len[b]))
        dead = np.isinf(lse[b, :, rows])
        if not dead.any():
            continue
        cols = slice(int(kv.kv_off[b]), int(kv.kv_off[b] + s2b[b]))
        mean = np.repeat(kv.value[b, :, cols].astype(out.dtype).mean(axis=1), g, axis=0)
        out[b, :, rows] = np.where(dead[..., None], mean[:, None, :], out[b, :, rows])
        lse[b, :, rows] = np.where(dead, out.dtype.type(FILL + np.log(s2b[b])), lse[b, :, rows])


def finish_output(out: np.ndarray, lse: np.ndarray, view: CallView, call: dict[str, Any],
                  precision: str, post_quant_order: str = "round_then_offset") -> np.ndarray:
    """The BNSD attention output in its output dtype, post-quantised to int8 (SEM §8)
    when quant_scale2 is given (from the float output the call would otherwise
    return: query dtype, fp16 for an int8 query)."""
    if call.get("quant_scale2") is not None:
        query_dtype = view.need("query").dtype
        return post_quantise_call(out, call, out_layout="BNSD", num_heads=view.N,
                                  precision=precision,
                                  float_dtype=NUMPY_DTYPES["float16" if query_dtype == "int8"
                                                           else query_dtype],
                                  dead_rows=np.isinf(lse), order=post_quant_order)
    if precision == "fp64":
        return out
    return to_output(out, _out_dtype(output_specs(view)[0].dtype, precision))


def _out_dtype(name: str, precision: str) -> np.dtype:
    return WORK["fp64"] if precision == "fp64" else NUMPY_DTYPES[name]


def _to_layout(out: np.ndarray, lse: np.ndarray, view: CallView, precision: str
               ) -> tuple[np.ndarray, np.ndarray]:
    """Output and lse in the call's output layout; lse (B,N,S1,1), or (T,N,1) packed [SEM §5]."""
    lse_dtype = WORK["fp64"] if precision == "fp64" else np.dtype(np.float32)
    if view.packed:
        lens = np.asarray(view.packed_lengths("actual_seq_lengths"), np.int64)
        total = view.q_dims["T"]
        out = pack(out, view.out_layout, lens, total)
        lse = pack(lse[..., None], "TND", lens, total, fill=np.inf)
    else:
        out = from_bnsd(out, view.out_layout)
        lse = lse[..., None]
    if not view.attrs["softmax_lse_flag"]:
        return out, np.zeros(output_specs(view)[1].shape, lse_dtype)
    return out, lse.astype(lse_dtype)


def npu_fused_infer_attention_score_v2(query: Any, key: Any, value: Any, *,
                                       precision: str = "device", row_invalid: str = "reference",
                                       post_quant_order: str = "round_then_offset",
                                       **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """The same op under the v2 keyword names (fia-semantics.md §1)."""
    canonical = {V2_TO_CANONICAL.get(k, k): v for k, v in kwargs.items()}
    return npu_fused_infer_attention_score(query, key, value, precision=precision,
                                           row_invalid=row_invalid,
                                           post_quant_order=post_quant_order, **canonical)
