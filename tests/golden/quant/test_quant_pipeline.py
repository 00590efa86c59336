"""The quantised paths through the public golden op, pinned by metamorphic relations.

- antiquant == float attention on the dequantised KV: bit-exact in both
  precisions when the dequantised values are exact in the query dtype (dyadic
  scales, integer offsets), and for the fp16 high-performance path against the
  KV dequantised in fp16 by hand;
- int8 output == post-quant of the golden's float output, bit-exact;
- full int8 quant through the blocked golden == the one-pass reference
  `int8_attention`.
"""

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score as fia
from fia_fuzz.golden import npu_fused_infer_attention_score_v2 as fia_v2
from fia_fuzz.golden.antiquant import dequantize
from fia_fuzz.golden.int4 import pack_int32_words, to_int4
from fia_fuzz.golden.quant import encode_uint64_scale, int8_attention, post_quantize_output

F16, BF16, F32 = np.float16, ml_dtypes.bfloat16, np.float32
B, N, KVN, D = 2, 4, 2, 32
RNG = np.random.default_rng(6)


def _q(s1=1, dtype=F16, d=D):
    return RNG.standard_normal((B, N, s1, d)).astype(dtype)


def _kv_int(s2, d=D, lo=-128, hi=128):
    return RNG.integers(lo, hi, (B, KVN, s2, d), dtype=np.int8)


def _dyadic(shape, dtype):
    """Powers of two in [2^-7, 2^-4]: (k + o) * s is exact in fp16 and bf16."""
    return (2.0 ** -RNG.integers(4, 8, shape)).astype(dtype)


def _ints(shape, dtype):
    return RNG.integers(-3, 4, shape).astype(dtype)


def _same(a, b):
    assert a[0].dtype == b[0].dtype and a[0].shape == b[0].shape
    assert a[0].tobytes() == b[0].tobytes()
    assert a[1].tobytes() == b[1].tobytes()


def _both_precisions(q, k, v, kf, vf, **kw):
    for precision in ("device", "fp64"):
        _same(fia(q, k, v, precision=precision, **kw),
              fia(q, kf, vf, precision=precision,
                  **{n: x for n, x in kw.items() if "antiquant" not in n}))


def _bcast(p, shape_bnsd):
    return np.broadcast_to(p, shape_bnsd).astype(np.float64)


BASE = dict(num_heads=N, num_key_value_heads=KVN, input_layout="BNSD", scale=0.3,
            softmax_lse_flag=True)


@pytest.mark.parametrize("offset", [False, True])
def test_combined_per_channel_decode(offset: bool) -> None:
    q, k, v = _q(), _kv_int(40), _kv_int(40)
    scale = _dyadic((2, KVN, 1, D), F16)
    off = _ints((2, KVN, 1, D), F16) if offset else None
    o = 0 if off is None else off.astype(np.float64)
    kf = ((k + (o[0] if offset else 0)) * scale[0].astype(np.float64)).astype(F16)
    vf = ((v + (o[1] if offset else 0)) * scale[1].astype(np.float64)).astype(F16)
    _both_precisions(q, k, v, kf, vf, antiquant_scale=scale, antiquant_offset=off,
                     antiquant_mode=0, **BASE)


def test_combined_per_tensor_and_per_token_decode() -> None:
    q, k, v = _q(), _kv_int(24), _kv_int(24)
    st = np.array([0.25, 0.0625], F16)
    _both_precisions(q, k, v, (k * 0.25).astype(F16), (v * 0.0625).astype(F16),
                     antiquant_scale=st, antiquant_mode=0, **BASE)
    sc, of = _dyadic((2, B, 24), F32), _ints((2, B, 24), F32)
    kf = ((k + of[0][:, None, :, None]) * sc[0][:, None, :, None]).astype(F16)
    vf = ((v + of[1][:, None, :, None]) * sc[1][:, None, :, None]).astype(F16)
    _both_precisions(q, k, v, kf, vf, antiquant_scale=sc, antiquant_offset=of,
                     antiquant_mode=1, **BASE)


