"""`torch-api-<backend>`: the op's call handed to torch's public SDPA in the kernel's own forms.

One runner per SDPA backend (`sdpa_kernel(SDPBackend.X)`): torch-api-math and
torch-api-flash on the CPU and CUDA, torch-api-efficient and torch-api-cudnn on
CUDA. Unlike torch-sdpa/torch-math (torch_composed.py), which normalise every
call before the kernel (fresh contiguous buffers, one fp32 additive bias, GQA
folded into rows, head dims padded, empty rows overwritten), these pass what
the public API accepts as it is, so the kernel's own handling is under test:

- BSH/BSND/BNSD tensors reach SDPA's (B, N, S, D) by views and permutes only:
  a case's strided view stays strided;
- atten_mask goes as a bool mask (FIA's True = masked out inverted to SDPA's
  True = attend), broadcast over heads (and batches) by `expand` (stride 0);
  a mask larger than S1 x S2 goes as its strided slice;
- sparse_mode 2 (and 3 where rows == keys) goes as `is_causal=True` (torch's
  causal mask is top-left aligned, FIA's mode 2 is left-up, mode 3 right-down);
  mode 3 with rows != keys and mode 4 go as bool band masks;
- GQA goes as `enable_gqa=True`; unequal key/value head dims go as they are;
- fully masked rows are what the kernel returns (the golden says 0).

Actual lengths shorter than the tensors run one SDPA call per batch on the
batch's slices (views); rows past a batch's length, and the rows of a batch
with no keys, are 0 without a kernel call: the op does not compute them.
SDPA returns no logsumexp: it is computed beside in fp32 from the same masks
(+inf where a row attends nothing). Everything SDPA has no form for (quant,
antiquant, paging, rope, pse, shared prefix, sink, left padding, packed
layouts, tensor lists) is refused by name.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS
from fia_fuzz.runners.base import register
from fia_fuzz.runners.torch_composed import TorchComposition
from fia_fuzz.runners.torch_convert import to_numpy, to_torch

#: Arguments SDPA has no form for, each with the feature named in the refusal.
UNSUPPORTED_ARGS = {
    "pse_shift": "pse_shift (a positional bias beside the mask)",
    "dequant_scale1": "full quantisation (dequant_scale1)",
    "quant_scale1": "full quantisation (quant_scale1)",
    "dequant_scale2": "full quantisation (dequant_scale2)",
    "quant_scale2": "post quantisation (quant_scale2)",
    "quant_offset2": "post quantisation (quant_offset2)",
    "antiquant_scale": "antiquant (antiquant_scale)",
    "antiquant_offset": "antiquant (antiquant_offset)",
    "key_antiquant_scale": "antiquant (key_antiquant_scale)",
    "key_antiquant_offset": "antiquant (key_antiquant_offset)",
    "value_antiquant_scale": "antiquant (value_antiquant_scale)",
    "value_antiquant_offset": "antiquant (value_antiquant_offset)",
    "key_shared_prefix": "a shared prefix (key_shared_prefix)",
    "value_shared_prefix": "a shared prefix (value_shared_prefix)",
    "query_rope": "rope (query_rope/key_rope)",
    "key_rope": "rope (query_rope/key_rope)",
    "key_rope_antiquant_scale": "rope antiquant (key_rope_antiquant_scale)",
    "dequant_scale_query": "MLA full quantisation (dequant_scale_query)",
    "learnable_sink": "a learnable sink (learnable_sink)",
    "block_table": "a paged KV cache (block_table)",
    "query_padding_size": "left padding (query_padding_size)",
    "kv_padding_size": "left padding (kv_padding_size)",
}
FLOATS = ("float16", "bfloat16", "float32")
#: Backends that exist on each torch device type.
ON_DEVICE = {"cpu": ("math", "flash"), "cuda": ("math", "flash", "efficient", "cudnn")}


def _bnsd(t: Any, layout: str, heads: int) -> Any:
    """A BSH/BSND/BNSD tensor as SDPA's (B, N, S, D): views only."""
    if layout == "BNSD":
        return t
    if layout == "BSH":
        t = t.unflatten(-1, (heads, t.shape[-1] // heads))
    return t.permute(0, 2, 1, 3)


def _band(rows: int, keys: int, pre: int, nxt: int, device: Any) -> Any:
    """(rows, keys) bool, True = attend: key j within [i - pre, i + next]."""
    import torch

    i = torch.arange(rows, device=device).unsqueeze(1)
    j = torch.arange(keys, device=device).unsqueeze(0)
    return (j <= i + nxt) & (j >= i - pre)


class _Plan:
    """How one call's masking reaches SDPA: a user mask, a causal flag or a band."""

    def __init__(self, call: dict[str, Any], view: CallView, device: str):
        self.decode = view.decode
        mode = 0 if self.decode else int(view.attrs["sparse_mode"])
        self.mode = mode
        self.pre = int(view.attrs["pre_tokens"])
        self.nxt = int(view.attrs["next_tokens"])
        mask = call.get("atten_mask")
        self.attend = None  # (B|1, 1, R, C) bool, True = attend
        if mask is not None and mode in (0, 1):
            m = to_torch(mask, device)
            if self.decode and m.ndim == 2 and m.shape[0] == view.B:
                m = m.unsqueeze(1)
            while m.ndim < 3:
                m = m.unsqueeze(0)
            if m.ndim == 4:
                m = m[:, 0]
            self.attend = (m == 0).unsqueeze(1)   # FIA 1 = masked out; SDPA True = attend
        #: mode 0's pre/next band applies only with a mask [SEM §4]
        self.band0 = mode == 0 and self.attend is not None

    def forms(self, b: slice, rows: int, keys: int, batches: int, heads: int,
              device: Any) -> tuple[Any, bool]:
        """(attn_mask or None, is_causal) for the batches `b` over a (rows, keys) window."""
        mode = self.mode
        if mode == 2 or (mode == 3 and rows == keys):
            return None, True   # torch's is_causal is top-left: FIA mode 2, and 3 when square
        if mode == 3:
            band = _band(rows, keys, 2147483647, keys - rows, device)
        elif mode == 4:
            band = _band(rows, keys, rows - keys + self.pre, keys - rows + self.nxt, device)
        elif self.attend is not None:
            m = self.attend if self.attend.shape[0] == 1 else self.attend[b]
            m = m[:, :, :rows, :keys]
            if self.band0:
                band = _band(rows, keys, self.pre, self.nxt, device)
                if not bool(band.all()):
                    m = m & band
            return m.expand(batches, heads, rows, keys), False
        else:
            return None, False
        return band.expand(batches, heads, rows, keys), False


def _lse(q: Any, k: Any, mask: Any, causal: bool, scale: float) -> Any:
    """fp32 logsumexp of the scaled, masked scores; +inf where a row attends nothing."""
    import torch

    g = q.shape[1] // k.shape[1]
    kk = k.repeat_interleave(g, dim=1) if g > 1 else k
    scores = torch.matmul(q.float(), kk.float().transpose(-1, -2)) * scale
    if causal:
        r, c = scores.shape[-2:]
        mask = _band(r, c, 2147483647, 0, scores.device)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return torch.where(lse == float("-inf"), torch.full((), float("inf"), device=lse.device), lse)


def sdpa_arguments(call: dict[str, Any], batch: int, device: str = "cpu") -> dict[str, Any]:
    """The public SDPA arguments a torch-api runner gives for one batch of `call`: query,
    key and value as (1, N, rows, D) views of that batch's valid rows and keys, attn_mask
    (True = attend, or None), is_causal, scale and enable_gqa; a standalone repro writes
    them out (`campaign/repro_torch.py`). Empty when the batch has no rows or keys."""
    view = CallView(call)
    layout, n, kv_n = view.in_layout, view.N, view.KV_N
    q = _bnsd(to_torch(call["query"], device), layout, n)
    k = _bnsd(to_torch(call["key"], device), layout, kv_n)
    v = _bnsd(to_torch(call["value"], device), layout, kv_n)
    rows, keys = min(view.act_q[batch], q.shape[2]), min(view.act_kv[batch], k.shape[2])
    if not rows or not keys:
        return {}
    mask, causal = _Plan(call, view, device).forms(slice(batch, batch + 1), rows, keys, 1, n,
                                                   device)
    b = slice(batch, batch + 1)
    return {"query": q[b, :, :rows], "key": k[b, :, :keys], "value": v[b, :, :keys],
            "attn_mask": mask, "is_causal": causal, "scale": float(view.attrs["scale"]),
            "enable_gqa": kv_n != n}


class TorchApiRunner(TorchComposition):
    """torch's public scaled_dot_product_attention under one explicit backend."""

    backend = ""

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("torch") is None:
            return False, "torch is not installed (pip install 'fia-fuzz[torch]')"
        import torch

        kind = torch.device(self.device).type
        if self.backend not in ON_DEVICE.get(kind, ()):
            return False, (f"{self.name}: SDPBackend.{self._enum()} does not exist on "
                           f"{kind} (there: {', '.join(ON_DEVICE.get(kind, ())) or 'none'})")
        return True, ""

    def _enum(self) -> str:
        return {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                "cudnn": "CUDNN_ATTENTION"}[self.backend]

    def supports(self, case: Case) -> tuple[bool, str]:
        why = self._refusal(case.view()) or self._too_big(case)
        return (False, f"{self.name}: {why}") if why else (True, "")

    def _refusal(self, view: CallView) -> str:
        """The feature SDPA (or this backend) has no form for, "" when it has all."""
        if view.in_layout not in DENSE_LAYOUTS:
            return f"the packed {view.in_layout} layout: SDPA takes (B, N, S, D) only"
        if view.is_kv_list:
            return "a key/value tensor list: SDPA takes one key and one value tensor"
        for name, feature in UNSUPPORTED_ARGS.items():
            if view.has(name):
                return f"{feature}: SDPA has no form for it"
        if view.attrs["sparse_mode"] not in (0, 1, 2, 3, 4):
            return f"sparse_mode {view.attrs['sparse_mode']}: no SDPA form"
        dt = {view.need(n).dtype for n in ("query", "key", "value")}
        if len(dt) != 1 or not dt <= set(FLOATS):
            return f"dtypes {sorted(dt)}: SDPA takes one float dtype for query, key and value"
        return self._backend_refusal(view, dt.pop())

    def _backend_refusal(self, view: CallView, dtype: str) -> str:
        if self.backend == "math":
            return ""
        if view.Dk != view.Dv:
            return (f"key head dim {view.Dk} != value head dim {view.Dv}: "
                    f"SDPBackend.{self._enum()} needs equal head dims")
        cuda = self.device.startswith("cuda")
        if not cuda:
            return ""   # CPU flash: any float dtype, bool/float masks, GQA, any head dim
        if dtype == "float32" and self.backend in ("flash", "cudnn"):
            return f"float32: CUDA SDPBackend.{self._enum()} takes float16/bfloat16 only"
        if self.backend == "flash":
            if view.Dk > 256:
                return f"head dim {view.Dk} > 256: CUDA flash attention's limit"
            if self._needs_mask(view):
                return "an attention mask: CUDA flash attention takes is_causal only, no attn_mask"
            if int(view.attrs["sparse_mode"]) == 2 and not view.decode and any(
                    q != k for q, k in zip(view.act_q, view.act_kv, strict=False)):
                return "is_causal over more keys than rows: CUDA flash attention needs as many"
        if self.backend in ("efficient", "cudnn") and view.KV_N != view.N:
            return (f"GQA ({view.N} query heads over {view.KV_N} KV heads): "
                    f"SDPBackend.{self._enum()} does not take enable_gqa")
        if self.backend == "cudnn" and view.Dk > 128:
            return f"head dim {view.Dk} > 128: cuDNN attention's limit"
        return ""

    @staticmethod
    def _needs_mask(view: CallView) -> bool:
        if view.decode:
            return view.has("atten_mask")
        mode = int(view.attrs["sparse_mode"])
        if mode in (0, 1):
            return view.has("atten_mask")
        if mode == 2:
            return False
        if mode == 3:
            return any(q != k for q, k in zip(view.act_q, view.act_kv, strict=False))
        return True

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        with torch.no_grad():
            return self._run(call)

    def _run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        from fia_fuzz.runners.composition.kv import from_bnsd

        view = CallView(call)
        why = self._refusal(view)
        if why:
            raise NotImplementedError(f"{self.name}: {why}")
        dev = self.device
        layout, n, kv_n = view.in_layout, view.N, view.KV_N
        q = _bnsd(to_torch(call["query"], dev), layout, n)
        k = _bnsd(to_torch(call["key"], dev), layout, kv_n)
        v = _bnsd(to_torch(call["value"], dev), layout, kv_n)
        scale = float(view.attrs["scale"])
        plan = _Plan(call, view, dev)
        b_count, s1, s2 = q.shape[0], q.shape[2], k.shape[2]
        act_q = [min(a, s1) for a in view.act_q]
        act_kv = [min(a, s2) for a in view.act_kv]
        out = torch.zeros(b_count, n, s1, v.shape[-1], dtype=q.dtype, device=dev)
        lse = torch.full((b_count, n, s1), float("inf"), device=dev)
        if all(a == s1 for a in act_q) and all(a == s2 for a in act_kv):
            spans = [(slice(0, b_count), s1, s2)]
        else:
            spans = [(slice(b, b + 1), act_q[b], act_kv[b]) for b in range(b_count)]
        for b, rows, keys in spans:
            if not rows or not keys:
                continue   # the op computes nothing here: out 0, lse +inf [SEM §3]
            qb, kb, vb = q[b, :, :rows], k[b, :, :keys], v[b, :, :keys]
            mask, causal = plan.forms(b, rows, keys, qb.shape[0], n, dev)
            out[b, :, :rows] = self._sdpa(qb, kb, vb, mask, causal, scale, kv_n != n)
            lse[b, :, :rows] = _lse(qb, kb, mask, causal, scale)
        result = from_bnsd(out, view.out_layout)
        if not view.attrs["softmax_lse_flag"]:
            return to_numpy(result), np.zeros((0,), np.float32)   # torch_npu's empty placeholder
        return to_numpy(result), to_numpy(lse.unsqueeze(-1))

    def _sdpa(self, q: Any, k: Any, v: Any, mask: Any, causal: bool, scale: float,
              gqa: bool) -> Any:
        """One public SDPA call under this runner's backend; torch's reasons on a refusal."""
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with sdpa_kernel([getattr(SDPBackend, self._enum())]):
                    return torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, attn_mask=mask, is_causal=causal, scale=scale,
                        enable_gqa=gqa)
            except RuntimeError as exc:
                reasons = "; ".join(str(w.message).split(" (Triggered")[0] for w in caught)
                if "No available kernel" in str(exc):   # the backend's own refusal
                    raise NotImplementedError(f"{self.name}: torch has no {self._enum()} "
                                              f"kernel for this call: {reasons}") from exc
                raise RuntimeError(f"{exc} {reasons}".strip()) from exc


def _runner(backend: str) -> type[TorchApiRunner]:
    name = f"torch-api-{backend}"
    cls = type(f"TorchApi{backend.title()}Runner", (TorchApiRunner,),
               {"name": name, "backend": backend, "__module__": __name__})
    register(name)(cls)
    return cls


TorchApiMathRunner = _runner("math")
TorchApiFlashRunner = _runner("flash")
TorchApiEfficientRunner = _runner("efficient")
TorchApiCudnnRunner = _runner("cudnn")
