"""Independent references and data builders for the golden model's tests.

`dense_ref` is plain float64 softmax attention over an explicit exclusion
mask, written without the golden's blocking, windows or layouts, so a
golden bug cannot hide in a shared helper.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score

FP64 = {"precision": "fp64"}


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float16) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def dense_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
              excluded: np.ndarray | None = None, bias: np.ndarray | None = None,
              sink: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """float64 (out (B,N,S1,Dv), lse (B,N,S1)) for BNSD q/k/v with GQA.

    excluded: bool broadcastable to (B, N, S1, S2); bias likewise. Rows whose
    keys are all excluded are 0 with lse +inf.
    """
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bnqd,bnkd->bnqk", q, k) * scale
    if bias is not None:
        s = s + bias.astype(np.float64)
    if excluded is None:
        excluded = np.zeros(s.shape, bool)
    excluded = np.broadcast_to(excluded, s.shape)
    s = np.where(excluded, -np.inf, s)
    dead = excluded.all(axis=-1)
    if sink is not None:
        col = np.broadcast_to(np.asarray(sink, np.float64)[None, :, None, None],
                              s.shape[:3] + (1,))
        s = np.concatenate([s, col], axis=-1)
        v = np.concatenate([v, np.zeros(v.shape[:2] + (1, v.shape[3]))], axis=2)
    m = np.where(dead, 0, s.max(axis=-1))
    p = np.exp(s - m[..., None])
    l_sum = p.sum(axis=-1)
    out = np.einsum("bnqk,bnkd->bnqd", p, v) / np.where(dead, 1, l_sum)[..., None]
    out[dead] = 0
    lse = np.where(dead, np.inf, np.log(np.where(dead, 1, l_sum)) + m)
    return out, lse


def golden(*args, **kw) -> tuple[np.ndarray, np.ndarray]:
    """The golden in fp64 with lse on (the form most tests compare)."""
    kw.setdefault("softmax_lse_flag", True)
    kw.setdefault("precision", "fp64")
    return npu_fused_infer_attention_score(*args, **kw)


def close(a: np.ndarray, b: np.ndarray, tol: float = 1e-9) -> None:
    """Equal up to float64 reassociation, with +inf (invalid rows) matched exactly."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert (np.isinf(a) == np.isinf(b)).all(), "invalid rows differ"
    fin = np.isfinite(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=tol, atol=tol)
