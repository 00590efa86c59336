"""MLA full quantisation: int8 q/k/v, bf16 rope, per-(token, head) query scales and
per-tensor K/V scales [TNPU v2 约束说明 query d=512 全量化; golden/mla_quant.py]."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score as fia
from fia_fuzz.golden import npu_fused_infer_attention_score_v2 as fia_v2
from fia_fuzz.rules.rule import IllegalCall

BF16 = ml_dtypes.bfloat16
CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)
N, D, DR, BS = 8, 512, 64, 128


def _nz(logical: np.ndarray, lens: list[int], rng: np.random.Generator, cols: int
        ) -> tuple[np.ndarray, np.ndarray]:
    """(B, 1, S2, D) KV as a 5-D NZ cache (blocks, 1, D/cols, BS, cols), shuffled table."""
    b, _, _, d = logical.shape
    need = [-(-s // BS) for s in lens]
    total = sum(need) + 1
    ids = rng.permutation(total)
    table = np.full((b, max(need)), -1, np.int32)
    cache = np.full((total, 1, d // cols, BS, cols), 3, logical.dtype)
    i = 0
    for x in range(b):
        for j in range(need[x]):
            part = logical[x, 0, j * BS:(j + 1) * BS]
            cache[ids[i], 0, :, :part.shape[0]] = part.reshape(-1, d // cols, cols)\
                .transpose(1, 0, 2)
            table[x, j] = ids[i]
            i += 1
    return cache, table


def _dyadic(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return np.exp2(rng.integers(-9, -5, shape)).astype(np.float32)


def _case(layout: str, q_lens: list[int], kv_lens: list[int], seed: int = 0):
    """(call kwargs, float64 BNSD parts per batch for the reference)."""
    rng = np.random.default_rng(seed)
    b, s2 = len(kv_lens), max(kv_lens)
    s1 = max(q_lens)
    tokens = sum(q_lens) if layout == "TND" else b * s1
    q_tok = rng.integers(-128, 128, (tokens, N, D), dtype=np.int8)
    qr_tok = rng.standard_normal((tokens, N, DR)).astype(BF16)
    dsq = _dyadic(rng, (tokens, N, 1))
    k = rng.integers(-128, 128, (b, 1, s2, D), dtype=np.int8)
    v = rng.integers(-128, 128, (b, 1, s2, D), dtype=np.int8)
    kr = rng.standard_normal((b, 1, s2, DR)).astype(BF16)
    dk, dv = np.float32(2.0 ** -6), np.float32(2.0 ** -5)
    kc, table = _nz(k, kv_lens, np.random.default_rng(seed + 1), 32)
    vc, _ = _nz(v, kv_lens, np.random.default_rng(seed + 1), 32)
    krc, _ = _nz(kr, kv_lens, np.random.default_rng(seed + 1), 16)
    if layout == "TND":
        query, query_rope = q_tok, qr_tok
        extra = {"actual_seq_lengths": np.cumsum(q_lens).tolist()}
    else:
        hidden = layout.startswith("BSH")
        query = q_tok.reshape(b, s1, N * D) if hidden else q_tok.reshape(b, s1, N, D)
        query_rope = qr_tok.reshape(b, s1, N * DR) if hidden else qr_tok.reshape(b, s1, N, DR)
        extra = {}
    if s1 > 1:
        extra.update(sparse_mode=3, atten_mask=CAUSAL_2048)
    kw = dict(query=query, key=kc, value=vc, query_rope=query_rope, key_rope=krc,
              block_table=table, block_size=BS, num_heads=N, num_key_value_heads=1,
              input_layout=layout, actual_seq_lengths_kv=kv_lens, scale=0.03,
              dequant_scale_query=dsq, query_quant_mode=3,
              key_antiquant_scale=np.array([dk]), value_antiquant_scale=np.array([dv]), **extra)
    deq_q = q_tok.astype(np.float64) * dsq
    ref_parts = []
    t0 = 0
    for x in range(b):
        rows = slice(t0, t0 + q_lens[x]) if layout == "TND" else slice(x * s1, (x + 1) * s1)
        t0 += q_lens[x]
        qx = np.concatenate([deq_q[rows], qr_tok[rows].astype(np.float64)], -1)
        kx = np.concatenate([k[x, 0, :kv_lens[x]] * float(dk),
                             kr[x, 0, :kv_lens[x]].astype(np.float64)], -1)
        ref_parts.append((qx, kx, v[x, 0, :kv_lens[x]] * float(dv)))
    return kw, ref_parts


def _reference(parts, q_lens: list[int], kv_lens: list[int], scale: float) -> list[np.ndarray]:
    """Float64 causal-from-the-bottom-right attention per batch, (S1_b, N, Dv) each."""
    outs = []
    for (q, k, v), _lq, lk in zip(parts, q_lens, kv_lens, strict=True):
        s = np.einsum("tnd,kd->ntk", q, k) * scale
        i, j = np.arange(q.shape[0])[:, None], np.arange(lk)[None, :]
        s = np.where(j > i + lk - q.shape[0], -np.inf, s)
        p = np.exp(s - s.max(-1, keepdims=True))
        outs.append((np.einsum("ntk,kd->ntd", p, v) / p.sum(-1, keepdims=True))
                    .transpose(1, 0, 2))
    return outs


def _batches(out: np.ndarray, layout: str, q_lens: list[int]) -> list[np.ndarray]:
    """The output per batch as (S1_b, N, Dv)."""
    if layout == "TND":
        ends = np.cumsum(q_lens)
        return [out[e - lq:e] for e, lq in zip(ends, q_lens, strict=True)]
    if layout == "BSH":
        out = out.reshape(out.shape[0], out.shape[1], N, -1)
    elif layout.endswith("NBSD"):
        out = out.transpose(1, 2, 0, 3)
    return list(out)


@pytest.mark.parametrize("layout,q_lens", [
    ("BSND", [1, 1]), ("BSH", [3, 3]), ("BSND_NBSD", [2, 2]), ("BSH_NBSD", [4, 4])])
def test_fp64_is_attention_on_the_dequantised_tensors(layout, q_lens) -> None:
    kv_lens = [200, 57]
    kw, parts = _case(layout, q_lens, kv_lens)
    out, _ = fia(**kw, precision="fp64")
    for got, ref in zip(_batches(out, layout, q_lens),
                        _reference(parts, q_lens, kv_lens, 0.03), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_device_output_is_bf16_within_its_rounding() -> None:
    kw, _ = _case("BSND", [2, 2], [150, 129], seed=3)
    dev, _ = fia(**kw)
    ideal, _ = fia(**kw, precision="fp64")
    assert dev.dtype == BF16
    err = np.abs(dev.astype(np.float64) - ideal)
    assert err.max() <= 2.0 ** -6 * np.abs(ideal).max()


def test_scales_are_applied_where_documented() -> None:
    """Halving every query scale while doubling the key scale leaves the scores, hence
    the output, unchanged; doubling the value scale doubles the output."""
    kw, _ = _case("BSND", [1, 1], [100, 60], seed=5)
    base, _ = fia(**kw, precision="fp64")
    doubled, _ = fia(**{**kw, "value_antiquant_scale": kw["value_antiquant_scale"] * 2},
                     precision="fp64")
    np.testing.assert_allclose(doubled, 2 * base, rtol=1e-13)
    k2 = {**kw, "key_antiquant_scale": kw["key_antiquant_scale"] * 2,
          "dequant_scale_query": kw["dequant_scale_query"] / 2}
    np.testing.assert_allclose(fia(**k2, precision="fp64")[0], base, rtol=1e-12)


def test_v2_names_reach_the_same_path() -> None:
    kw, _ = _case("BSND", [1, 1], [90, 130], seed=7)
    a = fia(**kw)
    v2 = {k: v for k, v in kw.items() if k not in (
        "key_antiquant_scale", "value_antiquant_scale", "num_heads", "scale",
        "actual_seq_lengths_kv")}
    b = fia_v2(**v2, dequant_scale_key=kw["key_antiquant_scale"],
               dequant_scale_value=kw["value_antiquant_scale"], num_query_heads=N,
               softmax_scale=0.03, actual_seq_kvlen=kw["actual_seq_lengths_kv"])
    assert a[0].tobytes() == b[0].tobytes()


def test_missing_value_scale_names_the_rule() -> None:
    kw, _ = _case("BSND", [1, 1], [90, 130])
    del kw["value_antiquant_scale"]
    with pytest.raises(IllegalCall, match="mla.full_quant_scales"):
        fia(**kw)
