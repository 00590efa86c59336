"""KV sources and score extras: GQA, paged caches, tensor lists, shared prefix, MLA rope,
learnable_sink, pse_shift [SEM §2, §5, §6, §9]."""

import ml_dtypes
import numpy as np
import pytest
from golden_refs import close, dense_ref, golden, rand
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.golden import npu_fused_infer_attention_score

CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)


@given(st.integers(1, 3), st.sampled_from([1, 2]), st.sampled_from([2, 4, 8]),
       st.integers(1, 9), st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_gqa_equals_mha_with_repeated_kv_heads(b, kvn, g, s1, s2, seed):
    """Query head n uses KV head n // G [SEM §5]; bit-identical in device precision."""
    rng = np.random.default_rng(seed)
    n = kvn * g
    q, k, v = rand(rng, (b, n, s1, 16)), rand(rng, (b, kvn, s2, 16)), rand(rng, (b, kvn, s2, 16))
    kw = {"num_heads": n, "input_layout": "BNSD", "softmax_lse_flag": True, "scale": 0.2}
    for precision in ("device", "fp64"):
        gqa = npu_fused_infer_attention_score(q, k, v, num_key_value_heads=kvn,
                                              precision=precision, **kw)
        mha = npu_fused_infer_attention_score(q, np.repeat(k, g, 1), np.repeat(v, g, 1),
                                              precision=precision, **kw)
        assert gqa[0].tobytes() == mha[0].tobytes() and gqa[1].tobytes() == mha[1].tobytes()


def page(x, lens, bs, cache_layout, rng, junk=-1):
    """Contiguous BNSD KV as a paged cache with a shuffled block table.

    Table entries past each batch's blocks hold `junk`, which must never be read.
    """
    b, n, _, d = x.shape
    need = [-(-int(s) // bs) for s in lens]
    total = sum(need) + 2
    ids = rng.permutation(total)
    width = max(need) + 1
    table = np.full((b, width), junk, np.int32)
    tokens = np.zeros((total, bs, n, d), x.dtype)
    tokens[:] = 7  # blocks nobody owns: reading them would show
    i = 0
    for bi in range(b):
        for j in range(need[bi]):
            blk = ids[i]
            i += 1
            table[bi, j] = blk
            part = x[bi, :, j * bs:(j + 1) * bs].transpose(1, 0, 2)
            tokens[blk, :part.shape[0]] = part
    if cache_layout == "BnBsH":
        return tokens.reshape(total, bs, n * d), table
    if cache_layout == "BnNBsD":
        return tokens.transpose(0, 2, 1, 3).copy(), table
    return tokens.reshape(total, bs, n, d // 16, 16).transpose(0, 2, 3, 1, 4).copy(), table


@pytest.mark.parametrize("layout,cache,s1,bs", [
    ("BSH", "BnBsH", 1, 16), ("BSND", "BnBsH", 1, 32), ("BNSD", "BnNBsD", 1, 16),
    ("BNSD", "BnBsH", 4, 128), ("BNSD", "BnNBsD", 3, 128), ("BSH", "BnBsH", 5, 128)])
@pytest.mark.parametrize("junk", [-1, 2**30])
def test_paged_equals_contiguous(layout, cache, s1, bs, junk):
    """Token s of batch b is at block_table[b][s // bs], offset s % bs [SEM §2]."""
    rng = np.random.default_rng(bs + s1)
    b, n, kvn, d = 3, 4, 2, 16
    lens = [bs * 2 + 3, 1, bs - 1]
    s2 = max(lens)
    q = rand(rng, (b, n, s1, d))
    k, v = rand(rng, (b, kvn, s2, d)), rand(rng, (b, kvn, s2, d))
    kc, table_k = page(k, lens, bs, cache, np.random.default_rng(0), junk)
    vc, table_v = page(v, lens, bs, cache, np.random.default_rng(0), junk)
    assert (table_k == table_v).all()

    def to_layout(x):
        if layout == "BSND":
            return x.transpose(0, 2, 1, 3).copy()
        if layout == "BSH":
            return x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1).copy()
        return x

    kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": layout,
          "actual_seq_lengths_kv": lens, "softmax_lse_flag": True}
    for precision in ("device", "fp64"):
        got = npu_fused_infer_attention_score(to_layout(q), kc, vc, block_table=table_k,
                                              block_size=bs, precision=precision, **kw)
        want = npu_fused_infer_attention_score(to_layout(q), to_layout(k), to_layout(v),
                                               precision=precision, **kw)
        close(got[0], want[0], 0 if precision == "device" else 1e-12)
        close(got[1], want[1], 0 if precision == "device" else 1e-12)


@given(st.integers(1, 4), st.integers(2, 8), st.integers(0, 2**32 - 1), st.booleans())
def test_tensor_list_equals_padded_batch(b, s1, seed, with_lengths):
    """Tensor-list KV: each batch its own S; equals a padded batch with actual lengths."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, b).tolist()
    lens = [int(rng.integers(0, s + 1)) for s in sizes] if with_lengths else sizes
    s2 = max(sizes)
    q = rand(rng, (b, s1, 32))
    ks = [rand(rng, (1, s, 32)) for s in sizes]
    vs = [rand(rng, (1, s, 32)) for s in sizes]
    kp = np.zeros((b, s2, 32), np.float16)
    vp = np.zeros((b, s2, 32), np.float16)
    for i, s in enumerate(sizes):
        kp[i, :s], vp[i, :s] = ks[i][0], vs[i][0]
    kw = {"num_heads": 2, "input_layout": "BSH"}
    extra = {"actual_seq_lengths_kv": lens} if with_lengths else {}
    got = golden(q, ks, vs, **kw, **extra)
    want = golden(q, kp, vp, actual_seq_lengths_kv=lens, **kw)
    close(got[0], want[0])
    close(got[1], want[1])


@given(st.integers(1, 3), st.integers(2, 10), st.integers(1, 12), st.integers(1, 8),
       st.sampled_from(["none", "mode3", "mask"]), st.integers(0, 2**32 - 1))
def test_prefix_equals_concatenated_kv(b, s1, s2, sp, masking, seed):
    """The shared prefix comes before every batch's KV and counts in S2 [SEM §6]."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(0, sp + 1))
    q = rand(rng, (b, 2, s1, 16))
    k, v = rand(rng, (b, 2, s2, 16)), rand(rng, (b, 2, s2, 16))
    pk, pv = rand(rng, (1, 2, sp, 16)), rand(rng, (1, 2, sp, 16))
    act_kv = rng.integers(0, s2 + 1, b).tolist()
    kw = {"num_heads": 2, "input_layout": "BNSD"}
    if masking == "mode3":
        kw.update(sparse_mode=3, atten_mask=CAUSAL_2048)
    elif masking == "mask":
        kw.update(atten_mask=rng.random((b, 1, s1, p + s2)) < 0.3)
    got = golden(q, k, v, key_shared_prefix=pk, value_shared_prefix=pv,
                 actual_shared_prefix_len=[p], actual_seq_lengths_kv=act_kv, **kw)
    for x in range(b):
        ck = np.concatenate([pk[:, :, :p], k[x:x + 1, :, :act_kv[x]]], axis=2)
        cv = np.concatenate([pv[:, :, :p], v[x:x + 1, :, :act_kv[x]]], axis=2)
        kwx = dict(kw)
        if masking == "mask":
            kwx["atten_mask"] = kw["atten_mask"][x:x + 1, :, :, :p + act_kv[x]]
        if ck.shape[2] == 0:
            assert (got[0][x] == 0).all() and np.isinf(got[1][x]).all()
            continue
        want = golden(q[x:x + 1], ck, cv, **kwx)
        close(got[0][x:x + 1], want[0])
        close(got[1][x:x + 1], want[1])


def test_prefix_length_defaults_to_whole_prefix():
    rng = np.random.default_rng(12)
    q, k, pk = rand(rng, (1, 1, 3, 16)), rand(rng, (1, 1, 4, 16)), rand(rng, (1, 1, 5, 16))
    a = golden(q, k, k, input_layout="BNSD", key_shared_prefix=pk, value_shared_prefix=pk)
    b = golden(q, k, k, input_layout="BNSD", key_shared_prefix=pk, value_shared_prefix=pk,
               actual_shared_prefix_len=[5])
    close(a[0], b[0])


@pytest.mark.parametrize("layout,cache,s1", [
    ("BSH", "BnBsH", 1), ("BSND", "NZ", 1), ("BNSD", "BnNBsD", 1), ("BSH_NBSD", "BnBsH", 4),
    ("BSND_NBSD", "NZ", 3), ("BNSD_NBSD", "BnBsH", 2)])
def test_mla_rope_d512_paged(layout, cache, s1):
    """MLA: scores from [q, q_rope]·[k, k_rope]; values from `value`, Dv 512 [SEM §9]."""
    rng = np.random.default_rng(s1)
    b, n, d, bs = 2, 4, 512, 128
    lens = [130, 7]
    s2 = max(lens)
    q, qr = rand(rng, (b, n, s1, d)), rand(rng, (b, n, s1, 64))
    k, kr, v = rand(rng, (b, 1, s2, d)), rand(rng, (b, 1, s2, 64)), rand(rng, (b, 1, s2, d))
    kc, table = page(k, lens, bs, cache, np.random.default_rng(1))
    krc, _ = page(kr, lens, bs, cache, np.random.default_rng(1))
    vc, _ = page(v, lens, bs, cache, np.random.default_rng(1))
    in_layout = layout.split("_")[0]

    def to_layout(x):
        if in_layout == "BSND":
            return x.transpose(0, 2, 1, 3).copy()
        if in_layout == "BSH":
            return x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1).copy()
        return x

    kw = {}
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=CAUSAL_2048)
    out, _ = golden(to_layout(q), kc, vc, query_rope=to_layout(qr), key_rope=krc,
                    block_table=table, block_size=bs, num_heads=n, num_key_value_heads=1,
                    input_layout=layout, actual_seq_lengths_kv=lens, scale=0.05,
                    softmax_lse_flag=False, **kw)
    ex = np.zeros((b, 1, s1, s2), bool)
    for x in range(b):
        j, i = np.arange(s2)[None, :], np.arange(s1)[:, None]
        ex[x, 0] = (j >= lens[x]) | ((j > i + lens[x] - s1) if s1 > 1 else False)
    ref, _ = dense_ref(np.concatenate([q, qr], -1), np.concatenate([k, kr], -1), v, 0.05,
                       excluded=ex)
    if layout.endswith("NBSD"):
        ref = ref.transpose(1, 0, 2, 3)
    else:
        ref = to_layout(ref)
    close(out, ref)