@pytest.mark.parametrize(("kmode", "vmode"), [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1)])
def test_separate_modes_decode(kmode: int, vmode: int) -> None:
    s2 = 48
    q, k, v = _q(), _kv_int(s2), _kv_int(s2)
    shapes = {0: ((1, KVN, 1, D), F16, lambda p: p[0][None]),
              1: ((1, B, s2), F32, lambda p: p[0][:, None, :, None]),
              2: ((KVN,), F16, lambda p: p[None, :, None, None]),
              3: ((B, KVN, s2), F32, lambda p: p[..., None])}
    kw, floats = {}, []
    for name, mode, x in (("key", kmode, k), ("value", vmode, v)):
        shape, dtype, to_bnsd = shapes[mode]
        sc, of = _dyadic(shape, dtype), _ints(shape, dtype)
        kw |= {f"{name}_antiquant_scale": sc, f"{name}_antiquant_offset": of,
               f"{name}_antiquant_mode": mode}
        floats.append(((x + to_bnsd(of).astype(np.float64)) * to_bnsd(sc).astype(np.float64)
                       ).astype(F16))
    _both_precisions(q, k, v, *floats, **kw, **BASE)


@pytest.mark.parametrize("mode", [4, 5])
def test_pa_managed_per_token_modes(mode: int) -> None:
    bs, nblk, lens = 32, 6, [70, 33]
    h = KVN * D
    kc = RNG.integers(-128, 128, (nblk, bs, h), dtype=np.int8)
    vc = RNG.integers(-128, 128, (nblk, bs, h), dtype=np.int8)
    table = np.array([[4, 0, 2], [5, 1, -1]], np.int32)
    pshape = (nblk, bs) if mode == 4 else (nblk, KVN, bs)
    sk, sv, ok = _dyadic(pshape, F32), _dyadic(pshape, F32), _ints(pshape, F32)

    def deq_cache(c, s, o):  # physical (blk, bs, KV_N, D) times the block-managed params
        c4 = c.reshape(nblk, bs, KVN, D).astype(np.float64)
        if mode == 4:
            s4, o4 = s[:, :, None, None], o[:, :, None, None]
        else:
            s4, o4 = s.transpose(0, 2, 1)[..., None], o.transpose(0, 2, 1)[..., None]
        return ((c4 + o4) * s4).reshape(nblk, bs, h).astype(F16)

    q = RNG.standard_normal((B, 1, N * D)).astype(F16)
    kw = dict(num_heads=N, num_key_value_heads=KVN, input_layout="BSH", scale=0.3,
              softmax_lse_flag=True, block_table=table, block_size=bs,
              actual_seq_lengths_kv=lens)
    _both_precisions(q, kc, vc, deq_cache(kc, sk, ok), deq_cache(vc, sv, ok),
                     key_antiquant_scale=sk, key_antiquant_offset=ok, key_antiquant_mode=mode,
                     value_antiquant_scale=sv, value_antiquant_offset=ok,
                     value_antiquant_mode=mode, **kw)


@pytest.mark.parametrize("per_token", [False, True])
def test_prefill_separate_bf16(per_token: bool) -> None:
    s1, s2 = 4, 40
    q, k, v = _q(s1, BF16), _kv_int(s2), _kv_int(s2)
    if per_token:
        sk, sv = _dyadic((B, s2), F32), _dyadic((B, s2), F32)
        kf = (k * sk[:, None, :, None].astype(np.float64)).astype(BF16)
        vf = (v * sv[:, None, :, None].astype(np.float64)).astype(BF16)
        mode = 1
    else:
        sk, sv = _dyadic((KVN, D), BF16), _dyadic((KVN, D), BF16)
        kf = (k * sk[None, :, None].astype(np.float64)).astype(BF16)
        vf = (v * sv[None, :, None].astype(np.float64)).astype(BF16)
        mode = 0
    _both_precisions(q, k, v, kf, vf, key_antiquant_scale=sk, value_antiquant_scale=sv,
                     key_antiquant_mode=mode, value_antiquant_mode=mode, **BASE)


def test_prefill_combined_fp16() -> None:
    q, k, v = _q(5), _kv_int(36), _kv_int(36)
    sc = _dyadic((2, KVN, D), F16)
    kf = (k * sc[0][None, :, None].astype(np.float64)).astype(F16)
    vf = (v * sc[1][None, :, None].astype(np.float64)).astype(F16)
    _both_precisions(q, k, v, kf, vf, antiquant_scale=sc, **BASE)


@pytest.mark.parametrize("form", ["int4", "int32"])
def test_int4_kv_decode(form: str) -> None:
    d = 64
    q = _q(d=d)
    kv = [RNG.integers(-8, 8, (B, KVN, 24, d)).astype(np.int8) for _ in range(2)]
    sk, sv = _dyadic((1, KVN, 1, d), F16), _dyadic((1, KVN, 1, d), F16)
    pack = to_int4 if form == "int4" else pack_int32_words
    kf = (kv[0] * sk[0].astype(np.float64)).astype(F16)
    vf = (kv[1] * sv[0].astype(np.float64)).astype(F16)
    _both_precisions(q, pack(kv[0]), pack(kv[1]), kf, vf, key_antiquant_scale=sk,
                     value_antiquant_scale=sv, **BASE)


