"""The whole op around one attention kernel: gather, mask, attend, scatter, quantise.

Per batch the valid query rows and KV tokens are cut out (geometry, kv),
dequantised (antiquant) and given an additive fp32 bias (masks, pse, a
learnable sink as one extra key column with a zero value). The batches are
padded to a common shape, padded keys get -inf, and one kernel call computes
every batch. Rows with no attendable key (fully masked, act_kv == 0, padding)
are kept finite for the kernel and set to out 0, lse +inf after [SEM §3, §4].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from fia_fuzz.op.call import CallView
from fia_fuzz.runners.composition.antiquant import POSITION_FREE, dequantisers
from fia_fuzz.runners.composition.geometry import prefix_length, windows
from fia_fuzz.runners.composition.kv import (
    KvSource,
    from_bnsd,
    prefix_tokens,
    tensor,
    to_bnsd,
    to_nt,
)
from fia_fuzz.runners.composition.limits import refusal
from fia_fuzz.runners.composition.masks import MaskPlan
from fia_fuzz.runners.composition.postquant import channel_shape, post_quantise
from fia_fuzz.runners.torch_convert import to_numpy, to_torch

#: kernel(q, k, v, bias, scale) -> (out, lse): BNSD q (B,N,R,Dq), k (B,N,K,Dq),
#: v (B,N,K,Dv), fp32 bias (B,N,R,K) or None; lse (B,N,R) fp32.
Kernel = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, float],
                  tuple[torch.Tensor, torch.Tensor]]


def _work_dtype(call: dict[str, Any], qdtype: torch.dtype) -> torch.dtype:
    """Antiquant arithmetic: the query dtype in fp16 high-performance mode, else fp32 [SEM §7]."""
    fast = int(call.get("inner_precise", 1)) & 1
    if qdtype == torch.float16 and fast and call.get("pse_shift") is None:
        return torch.float16
    return torch.float32


class _Kv:
    """key, value (and key_rope) of every batch, dequantised, prefix first."""

    def __init__(self, call: dict[str, Any], view: CallView, qdtype: torch.dtype, device: str):
        layout, kv_n = view.in_layout, view.KV_N
        table = call.get("block_table")
        block_size = int(call.get("block_size") or 0)
        self.sources = {name: KvSource(call[name], layout, kv_n, device, table, block_size)
                        for name in ("key", "value", "key_rope") if call.get(name) is not None}
        # int8, int4 and int32-packed int4 all arrive as int8 values (kv.tensor).
        quantised = self._dtype("key") == torch.int8
        self.deq = dequantisers(call, kv_n, device) if quantised else None
        self.work = _work_dtype(call, qdtype)
        self.qdtype = qdtype
        self.prefix: dict[str, torch.Tensor] = {}
        if call.get("key_shared_prefix") is not None:
            plen = prefix_length(view)
            for name in ("key", "value"):
                self.prefix[name] = prefix_tokens(call[f"{name}_shared_prefix"], layout, kv_n,
                                                  plen, device)

    def head_dim(self, name: str) -> int:
        data = self.sources[name].data
        return int((data[0] if isinstance(data, list) else data).shape[-1])

    def _dtype(self, name: str) -> torch.dtype:
        data = self.sources[name].data
        return (data[0] if isinstance(data, list) else data).dtype

    def tokens(self, name: str, b: int, lo: int, hi: int) -> torch.Tensor:
        x = self.sources[name].tokens(b, lo, hi)
        pre = self.prefix.get(name)
        if self.deq is not None and name in self.deq:
            d = self.deq[name]
            x = d.apply(x, b, lo, hi, self.work, self.qdtype)
            if pre is not None:
                assert d.mode in POSITION_FREE
                pre = d.apply(pre, b, 0, pre.shape[1], self.work, self.qdtype)
        if pre is not None:
            x = torch.cat([pre, x], dim=1)
        return x


def _grouped(kernel: Kernel, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             bias: torch.Tensor | None, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel over KV heads, each with the rows of its N/KV_N query heads stacked.

    Query head h reads KV head h // (N/KV_N) [SEM §5 GQA]; each row attends on its
    own, so stacking a group's rows is the same attention without copying K/V per
    query head (an MLA cache repeated for 128 heads took over 1 GiB).
    """
    b, n, r, _ = q.shape
    kv_n = k.shape[1]
    if kv_n == n:
        return kernel(q, k, v, bias, scale)

    def fold(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(b, kv_n, n // kv_n * r, t.shape[-1])

    out, lse = kernel(fold(q), k, v, None if bias is None else fold(bias), scale)
    return out.reshape(b, n, r, out.shape[-1]), lse.reshape(b, n, r)


def compose(call: dict[str, Any], kernel: Kernel, device: str,
            post_quant_order: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(attention_out, softmax_lse) of a legal canonical call, NumPy in and out."""
    view = CallView(call)
    why = refusal(view)
    if why:
        raise NotImplementedError(why)
    layout, n, kv_n = view.in_layout, view.N, view.KV_N
    q_all = tensor(call["query"], device)
    qdtype = q_all.dtype
    rope = None if call.get("query_rope") is None else tensor(call["query_rope"], device)
    if view.packed:
        q_src = [to_nt(q_all, layout)]
        if rope is not None:
            q_src.append(to_nt(rope, layout))
    else:
        q_src = [to_bnsd(q_all, layout, n)]
        if rope is not None:
            q_src.append(to_bnsd(rope, layout, n))
    if view.mla_full_quant:
        # int8 query x its per-(token, head) scale, then an fp32 flow with a bf16 output
        # [TNPU v2 query d=512 全量化; golden/mla_quant.py]
        qdtype = torch.float32
        scale = to_torch(np.asarray(call["dequant_scale_query"]), device).float()
        q_src = [q_src[0].float() * scale.reshape(view.B, view.S1, n).permute(0, 2, 1)[..., None],
                 q_src[1].float()]
    wins = windows(view)
    kv = _Kv(call, view, qdtype, device)
    plan = MaskPlan.of(call, view.decode and rope is None, device)
    sink = call.get("learnable_sink")
    sink_t = None if sink is None else to_torch(np.asarray(sink), device).float().reshape(n)

    b_count = len(wins)
    dq = sum(s.shape[-1] for s in q_src)
    dv = kv.head_dim("value")
    r_max = max((w.rows for w in wins), default=0)
    k_max = max((w.keys for w in wins), default=0)
    k_cols = k_max + (1 if sink_t is not None else 0)
    if view.packed:
        full_out = torch.zeros(n, q_src[0].shape[1], dv, dtype=qdtype, device=device)
        full_lse = torch.full((n, q_src[0].shape[1]), float("inf"), device=device)
    else:
        full_out = torch.zeros(b_count, n, view.S1, dv, dtype=qdtype, device=device)
        full_lse = torch.full((b_count, n, view.S1), float("inf"), device=device)

    if r_max and k_cols:
        q = torch.zeros(b_count, n, r_max, dq, dtype=qdtype, device=device)
        k = torch.zeros(b_count, kv_n, k_cols, dq, dtype=qdtype, device=device)
        v = torch.zeros(b_count, kv_n, k_cols, dv, dtype=qdtype, device=device)
        # Without masks, pse, sink or ragged KV every bias entry would be 0: pass none.
        needs_bias = (plan.user_mask is not None or plan.sparse_mode in (2, 3, 4)
                      or plan.pse is not None or sink_t is not None
                      or any(w.keys != k_max for w in wins if w.rows))
        bias = (torch.full((b_count, n, r_max, k_cols), float("-inf"), device=device)
                if needs_bias else None)
        for b, w in enumerate(wins):
            if not w.rows:
                continue
            parts = [src[b][:, w.q_lo:w.q_hi] if not view.packed else src[:, w.q_lo:w.q_hi]
                     for src in q_src]
            q[b, :, :w.rows] = torch.cat(parts, dim=-1)
            if w.keys:
                keys = [kv.tokens("key", b, w.kv_lo, w.kv_hi)]
                if "key_rope" in kv.sources:
                    keys.append(kv.tokens("key_rope", b, w.kv_lo, w.kv_hi))
                k[b, :, :w.keys] = torch.cat(keys, dim=-1)
                v[b, :, :w.keys] = kv.tokens("value", b, w.kv_lo, w.kv_hi)
                if bias is not None:
                    bias[b, :, :w.rows, :w.keys] = plan.bias(b, w).to(device)
            if sink_t is not None:
                bias[b, :, :w.rows, k_max] = sink_t[:, None]
        if bias is not None:
            valid = (bias[..., :k_max] > float("-inf")).any(dim=-1)
            bias = torch.where(valid.unsqueeze(-1), bias, torch.zeros((), device=device))
        else:
            rows = torch.tensor([w.rows if w.keys else 0 for w in wins], device=device)
            valid = (torch.arange(r_max, device=device) < rows[:, None])[:, None].expand(
                b_count, n, r_max)
        out, lse = _grouped(kernel, q, k, v, bias, float(view.attrs["scale"]))
        out = torch.where(valid.unsqueeze(-1), out, torch.zeros((), dtype=out.dtype,
                                                                 device=device))
        lse = torch.where(valid, lse.float(), torch.full((), float("inf"), device=device))
        for b, w in enumerate(wins):
            if not w.rows:
                continue
            if view.packed:
                full_out[:, w.q_lo:w.q_hi] = out[b, :, :w.rows]
                full_lse[:, w.q_lo:w.q_hi] = lse[b, :, :w.rows]
            else:
                full_out[b, :, w.q_lo:w.q_hi] = out[b, :, :w.rows]
                full_lse[b, :, w.q_lo:w.q_hi] = lse[b, :, :w.rows]

    result: torch.Tensor = full_out
    if call.get("quant_scale2") is not None:
        order = post_quant_order or ("round_then_offset" if view.decode
                                     else "offset_then_round")
        scale = channel_shape(to_torch(np.asarray(call["quant_scale2"]), device), n)
        offset = call.get("quant_offset2")
        if offset is not None:
            offset = channel_shape(to_torch(np.asarray(offset), device), n)
        result = post_quantise(full_out, scale, offset, order)
        # rows the op does not compute stay 0, not quantised zeros (= offset) [SEM §3]
        dead = torch.isinf(full_lse).unsqueeze(-1)
        result = torch.where(dead, torch.zeros((), dtype=result.dtype, device=device), result)
    if view.mla_full_quant and rope is not None:
        result = result.to(rope.dtype)   # an int8 query's output takes query_rope's dtype
    if view.packed:
        result = result.permute(1, 0, 2) if view.out_layout == "TND" else result
        lse_out = full_lse.permute(1, 0).unsqueeze(-1)
    else:
        result = from_bnsd(result, view.out_layout)
        lse_out = full_lse.unsqueeze(-1)
    if not view.attrs["softmax_lse_flag"]:
        return to_numpy(result), np.zeros((0,), np.float32)   # torch_npu's empty placeholder
    return to_numpy(result), to_numpy(lse_out.float())
