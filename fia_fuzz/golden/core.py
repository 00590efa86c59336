"""The attention step itself, in the two precisions the differ needs.

`precision="fp64"` is the ideal reference. `precision="device"` follows the
vendor flow for fp16/bf16 inputs (fia-semantics.md §5): scores and softmax in
fp32, the unnormalised P cast to the input dtype before P·V with fp32
accumulation, division by the row sum in fp32; the caller casts to the output
dtype. Inputs are BNSD; GQA maps query head n to KV head n // G.
"""

from __future__ import annotations

import numpy as np

PRECISIONS = ("device", "fp64")


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float,
              precision: str, p_dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) for BNSD q (B,N,S1,D), k (B,KV_N,S2,D), v (B,KV_N,S2,Dv).

    Returns out unnormalised-then-divided in the working float type and lse
    (B,N,S1); rows with no key get out 0 and lse +inf.
    """
    work = np.float64 if precision == "fp64" else np.float32
    b, n, s1, d = q.shape
    kv_n, s2, dv = k.shape[1], k.shape[2], v.shape[3]
    g = n // kv_n
    qg = q.astype(work).reshape(b, kv_n, g, s1, d)
    kg = k.astype(work)[:, :, None]
    vg = v.astype(work)[:, :, None]
    if s2 == 0:
        return np.zeros((b, n, s1, dv), work), np.full((b, n, s1), np.inf, work)
    scores = np.matmul(qg, kg.swapaxes(-1, -2)) * work(scale)
    m = scores.max(axis=-1, keepdims=True)
    p = np.exp(scores - m)
    l_sum = p.sum(axis=-1, keepdims=True)
    if precision == "device":
        p = p.astype(p_dtype).astype(work)
    out = np.matmul(p, vg) / l_sum
    lse = (np.log(l_sum) + m)[..., 0]
    return out.reshape(b, n, s1, dv), lse.reshape(b, n, s1)