@pytest.mark.parametrize("layout", ["TND", "NTD_TND"])
def test_mla_rope_tnd_d128(layout):
    """TND MLA with D=128 (bfloat16, no paging) [V4 §TND query d=128]."""
    rng = np.random.default_rng(13)
    n, lq, lk = 2, [3, 2], [5, 4]
    bf = ml_dtypes.bfloat16

    def packed(lens, d):
        return rand(rng, (sum(lens), n if d != -1 else 1, abs(d)), np.float32).astype(bf)

    q, qr = packed(lq, 128), packed(lq, 64)
    k, kr, v = (rand(rng, (sum(lk), 1, d), np.float32).astype(bf) for d in (128, 64, 128))
    kw = {"num_heads": n, "num_key_value_heads": 1, "input_layout": layout,
          "actual_seq_lengths": np.cumsum(lq).tolist(),
          "actual_seq_lengths_kv": np.cumsum(lk).tolist(), "scale": 0.1}
    args = [q, k, v, qr, kr]
    if layout.startswith("NTD"):
        args = [a.transpose(1, 0, 2).copy() for a in args]
    out, lse = golden(args[0], args[1], args[2], query_rope=args[3], key_rope=args[4], **kw)
    for x in range(2):
        qs = slice(sum(lq[:x]), sum(lq[:x + 1]))
        ks = slice(sum(lk[:x]), sum(lk[:x + 1]))

        def bnsd(t, sl):
            return t[sl].transpose(1, 0, 2)[None]

        ref, ref_lse = dense_ref(np.concatenate([bnsd(q, qs), bnsd(qr, qs)], -1),
                                 np.concatenate([bnsd(k, ks), bnsd(kr, ks)], -1),
                                 bnsd(v, ks), 0.1)
        close(out[qs], ref[0].transpose(1, 0, 2))
        close(lse[qs], ref_lse[0].transpose(1, 0)[..., None])


