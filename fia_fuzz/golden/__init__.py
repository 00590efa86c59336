"""The NumPy reference of FusedInferAttentionScore (the oracle every verdict rests on).

`npu_fused_infer_attention_score(query, key, value, *, precision="device",
row_invalid="reference", **kwargs)` takes the torch_npu keywords and NumPy
arrays and returns (attention_out, softmax_lse):
- precision="device" (default): the vendor precision flow (fp32 scores and
  softmax, unnormalised P cast to the input dtype before P·V, fp32
  accumulation and division, cast to the output dtype); outputs in the
  device's dtypes, lse float32.
- precision="fp64": the ideal result, unrounded, both outputs float64.
- row_invalid: how fully masked rows come out (see api.ROW_INVALID).

One module per step: layouts (BNSD and packed TND/NTD), lengths (valid
windows), kv (contiguous, tensor list, packed) with paged and prefix, masks
(sparse modes, user masks, pse_shift), core (blocked online-softmax
attention). The quantised paths plug in at kv.dequantise (antiquant),
core.Matmuls (full int8) and api.finish_output (post-quant).
"""

from fia_fuzz.golden.api import (
    npu_fused_infer_attention_score,
    npu_fused_infer_attention_score_v2,
)

__all__ = ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2"]
