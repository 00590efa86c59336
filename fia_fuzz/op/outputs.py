"""Output inference: the shapes and dtypes of the op's two outputs for a legal call."""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import dense_shape, packed_shape
from fia_fuzz.op.tensors import TensorSpec


def output_specs(view: CallView) -> tuple[TensorSpec, TensorSpec]:
    """(attention_out, softmax_lse) for a call already known to be legal.

    attention_out: the output layout of input_layout with D = Dv [V4 attentionOut];
    int8 with quant_scale2, float16 for an int8 query (the rope tensors' dtype, i.e.
    bfloat16, for MLA full quant [V4 MLA 全量化 attention BFLOAT16]), else the
    query dtype. softmax_lse: (B, N, Q_S, 1), (T, N, 1) for TND/NTD_TND [V4
    softmaxLse]; an empty (0,) placeholder without softmax_lse_flag, as torch_npu
    returns (the docs say shape [1]: docs/rules.md disagreement 32).
    """
    out_dtype = view.out_dtype
    n, dv = view.N, view.Dv
    out_layout = view.out_layout
    if view.packed:
        t = view.q_dims["T"]
        out_shape = packed_shape(out_layout, t, n, dv)
        lse_shape: tuple[int, ...] = (t, n, 1)
    else:
        b, s1 = view.B, view.S1
        out_shape = dense_shape(out_layout, b, n, s1, dv)
        lse_shape = (b, n, s1, 1)
    if not view.attrs["softmax_lse_flag"]:
        lse_shape = (0,)
    return TensorSpec(out_shape, out_dtype), TensorSpec(lse_shape, "float32")