@pytest.mark.parametrize("inner_precise", [0, 1])
def test_fp16_precision_modes_match_hand_dequantised_kv(inner_precise: int) -> None:
    """Non-dyadic params: the device result equals float attention on the KV as
    dequantised in fp32 (inner_precise 0) or step by step in fp16 (1)."""
    q, k, v = _q(), _kv_int(40), _kv_int(40)
    sc = (RNG.uniform(0.001, 0.02, (2, KVN, 1, D))).astype(F16)
    of = RNG.uniform(-2, 2, (2, KVN, 1, D)).astype(F16)
    hp = inner_precise == 0
    kf = dequantize(k, sc[0][None], of[0][None], query_dtype=F16, high_precision=hp)
    vf = dequantize(v, sc[1][None], of[1][None], query_dtype=F16, high_precision=hp)
    kw = dict(BASE, inner_precise=inner_precise)
    _same(fia(q, k, v, antiquant_scale=sc, antiquant_offset=of, **kw), fia(q, kf, vf, **kw))
    if hp:
        return
    other = dequantize(k, sc[0][None], of[0][None], query_dtype=F16, high_precision=True)
    assert not np.array_equal(kf, other)  # the two modes really differ on these params


# ---- post-quant -------------------------------------------------------------------------
@pytest.mark.parametrize(("layout", "qs_shape"), [
    ("BNSD", (1,)), ("BNSD", (1, N, 1, D)), ("BSH", (1, 1, N * D)), ("BSND", (1, 1, N, D)),
    ("BNSD_BSND", (N, D)), ("BSH", (N * D,)),
])
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_post_quant_equals_quantised_float_output(layout, qs_shape, dtype) -> None:
    s1, s2 = 3, 20
    shapes = {"BNSD": (B, N, s1, D), "BSH": (B, s1, N * D), "BSND": (B, s1, N, D)}
    qshape = shapes[layout.split("_")[0]]
    q = RNG.standard_normal(qshape).astype(dtype)
    kshape = list(qshape)
    kshape[{"BNSD": 2, "BSH": 1, "BSND": 1}[layout.split("_")[0]]] = s2
    k = RNG.standard_normal(kshape).astype(dtype)
    v = (RNG.standard_normal(kshape) * 4).astype(dtype)
    qs = RNG.uniform(20, 60, qs_shape).astype(F32)
    qo = RNG.uniform(-3, 3, qs_shape).astype(F32)
    kw = dict(num_heads=N, input_layout=layout, scale=0.2)
    out_f, _ = fia(q, k, v, **kw)
    out_i8, _ = fia(q, k, v, quant_scale2=qs, quant_offset2=qo, **kw)
    out_layout = layout.split("_")[-1]
    want = post_quantize_output(out_f, qs, qo, out_layout=out_layout, num_heads=N)
    assert out_i8.dtype == np.int8 and out_i8.tobytes() == want.tobytes()
    ideal, _ = fia(q, k, v, quant_scale2=qs, quant_offset2=qo, precision="fp64", **kw)
    f64, _ = fia(q, k, v, precision="fp64", **kw)
    np.testing.assert_array_equal(
        ideal, post_quantize_output(f64, qs, qo, out_layout=out_layout, num_heads=N,
                                    precision="fp64"))
    assert np.abs(ideal - out_i8).max() <= 2  # a gross-error guard; rounding gives <= ~1


# ---- full int8 quant ----------------------------------------------------------------------
FQ = dict(dequant_scale1=np.float32([1 / 1024]), quant_scale1=np.float32([127]),
          dequant_scale2=np.float32([1 / 127 / 32]))


