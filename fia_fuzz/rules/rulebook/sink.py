"""learnable_sink: one extra softmax term per query head [SEM §1, §5]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, f32


@rule("sink.shape", "learnable_sink holds one value per query head: shape (N,)",
      src("SEM", "1. Names (learnable_sink); 5. Softmax (l += exp(sink[n] - m))"))
def sink_shape(c: CallView) -> str | None:
    t = c.spec("learnable_sink")
    if t is not None and tuple(t.shape) != (c.N,):
        return f"learnable_sink.shape={list(t.shape)}, expected ({c.N},)"
    return None


@rule("sink.dtype", "learnable_sink is a float tensor (float16, bfloat16 or float32)",
      src("SEM", "1. Names (learnable_sink, torch_npu v2)"))
def sink_dtype(c: CallView) -> str | None:
    t = c.spec("learnable_sink")
    if t is not None and t.dtype not in ("float16", "bfloat16", "float32"):
        return f"learnable_sink.dtype={t.dtype!r}, expected a float dtype"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("sink.shape", "sink", {"learnable_sink": f32(8)}),
    ("sink.dtype", "sink", {"learnable_sink": T(4, dtype="int32")}),
]
