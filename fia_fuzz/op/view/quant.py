"""The MLA and quantisation modes in effect, and the output dtype they give."""

from __future__ import annotations

from functools import cached_property

from fia_fuzz.op.args import rope as rope_arg
from fia_fuzz.op.view.arguments import Arguments


class QuantView(Arguments):
    # What this part reads from the others (bare annotations: no attribute is made).
    D: int  # dims

    @property
    def rope(self) -> bool:
        return rope_arg.present(self)

    @property
    def mla512(self) -> bool:
        """MLA with query D 512 [V4 MLA场景 query d=512]."""
        return self.rope and self.D == 512

    @property
    def mla_full_quant(self) -> bool:
        """MLA D 512 with an int8 query: key/value_antiquant_scale are then the full-quant
        per-tensor K/V dequant scales, not antiquant [TNPU v2 约束说明 query d=512 全量化]."""
        return self.mla512 and self.need("query").dtype == "int8"

    @property
    def separate_antiquant(self) -> bool:
        return not self.mla_full_quant and any(
            self.has(n) for n in ("key_antiquant_scale", "value_antiquant_scale",
                                  "key_antiquant_offset", "value_antiquant_offset"))

    @property
    def combined_antiquant(self) -> bool:
        """Combined params in effect (separate ones win when both are given) [V4 伪量化参数约束]."""
        return (self.has("antiquant_scale") or self.has("antiquant_offset")) \
            and not self.separate_antiquant

    @cached_property
    def out_dtype(self) -> str:
        """attention_out dtype [V4 attentionOut, int8量化场景, MLA 全量化 (bf16)].

        An int8 query's output takes the rope tensors' dtype when there are (float16
        without), as torch_npu's meta functions do; rope.dtype makes that bfloat16.
        """
        q = self.need("query")
        if self.has("quant_scale2"):
            return "int8"
        if q.dtype == "int8":
            return rope_arg.int8_out_dtype(self)
        return q.dtype