@pytest.mark.parametrize("s1", [2, 6])
@pytest.mark.parametrize("uint64", [False, True])
def test_full_quant_matches_one_pass_reference(s1: int, uint64: bool) -> None:
    q = RNG.integers(-128, 128, (B, N, s1, D), dtype=np.int8)
    k, v = _kv_int(50), _kv_int(50)
    scales = {n: (encode_uint64_scale(x) if uint64 and n != "quant_scale1" else x)
              for n, x in FQ.items()}
    for precision in ("device", "fp64"):
        out, lse = fia(q, k, v, precision=precision, **scales, **BASE)
        ref_out, ref_lse = int8_attention(q, k, v, scale=0.3, precision=precision, **scales)
        if precision == "fp64":
            # float64 BLAS may sum P·V in another order, and the golden's exp is not
            # NumPy's (golden/kernels.py): ~1 ulp of each term, so bounded against the
            # output's scale (an element that cancels to near 0 has no relative bound)
            np.testing.assert_allclose(out, ref_out, rtol=1e-13,
                                       atol=1e-13 * float(np.abs(ref_out).max()))
            np.testing.assert_allclose(lse[..., 0], ref_lse, rtol=1e-13)
            continue
        want = ref_out.astype(F16)  # device: integer matmuls are exact, so bit for bit
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes()
        # the golden's exp and row sum (golden/kernels.py) are not NumPy's: an ulp apart
        np.testing.assert_allclose(lse[..., 0], ref_lse, rtol=2e-7, atol=0)


def test_full_quant_int8_output_is_post_quant_of_fp16_output() -> None:
    q = RNG.integers(-128, 128, (B, N, 4, D), dtype=np.int8)
    k, v = _kv_int(30), _kv_int(30)
    qs2, qo2 = np.float32([37.5]), np.float32([1.5])
    out16, _ = fia(q, k, v, **FQ, **BASE)
    out8, _ = fia(q, k, v, quant_scale2=qs2, quant_offset2=qo2, **FQ, **BASE)
    assert out16.dtype == F16 and out8.dtype == np.int8
    want = post_quantize_output(out16, qs2, qo2, out_layout="BNSD", num_heads=N)
    assert out8.tobytes() == want.tobytes()


def test_full_quant_with_causal_mask_matches_reference() -> None:
    s = 6
    q = RNG.integers(-128, 128, (B, N, s, D), dtype=np.int8)
    k, v = _kv_int(s), _kv_int(s)
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    out, _ = fia(q, k, v, atten_mask=mask, sparse_mode=2, **FQ, **BASE)
    ref, _ = int8_attention(q, k, v, scale=0.3, precision="device", **FQ,
                            masked=np.triu(np.ones((s, s), bool), 1))
    assert out.tobytes() == ref.astype(F16).tobytes()


def test_full_quant_blocked_keys_stay_close_to_one_pass() -> None:
    """Past 512 keys the golden quantises P against the running max, as a
    flash-style kernel does; the one-pass reference uses the global max."""
    q = RNG.integers(-128, 128, (1, 2, 2, D), dtype=np.int8)
    k = RNG.integers(-128, 128, (1, 2, 700, D), dtype=np.int8)
    v = RNG.integers(-128, 128, (1, 2, 700, D), dtype=np.int8)
    kw = dict(num_heads=2, input_layout="BNSD", scale=0.3)
    out, _ = fia(q, k, v, **FQ, **kw)
    ref, _ = int8_attention(q, k, v, scale=0.3, precision="device", **FQ)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=0.02, atol=0.02)
    ideal, _ = fia(q, k, v, precision="fp64", **FQ, **kw)
    ref64, _ = int8_attention(q, k, v, scale=0.3, precision="fp64", **FQ)
    np.testing.assert_allclose(ideal, ref64, rtol=1e-12, atol=1e-12)


def test_int8_output_rows_not_computed_stay_zero() -> None:
    s1 = 5
    q = RNG.standard_normal((B, N, s1, D)).astype(F16)
    k = RNG.standard_normal((B, N, 9, D)).astype(F16)
    kw = dict(num_heads=N, input_layout="BNSD", actual_seq_lengths=[3, 5])
    qs2, qo2 = np.float32([30.0]), np.float32([5.0])
    out_f, _ = fia(q, k, k, **kw)
    out8, _ = fia(q, k, k, quant_scale2=qs2, quant_offset2=qo2, **kw)
    want = post_quantize_output(out_f, qs2, qo2, out_layout="BNSD", num_heads=N)
    assert np.all(out8[0, :, 3:] == 0) and np.all(want[0, :, 3:] == 5)
    assert out8[0, :, :3].tobytes() == want[0, :, :3].tobytes()
    assert out8[1].tobytes() == want[1].tobytes()


