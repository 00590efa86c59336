"""The NumPy reference of FusedInferAttentionScore (the oracle every verdict rests on)."""

from fia_fuzz.golden.api import (
    npu_fused_infer_attention_score,
    npu_fused_infer_attention_score_v2,
)

__all__ = ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2"]
