"""The two precisions from one code path, and blocking that must not change the math
[SEM §5]."""

import ml_dtypes
import numpy as np
import pytest
from golden_refs import close, dense_ref, golden, rand

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.core import KV_BLOCK, round_p
from fia_fuzz.golden.kernels import exp_shifted, row_max, row_sum


def test_round_p_float16_is_a_cast():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(1 << 16, np.float32) ** 12,
                        np.float32(2.0 ** -24) * np.arange(0, 4096, 0.5, dtype=np.float32),
                        np.array([0, 1, 2.0 ** -14, 2.0 ** -25, 6.1e-5, 0.99999], np.float32)])
    want = x.astype(np.float16).astype(np.float32)
    assert (round_p(x.copy(), np.dtype(np.float16)) == want).all()
    bf = np.dtype(ml_dtypes.bfloat16)
    assert (round_p(x.copy(), bf) == x.astype(bf).astype(np.float32)).all()
    # a NaN beside subnormal-range values: those still go to the 2^-24 grid
    y = np.array([np.nan, 2.0 ** -20 + 2.0 ** -30, 0.5], np.float32)
    got = round_p(y.copy(), np.dtype(np.float16))
    assert np.isnan(got[0]) and (got[1:] == y[1:].astype(np.float16).astype(np.float32)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_is_the_max(dtype):
    """Row maxima by integer keys equal the max reduction, NaN rows (either sign), -inf rows
    and ±inf included."""
    rng = np.random.default_rng(3)
    s = rng.standard_normal((2, 3, 4, 7, 513)).astype(dtype)
    s[0, 0, 0, 0, 100] = np.nan
    s[0, 0, 0, 1] = -np.inf
    s[0, 0, 0, 2, 5] = np.inf
    s[0, 0, 0, 3, 7:9] = [np.nan, np.inf]
    s[1, 2, 3, 6] = 0.0
    s[1, 2, 3, 5, 9] = -np.float64(np.nan)  # NaN with the sign bit set
    s[1, 2, 3, 4, :] = -0.0
    rows = s.reshape(-1, s.shape[-1])
    got = np.array([row_max(rows, i) for i in range(len(rows))], dtype)
    want = rows.max(axis=-1)
    assert np.array_equal(got, want, equal_nan=True)
    got = got.reshape(s.shape[:-1])
    assert np.isnan(got[0, 0, 0, [0, 3]]).all() and got[0, 0, 0, 1] == -np.inf
    assert np.isnan(got[1, 2, 3, 5]) and got[1, 2, 3, 6] == 0


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_device_flow_by_hand(dtype):
    """fp32 scores and softmax, P cast to the input dtype, fp32 P·V, / l in fp32, cast."""
    rng = np.random.default_rng(1)
    q, k, v = (rand(rng, s, np.float32).astype(dtype) for s in
               ((1, 1, 5, 32), (1, 1, 17, 32), (1, 1, 17, 32)))
    scale = 0.17
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    s = np.matmul(q32 * np.float32(scale), k32.swapaxes(-1, -2))
    m = s.max(-1, keepdims=True)
    p = s - m
    rows = p.reshape(-1, p.shape[-1])  # the golden's exp and row sum (golden/kernels.py)
    for i in range(len(rows)):
        exp_shifted(rows, i, np.float32(0))
    l_sum = np.array([row_sum(rows, i) for i in range(len(rows))], np.float32)
    l_sum = l_sum.reshape(*p.shape[:-1], 1)
    o = np.matmul(p.astype(dtype).astype(np.float32), v32) / l_sum
    out, lse = npu_fused_infer_attention_score(q, k, v, input_layout="BNSD", scale=scale,
                                               softmax_lse_flag=True)
    assert out.dtype == np.dtype(dtype) and lse.dtype == np.float32
    assert out.tobytes() == o.astype(dtype).tobytes()
    np.testing.assert_allclose(lse[..., 0], (np.log(l_sum) + m)[..., 0], rtol=1e-6)


def test_fp64_returns_float64_unrounded():
    rng = np.random.default_rng(2)
    q, k = rand(rng, (1, 2, 3, 16)), rand(rng, (1, 2, 5, 16))
    out, lse = golden(q, k, k, num_heads=2, input_layout="BNSD")
    assert out.dtype == np.float64 and lse.dtype == np.float64
    ref, ref_lse = dense_ref(q, k, k, 1.0)
    close(out, ref, 1e-13)


def test_blocked_online_softmax_over_many_blocks_and_tiles():
    """S2 spanning several KV blocks, ragged lengths and a mask: exact in fp64."""
    rng = np.random.default_rng(3)
    b, n, s1, s2 = 2, 2, 40, 2 * KV_BLOCK + 77
    q, k, v = rand(rng, (b, n, s1, 16)), rand(rng, (b, n, s2, 16)), rand(rng, (b, n, s2, 16))
    mask = rng.random((b, 1, s1, s2)) < 0.5
    lens_q, lens_kv = [40, 13], [s2, KV_BLOCK + 3]
    out, lse = golden(q, k, v, num_heads=n, input_layout="BNSD", atten_mask=mask, scale=0.3,
                      actual_seq_lengths=lens_q, actual_seq_lengths_kv=lens_kv)
    ex = mask.copy()
    for x in range(b):
        ex[x, :, lens_q[x]:] = True
        ex[x, :, :, lens_kv[x]:] = True
    ref, ref_lse = dense_ref(q, k, v, 0.3, excluded=ex)
    close(out, ref, 1e-12)
    close(lse, ref_lse[..., None], 1e-12)
    dev, dev_lse = npu_fused_infer_attention_score(
        q, k, v, num_heads=n, input_layout="BNSD", atten_mask=mask, scale=0.3,
        actual_seq_lengths=lens_q, actual_seq_lengths_kv=lens_kv, softmax_lse_flag=True)
    # fp16 output rounding (2^-11 relative) plus the fp16 P cast
    np.testing.assert_allclose(dev.astype(np.float64), out, rtol=4e-3, atol=4e-3)
    fin = np.isfinite(ref_lse)
    np.testing.assert_allclose(dev_lse[..., 0][fin], ref_lse[fin], rtol=1e-5)


@pytest.mark.parametrize("inner_precise", [0, 1, 2, 3])
def test_inner_precise_does_not_change_the_reference_model(inner_precise):
    rng = np.random.default_rng(4)
    q, k = rand(rng, (1, 1, 4, 16)), rand(rng, (1, 1, 6, 16))
    a = npu_fused_infer_attention_score(q, k, k, input_layout="BNSD",
                                        inner_precise=inner_precise)
    b = npu_fused_infer_attention_score(q, k, k, input_layout="BNSD")
    assert a[0].tobytes() == b[0].tobytes()


def test_lse_flag_off_returns_an_empty_placeholder():
    rng = np.random.default_rng(5)
    q, k = rand(rng, (1, 1, 4, 16)), rand(rng, (1, 1, 6, 16))
    _, lse = npu_fused_infer_attention_score(q, k, k, input_layout="BNSD")
    assert lse.shape == (0,) and lse.dtype == np.float32
    _, lse = npu_fused_infer_attention_score(q, k, k, input_layout="BNSD", precision="fp64")
    assert lse.shape == (0,)


def test_thread_count_does_not_change_bits(monkeypatch):
    rng = np.random.default_rng(6)
    q, k = rand(rng, (2, 4, 300, 16)), rand(rng, (2, 4, 700, 16))
    runs = []
    for count in ("1", "3"):
        monkeypatch.setenv("FIA_GOLDEN_THREADS", count)
        runs.append(npu_fused_infer_attention_score(q, k, k, num_heads=4, input_layout="BNSD",
                                                    softmax_lse_flag=True))
    assert runs[0][0].tobytes() == runs[1][0].tobytes()
    assert runs[0][1].tobytes() == runs[1][1].tobytes()


def test_decode_and_split_jobs_do_not_change_bits(monkeypatch):
    """Decode (one row tile per job: K/V converted block by block), a single KV head whose
    row tiles are split over jobs, and a KV group of 16 heads split over tiles: same bits
    for 1 and 3 threads, and GQA equal to MHA on repeated KV heads."""
    rng = np.random.default_rng(7)
    shapes = [((3, 8, 1, 32), (3, 2, 2 * KV_BLOCK + 9, 32)), ((1, 1, 700, 16), (1, 1, 900, 16)),
              ((1, 16, 200, 16), (1, 1, KV_BLOCK + 40, 16))]
    data = [(rand(rng, qs), rand(rng, ks), rand(rng, ks)) for qs, ks in shapes]
    runs = []
    for count in ("1", "3"):
        monkeypatch.setenv("FIA_GOLDEN_THREADS", count)
        for precision in ("device", "fp64"):
            for q, k, v in data:
                n, kvn = q.shape[1], k.shape[1]
                kw = {"num_heads": n, "input_layout": "BNSD", "softmax_lse_flag": True,
                      "precision": precision}
                gqa = npu_fused_infer_attention_score(q, k, v, num_key_value_heads=kvn, **kw)
                mha = npu_fused_infer_attention_score(q, np.repeat(k, n // kvn, 1),
                                                      np.repeat(v, n // kvn, 1), **kw)
                assert gqa[0].tobytes() == mha[0].tobytes()
                assert gqa[1].tobytes() == mha[1].tobytes()
                runs.append([x.tobytes() for x in gqa])
    assert runs[:len(runs) // 2] == runs[len(runs) // 2:]