def test_post_quant_order_option() -> None:
    q = RNG.standard_normal((B, N, 2, D)).astype(F16)
    k = RNG.standard_normal((B, N, 7, D)).astype(F16)
    kw = dict(num_heads=N, input_layout="BNSD", quant_scale2=np.float32([41.0]),
              quant_offset2=np.float32([0.5]))
    out_f, _ = fia(q, k, k, num_heads=N, input_layout="BNSD")
    a, _ = fia(q, k, k, **kw)
    b, _ = fia(q, k, k, post_quant_order="offset_then_round", **kw)
    for got, order in ((a, "round_then_offset"), (b, "offset_then_round")):
        want = post_quantize_output(out_f, kw["quant_scale2"], kw["quant_offset2"],
                                    out_layout="BNSD", num_heads=N, order=order)
        assert got.tobytes() == want.tobytes()
    diff = np.abs(a.astype(int) - b.astype(int))
    assert diff.max() == 1  # offset 0.5 makes the orders differ, by one LSB at most
    with pytest.raises(ValueError, match="post_quant_order"):
        fia(q, k, k, post_quant_order="truncate", **kw)


def test_per_token_antiquant_under_kv_left_padding() -> None:
    s2 = 40
    q, k, v = _q(), _kv_int(s2), _kv_int(s2)
    sk, ok = _dyadic((1, B, s2), F32), _ints((1, B, s2), F32)
    kf = ((k + ok[0][:, None, :, None]) * sk[0][:, None, :, None]).astype(F16)
    vf = ((v + ok[0][:, None, :, None]) * sk[0][:, None, :, None]).astype(F16)
    kw = dict(BASE, actual_seq_lengths_kv=[20, 33], kv_padding_size=np.array([5], np.int64))
    _both_precisions(q, k, v, kf, vf, key_antiquant_scale=sk, value_antiquant_scale=sk,
                     key_antiquant_offset=ok, value_antiquant_offset=ok,
                     key_antiquant_mode=1, value_antiquant_mode=1, **kw)


def test_antiquant_with_tensor_list_and_with_prefix() -> None:
    q = _q()
    lens = [17, 29]
    ks = [RNG.integers(-128, 128, (1, KVN, s, D), dtype=np.int8) for s in lens]
    vs = [RNG.integers(-128, 128, (1, KVN, s, D), dtype=np.int8) for s in lens]
    sc = _dyadic((2, KVN, 1, D), F16)

    def deq(x, i):
        return (x * sc[i].astype(np.float64)).astype(F16)

    _both_precisions(q, ks, vs, [deq(x, 0) for x in ks], [deq(x, 1) for x in vs],
                     antiquant_scale=sc, **BASE)
    k, v = _kv_int(24), _kv_int(24)
    pk = RNG.integers(-128, 128, (1, KVN, 8, D), dtype=np.int8)
    pv = RNG.integers(-128, 128, (1, KVN, 8, D), dtype=np.int8)
    for precision in ("device", "fp64"):
        _same(fia(q, k, v, key_shared_prefix=pk, value_shared_prefix=pv, antiquant_scale=sc,
                  precision=precision, **BASE),
              fia(q, deq(k, 0), deq(v, 1), key_shared_prefix=deq(pk, 0),
                  value_shared_prefix=deq(pv, 1), precision=precision, **BASE))


def test_v2_names_reach_the_antiquant_path() -> None:
    q, k, v = _q(), _kv_int(16), _kv_int(16)
    sk, sv = _dyadic((1, KVN, 1, D), F16), _dyadic((1, KVN, 1, D), F16)
    a = fia(q, k, v, key_antiquant_scale=sk, value_antiquant_scale=sv, **BASE)
    b = fia_v2(q, k, v, dequant_scale_key=sk, dequant_scale_value=sv, num_query_heads=N,
               num_key_value_heads=KVN, input_layout="BNSD", softmax_scale=0.3,
               return_softmax_lse=True)
    _same(a, b)


