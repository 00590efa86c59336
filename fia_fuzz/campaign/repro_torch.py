"""A standalone plain-torch repro of a torch runner's failing case: one Python file that needs
only torch (no fia-fuzz, no numpy), for an upstream issue.

The script holds the call as torch's public `scaled_dot_product_attention` takes it
from the torch-api runners (`runners/torch_api.py` `sdpa_arguments`): the failing
batch's query, key and value in (B, N, S, D), the attention mask (True = attend) or
is_causal, the scale and enable_gqa, the tensors embedded bit for bit (base64 of their
bytes, contiguous copies). It runs the runner's SDPA backend, SDPBackend.MATH in the
same dtype, and MATH in float64 as the reference, then prints the three at the worst
element (an element whose finiteness differs from the reference first, else the largest
error) and `MISMATCH` with exit status 1 when the backend differs from the reference in
finiteness or errs by more than twice the same-dtype MATH error.

torch-sdpa and torch-math compose the op before the kernel (runners/torch_composed.py);
their script is the same public call, on torch's default dispatch and on MATH.
"""

from __future__ import annotations

import base64
import textwrap
from typing import Any

#: The SDPA backend each torch runner runs under (None: torch's own dispatch).
BACKENDS = {"torch-api-math": "MATH", "torch-api-flash": "FLASH_ATTENTION",
            "torch-api-efficient": "EFFICIENT_ATTENTION", "torch-api-cudnn": "CUDNN_ATTENTION",
            "torch-sdpa": None, "torch-math": "MATH"}
#: Embedded tensors beyond this many bytes make the script too long for an issue.
EMBED_LIMIT = 1 << 20

_TEMPLATE = '''\
"""{title}

Standalone: needs only torch (no fia-fuzz). Run: python repro_torch.py
The call as torch's public scaled_dot_product_attention takes it ({runner}, case
{case_id}); tensors embedded bit for bit. Exit status 1 when the backend differs from the
float64 MATH reference in finiteness, or errs by more than twice the same-dtype MATH.
"""
import base64
import contextlib
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKEND = {backend!r}  # None: torch's default dispatch
DEVICE = {device!r}
SCALE = {scale!r}
IS_CAUSAL = {causal!r}
ENABLE_GQA = {gqa!r}
#: name: (dtype, shape, base64 of the bytes)
TENSORS = {{
{tensors}
}}


def tensor(name):
    dtype, shape, data = TENSORS[name]
    raw = bytearray(base64.b64decode(data))
    t = torch.frombuffer(raw, dtype=getattr(torch, dtype)) if raw else \\
        torch.empty(0, dtype=getattr(torch, dtype))
    return t.reshape(shape).to(DEVICE)


def sdpa(backend, dtype=None):
    q, k, v = (tensor(n) for n in ("query", "key", "value"))
    if dtype is not None:
        q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    mask = tensor("attn_mask") if "attn_mask" in TENSORS else None
    extra = {{"enable_gqa": True}} if ENABLE_GQA else {{}}
    ctx = sdpa_kernel([getattr(SDPBackend, backend)]) if backend else contextlib.nullcontext()
    with torch.no_grad(), ctx:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=IS_CAUSAL,
                                              scale=SCALE, **extra).double().cpu()


def worst(actual, ref):
    """(index, why): the first element whose finiteness differs, else the largest error."""
    differs = (torch.isnan(actual) != torch.isnan(ref)) | (
        torch.isinf(actual) != torch.isinf(ref)) | (
        torch.isinf(ref) & torch.isinf(actual) & (actual != ref))
    if differs.any():
        flat = int(differs.flatten().nonzero()[0])
        return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), actual.shape)), \\
            f"finiteness differs at {{int(differs.sum())}} of {{actual.numel()}} elements"
    err = (actual - ref).abs().nan_to_num(0.0)
    flat = int(err.flatten().argmax())
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), actual.shape)), \\
        f"max abs error {{float(err.max()):.6g}}"


def max_err(x, ref):
    both = torch.isfinite(x) & torch.isfinite(ref)
    return float((x - ref).abs()[both].max()) if both.any() else 0.0


def main():
    print(f"torch {{torch.__version__}}; backend {{BACKEND or 'default'}}; "
          f"query {{TENSORS['query'][0]}}{{list(TENSORS['query'][1])}}, "
          f"key {{TENSORS['key'][0]}}{{list(TENSORS['key'][1])}}")
    dtype = getattr(torch, TENSORS["query"][0])
    ref = sdpa("MATH", torch.float64)
    actual = sdpa(BACKEND)
    same = sdpa("MATH")
    at, why = worst(actual, ref)
    print(f"worst element out{{list(at)}} (B, N, S, D): {{why}}")
    print(f"  expected (MATH float64):   {{float(ref[at])!r}}")
    print(f"  MATH ({{TENSORS['query'][0]}}):          {{float(same[at])!r}}")
    print(f"  {{BACKEND or 'default'}} ({{TENSORS['query'][0]}}): {{float(actual[at])!r}}")
    nonfinite = why.startswith("finiteness")
    bound = 2 * (max_err(same, ref) if BACKEND != "MATH"
                 else max_err(ref.to(dtype).double(), ref)) + 1e-6
    if nonfinite or max_err(actual, ref) > bound:
        print(f"MISMATCH: {{BACKEND or 'default'}} differs from the float64 reference ({{why}}"
              f"{{'' if nonfinite else f'; bound {{bound:.3g}}'}})")
        return 1
    print("no mismatch: the backend agrees with the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _tensor_line(name: str, t: Any) -> str:
    import torch

    t = t.detach().contiguous().cpu()
    raw = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    data = base64.b64encode(raw).decode()
    dtype = str(t.dtype).removeprefix("torch.")
    wrapped = "\n".join(textwrap.wrap(data, 88)) or ""
    lines = "".join(f"        {chunk!r}\n" for chunk in wrapped.splitlines()) or "        ''\n"
    return f"    {name!r}: ({dtype!r}, {tuple(t.shape)!r},\n{lines}    ),"


def script_for(args: dict[str, Any], runner: str, case_id: str, title: str,
               device: str = "cpu") -> str:
    """The script's text for the SDPA arguments `args` (`sdpa_arguments`) of `runner`;
    ValueError when the tensors are too large to embed."""
    tensors = {n: args[n] for n in ("query", "key", "value")}
    if args.get("attn_mask") is not None:
        tensors["attn_mask"] = args["attn_mask"]
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if size > EMBED_LIMIT:
        raise ValueError(f"the failing batch's tensors hold {size} bytes, more than "
                         f"{EMBED_LIMIT} to embed in a script")
    return _TEMPLATE.format(
        title=title.replace('"""', "'''"), runner=runner, case_id=case_id,
        backend=BACKENDS[runner], device=device, scale=float(args["scale"]),
        causal=bool(args["is_causal"]), gqa=bool(args["enable_gqa"]),
        tensors="\n".join(_tensor_line(n, t) for n, t in tensors.items()))
