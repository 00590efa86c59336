"""inner_precise, learnable_sink and other switches of the output computation
[V4 约束说明 innerPrecise, SEM §5]."""

from __future__ import annotations

from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.rules import rule, src


@rule("precise.range", "inner_precise is 0..3",
      src("V4", "约束说明 innerPrecise (Q_S>1: 0, 1, 2, 3)"))
def _range(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    return f"inner_precise={ip} not in 0..3" if not 0 <= ip <= 3 else None


@rule("precise.decode_01", "Q_S == 1 accepts inner_precise 0 or 1 only",
      src("V4", "当Q_S等于1时 innerPrecise (仅支持innerPrecise为0和1)"))
def _decode(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    if c.decode and ip in (2, 3):
        return f"inner_precise={ip} with Q_S=1"
    return None


@rule("sink.shape", "learnable_sink holds one value per query head: shape (N,)",
      src("SEM", "1. Names (learnable_sink); 5. Softmax (l += exp(sink[n] - m))"))
def _sink_shape(c: CallView) -> str | None:
    t = c.spec("learnable_sink")
    if t is not None and tuple(t.shape) != (c.N,):
        return f"learnable_sink.shape={list(t.shape)}, expected ({c.N},)"
    return None


@rule("sink.dtype", "learnable_sink is a float tensor (float16, bfloat16 or float32)",
      src("SEM", "1. Names (learnable_sink, torch_npu v2)"))
def _sink_dtype(c: CallView) -> str | None:
    t = c.spec("learnable_sink")
    if t is not None and t.dtype not in ("float16", "bfloat16", "float32"):
        return f"learnable_sink.dtype={t.dtype!r}, expected a float dtype"
    return None