@pytest.mark.parametrize("mode", [0, 1])
def test_nz_int8_cache_antiquant(mode: int) -> None:
    """5-D NZ int8 caches (block_num, KV_N, D/32, block_size, 32) [V4 GQA 伪量化 五维]."""
    n, kvn, d, bs, nblk, lens = 10, 1, 128, 128, 3, [150, 90]
    logical = RNG.integers(-128, 128, (2, nblk, bs, kvn, d), dtype=np.int8)  # k, v

    def nz(x):
        return np.ascontiguousarray(
            x.reshape(nblk, bs, kvn, d // 32, 32).transpose(0, 2, 3, 1, 4))

    table = np.array([[2, 0], [1, -1]], np.int32)
    if mode == 0:
        sk, sv = _dyadic((kvn * d,), BF16), _dyadic((kvn * d,), BF16)
        fk, fv = sk.reshape(1, 1, kvn, d), sv.reshape(1, 1, kvn, d)
    else:
        sk, sv = _dyadic((B, 2 * bs), F32), _dyadic((B, 2 * bs), F32)
    q = RNG.standard_normal((B, 1, n * d)).astype(BF16)
    kw = dict(num_heads=n, num_key_value_heads=kvn, input_layout="BSH", scale=0.1,
              block_table=table, block_size=bs, actual_seq_lengths_kv=lens,
              softmax_lse_flag=True)
    quant = dict(key_antiquant_scale=sk, value_antiquant_scale=sv, key_antiquant_mode=mode,
                 value_antiquant_mode=mode)
    if mode == 0:
        kf = (logical[0] * fk.astype(np.float64)).astype(BF16).reshape(nblk, bs, kvn * d)
        vf = (logical[1] * fv.astype(np.float64)).astype(BF16).reshape(nblk, bs, kvn * d)
        for precision in ("device", "fp64"):
            _same(fia(q, nz(logical[0]), nz(logical[1]), precision=precision, **quant, **kw),
                  fia(q, kf, vf, precision=precision, **kw))
        return
    # per-token scales follow the logical position: build the float cache block by block
    kf = np.zeros((nblk, bs, kvn * d), np.float64)
    vf = np.zeros((nblk, bs, kvn * d), np.float64)
    for b in range(B):
        for j, blk in enumerate(table[b]):
            if blk < 0:
                continue
            pos = slice(j * bs, (j + 1) * bs)
            kf[blk] = (logical[0, blk] * sk[b, pos, None, None]).reshape(bs, -1)
            vf[blk] = (logical[1, blk] * sv[b, pos, None, None]).reshape(bs, -1)
    for precision in ("device", "fp64"):
        _same(fia(q, nz(logical[0]), nz(logical[1]), precision=precision, **quant, **kw),
              fia(q, kf.astype(BF16), vf.astype(BF16), precision=precision, **kw))


def test_full_quant_with_pse_matches_reference() -> None:
    s1, s2 = 3, 10
    q = RNG.integers(-128, 128, (B, N, s1, D), dtype=np.int8)
    k, v = _kv_int(s2), _kv_int(s2)
    pse = RNG.standard_normal((B, N, s1, s2)).astype(F16)   # int8 query takes fp16 pse
    for precision in ("device", "fp64"):
        out, _ = fia(q, k, v, pse_shift=pse, precision=precision, **FQ, **BASE)
        ref, _ = int8_attention(q, k, v, scale=0.3, precision=precision, pse=pse, **FQ)
        if precision == "fp64":
            np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-300)
        else:
            assert out.tobytes() == ref.astype(F16).tobytes()


def test_post_quant_bf16_scale_with_bf16_query() -> None:
    q = RNG.standard_normal((B, 2, N * D)).astype(BF16)
    k = RNG.standard_normal((B, 11, N * D)).astype(BF16)
    qs = RNG.uniform(20, 60, (N * D,)).astype(BF16)
    qo = RNG.uniform(-3, 3, (N * D,)).astype(BF16)
    kw = dict(num_heads=N, input_layout="BSH")
    out_f, _ = fia(q, k, k, **kw)
    out8, _ = fia(q, k, k, quant_scale2=qs, quant_offset2=qo, **kw)
    want = post_quantize_output(out_f, qs, qo, out_layout="BSH", num_heads=N)
    assert out8.dtype == np.int8 and out8.tobytes() == want.tobytes()


def test_pse_forces_high_precision_antiquant() -> None:
    """fp16 with pse_shift runs high precision (SEM §5), whatever inner_precise says."""
    q, k, v = _q(), _kv_int(40), _kv_int(40)
    sc = (RNG.uniform(0.001, 0.02, (2, KVN, 1, D))).astype(F16)
    of = RNG.uniform(-2, 2, (2, KVN, 1, D)).astype(F16)
    pse = RNG.standard_normal((B, N, 1, 40)).astype(F16)
    kf = dequantize(k, sc[0][None], of[0][None], query_dtype=F16, high_precision=True)
    vf = dequantize(v, sc[1][None], of[1][None], query_dtype=F16, high_precision=True)
    kw = dict(BASE, inner_precise=1, pse_shift=pse)
    _same(fia(q, k, v, antiquant_scale=sc, antiquant_offset=of, **kw), fia(q, kf, vf, **kw))

