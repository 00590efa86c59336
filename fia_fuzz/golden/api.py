"""The golden op, callable like `torch_npu.npu_fused_infer_attention_score` on NumPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.golden.core import PRECISIONS, attention
from fia_fuzz.golden.layouts import from_bnsd, to_bnsd
from fia_fuzz.spec import require_legal
from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.params import V2_TO_CANONICAL
from fia_fuzz.spec.tensors import NUMPY_DTYPES
from fia_fuzz.spec.validate import output_specs

#: Features the golden does not compute yet; a legal call using one raises
#: NotImplementedError naming it rather than returning a wrong answer.
_NOT_YET = ("pse_shift", "atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv",
            "block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix",
            "query_rope", "learnable_sink", "antiquant_scale", "key_antiquant_scale",
            "dequant_scale1", "quant_scale2", "dequant_scale_query")


def npu_fused_infer_attention_score(query: Any, key: Any, value: Any, *,
                                    precision: str = "device", **kwargs: Any
                                    ) -> tuple[np.ndarray, np.ndarray]:
    """(attention_out, softmax_lse) of a legal call; IllegalCall otherwise.

    precision="device" returns the dtypes the device returns (lse float32);
    precision="fp64" returns the ideal result unrounded, as float64.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}, expected one of {PRECISIONS}")
    view = require_legal(query, key, value, **kwargs)
    used = [name for name in _NOT_YET if kwargs.get(name) is not None]
    if used or isinstance(key, (list, tuple)):
        raise NotImplementedError(f"golden: {used or ['tensor-list KV']} not implemented yet")
    return _compute(view, np.asarray(query), np.asarray(key), np.asarray(value), precision)


def _compute(view: CallView, query: np.ndarray, key: np.ndarray, value: np.ndarray,
             precision: str) -> tuple[np.ndarray, np.ndarray]:
    out_spec, lse_spec = output_specs(view)
    layout = view.in_layout
    q = to_bnsd(query, layout, view.N)
    k = to_bnsd(key, layout, view.KV_N)
    v = to_bnsd(value, layout, view.KV_N)
    out, lse = attention(q, k, v, scale=float(view.attrs["scale"]), precision=precision,
                         p_dtype=NUMPY_DTYPES[view.need("query").dtype])
    out = from_bnsd(out, view.out_layout)
    lse = lse[..., None]
    if precision == "fp64":
        out_dtype, lse_dtype = np.float64, np.float64
    else:
        out_dtype, lse_dtype = NUMPY_DTYPES[out_spec.dtype], np.float32
    out = out.astype(out_dtype)
    if not view.attrs["softmax_lse_flag"]:
        return out, np.zeros(lse_spec.shape, lse_dtype)
    return out, lse.astype(lse_dtype)


def npu_fused_infer_attention_score_v2(query: Any, key: Any, value: Any, *,
                                       precision: str = "device", **kwargs: Any
                                       ) -> tuple[np.ndarray, np.ndarray]:
    """The same op under the v2 keyword names (fia-semantics.md §1)."""
    canonical = {V2_TO_CANONICAL.get(k, k): v for k, v in kwargs.items()}
    return npu_fused_infer_attention_score(query, key, value, precision=precision, **canonical)