@given(st.integers(1, 3), st.integers(1, 8), st.integers(0, 20), st.integers(0, 2**32 - 1))
def test_sink_equals_extra_key_with_zero_value(b, s1, s2, seed):
    """learnable_sink: l += exp(sink[n] - m), like a key of score sink[n], value 0 [SEM §5]."""
    rng = np.random.default_rng(seed)
    n = 4
    q, k, v = rand(rng, (b, n, s1, 16)), rand(rng, (b, 2, s2, 16)), rand(rng, (b, 2, s2, 16))
    sink = (rng.standard_normal(n) * 2).astype(np.float32)
    out, lse = golden(q, k, v, num_heads=n, num_key_value_heads=2, input_layout="BNSD",
                      learnable_sink=sink, scale=0.3)
    if s2 == 0:
        assert (out == 0).all()
        return
    ref, ref_lse = dense_ref(q, k, v, 0.3, sink=sink)
    close(out, ref)
    close(lse, ref_lse[..., None])


@pytest.mark.parametrize("form", ["B", "1", "oversized"])
@pytest.mark.parametrize("s1", [1, 5])
def test_pse_shift_is_added_to_scaled_scores(form, s1):
    """pse_shift (B|1, N, S1, S2), possibly larger, added after the scale [SEM §5]."""
    rng = np.random.default_rng(14)
    b, n, s2 = 2, 2, 9
    q, k, v = rand(rng, (b, n, s1, 16)), rand(rng, (b, n, s2, 16)), rand(rng, (b, n, s2, 16))
    pse = rand(rng, (b if form == "B" else 1, n, s1, s2))
    given_pse = pse
    if form == "oversized":  # a decode pse has its one row [V4 pseShift Q_S=1]
        given_pse = rand(rng, (1, n, s1 + (3 if s1 > 1 else 0), s2 + 7))
        given_pse[:, :, :s1, :s2] = pse
    out, lse = golden(q, k, v, num_heads=n, input_layout="BNSD", pse_shift=given_pse,
                      scale=0.4)
    ref, ref_lse = dense_ref(q, k, v, 0.4, bias=pse)
    close(out, ref)
    close(lse, ref_lse[..., None])


@given(st.integers(2, 10), st.integers(0, 12), st.integers(0, 2**32 - 1))
def test_decode_row_equals_prefill_row(s1, extra, seed):
    """Row i of a mode-3 prefill == a decode call of that row over its visible keys."""
    rng = np.random.default_rng(seed)
    s2 = s1 + extra
    q, k, v = rand(rng, (1, 2, s1, 16)), rand(rng, (1, 2, s2, 16)), rand(rng, (1, 2, s2, 16))
    kw = {"num_heads": 2, "input_layout": "BNSD", "scale": 0.25}
    pre = golden(q, k, v, sparse_mode=3, atten_mask=CAUSAL_2048, **kw)
    for i in range(s1):
        dec = golden(q[:, :, i:i + 1], k, v, actual_seq_lengths_kv=[i + extra + 1], **kw)
        close(pre[0][:, :, i:i + 1], dec[0])
        close(pre[1][:, :, i:i + 1], dec[1])


def test_empty_query_and_empty_kv():
    rng = np.random.default_rng(15)
    q0 = np.zeros((2, 0, 32), np.float16)
    out, lse = golden(q0, rand(rng, (2, 4, 32)), rand(rng, (2, 4, 32)), num_heads=2)
    assert out.shape == (2, 0, 32)
    q = rand(rng, (2, 3, 32))
    k0 = np.zeros((2, 0, 32), np.float16)
    for precision in ("device", "fp64"):
        out, lse = npu_fused_infer_attention_score(q, k0, k0, num_heads=2,
                                                   softmax_lse_flag=True, precision=precision)
        assert out.shape == (2, 3, 32) and (out == 0).all() and np.isinf(lse).all()


def test_mla_tnd_d512_paged():
    """TND MLA D=512: paged, per-batch (not cumulative) KV lengths [V4 §TND d=512]."""
    rng = np.random.default_rng(16)
    n, bs, lq, lk = 32, 128, [2, 3], [130, 40]
    q, qr = rand(rng, (sum(lq), n, 512)), rand(rng, (sum(lq), n, 64))
    b, s2 = 2, max(lk)
    k, kr, v = (rand(rng, (b, 1, s2, d)) for d in (512, 64, 512))
    kc, table = page(k, lk, bs, "BnBsH", np.random.default_rng(2))
    krc, _ = page(kr, lk, bs, "BnBsH", np.random.default_rng(2))
    vc, _ = page(v, lk, bs, "BnBsH", np.random.default_rng(2))
    out, _ = golden(q, kc, vc, query_rope=qr, key_rope=krc, block_table=table, block_size=bs,
                    num_heads=n, num_key_value_heads=1, input_layout="TND", scale=0.04,
                    actual_seq_lengths=np.cumsum(lq).tolist(), actual_seq_lengths_kv=lk,
                    sparse_mode=3, atten_mask=CAUSAL_2048, softmax_lse_flag=False)
    for x in range(b):
        rows = slice(sum(lq[:x]), sum(lq[:x + 1]))
        qx = np.concatenate([q[rows], qr[rows]], -1).transpose(1, 0, 2)[None]
        kx = np.concatenate([k[x:x + 1, :, :lk[x]], kr[x:x + 1, :, :lk[x]]], -1)
        i, j = np.arange(lq[x])[:, None], np.arange(lk[x])[None, :]
        ref, _ = dense_ref(qx, kx, v[x:x + 1, :, :lk[x]], 0.04, excluded=j > i + lk[x] - lq[x])
        close(out[rows], ref[0].transpose(1, 0, 2))


def test_decode_kv_left_padding_window_before_zero_gives_zeros():
    """IFA: a kv window starting before 0 returns zeros; padding without lengths is ignored."""
    rng = np.random.default_rng(17)
    q, k = rand(rng, (2, 1, 1, 16)), rand(rng, (2, 1, 6, 16))
    out, lse = golden(q, k, k, input_layout="BNSD", actual_seq_lengths_kv=[4, 5],
                      kv_padding_size=[1, 3])
    assert (out[1] == 0).all() and np.isinf(lse[1]).all()
    ref, _ = golden(q[:1], k[:1, :, 1:5], k[:1, :, 1:5], input_layout="BNSD")
    close(out[:1], ref)
    plain = golden(q, k, k, input_layout="BNSD")
    ignored = golden(q, k, k, input_layout="BNSD", kv_padding_size=[2, 2])
    close(ignored[0], plain[0])
