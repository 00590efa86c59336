"""Layouts and lengths: the same data in every layout gives the same attention [SEM §2-3]."""

import numpy as np
import pytest
from golden_refs import close, dense_ref, golden, rand
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.geometry import to_bnsd
from fia_fuzz.strategies import cases

CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)


@st.composite
def batched(draw):
    """Small BNSD fp16 problems with optional per-batch actual lengths."""
    b = draw(st.integers(1, 3))
    kvn = draw(st.sampled_from([1, 2]))
    g = draw(st.sampled_from([1, 2, 4]))
    s1 = draw(st.integers(2, 12))
    s2 = draw(st.integers(1, 40))
    d = draw(st.sampled_from([16, 32]))
    seed = draw(st.integers(0, 2**32 - 1))
    act_q = draw(st.none() | st.lists(st.integers(0, s1), min_size=b, max_size=b))
    act_kv = draw(st.none() | st.lists(st.integers(0, s2), min_size=b, max_size=b))
    return b, kvn * g, kvn, s1, s2, d, seed, act_q, act_kv


def _to(x, layout):
    """BNSD test data in another layout."""
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3).copy()
    if layout == "BSH":
        b, n, s, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d).copy()
    return x


def _valid(act_q, act_kv, b, s1, s2):
    """Exclusion (B,1,S1,S2) of right-padded windows, written from the docs (SEM §3)."""
    aq = np.full(b, s1) if act_q is None else np.asarray(act_q)
    ak = np.full(b, s2) if act_kv is None else np.asarray(act_kv)
    rows = np.arange(s1)[None, :, None] >= aq[:, None, None]
    cols = np.arange(s2)[None, None, :] >= ak[:, None, None]
    return (rows | cols)[:, None]


@given(batched(), st.sampled_from(["BSH", "BSND", "BNSD", "BNSD_BSND"]))
def test_layouts_agree_with_dense_reference(problem, layout):
    b, n, kvn, s1, s2, d, seed, act_q, act_kv = problem
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, (b, n, s1, d)), rand(rng, (b, kvn, s2, d)), rand(rng, (b, kvn, s2, d))
    in_layout = layout.split("_")[0]
    kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": layout, "scale": 0.3}
    if act_q is not None:
        kw["actual_seq_lengths"] = act_q
    if act_kv is not None:
        kw["actual_seq_lengths_kv"] = act_kv
    out, lse = golden(_to(q, in_layout), _to(k, in_layout), _to(v, in_layout), **kw)
    ex = _valid(None if s1 == 1 else act_q, act_kv, b, s1, s2)
    ref, ref_lse = dense_ref(q, k, v, 0.3, excluded=ex)
    out_layout = layout.split("_")[-1]
    close(out, _to(ref, out_layout))
    close(lse, ref_lse[..., None])


@pytest.mark.parametrize("layout", ["TND", "NTD_TND"])
@pytest.mark.parametrize("lens_q,lens_kv,mode", [
    ([3, 1, 4], [5, 2, 7], 0), ([3, 1, 4], [5, 2, 7], 3), ([2], [9], 3), ([0, 3], [4, 0], 0)])
def test_packed_equals_padded_bnsd(layout, lens_q, lens_kv, mode):
    """TND/NTD hold the batches back to back; actual lengths are cumulative [V4 §TND].

    Mode 3 anchors each batch's causal mask at its own bottom-right corner.
    """
    rng = np.random.default_rng(len(lens_q))
    n, d = 2, 128
    b, s1, s2 = len(lens_q), max(lens_q), max(lens_kv)
    q = rand(rng, (b, n, s1, d), np.float32)
    k, v = rand(rng, (b, 1, s2, d), np.float32), rand(rng, (b, 1, s2, d), np.float32)
    import ml_dtypes

    q, k, v = (x.astype(ml_dtypes.bfloat16) for x in (q, k, v))

    def packed(x, lens):
        rows = np.concatenate([x[i, :, :lens[i]].transpose(1, 0, 2) for i in range(b)])
        return rows

    pq, pk, pv = packed(q, lens_q), packed(k, lens_kv), packed(v, lens_kv)
    in_layout, out_layout = (layout.split("_") + [layout])[:2]
    if in_layout == "NTD":
        pq, pk, pv = (x.transpose(1, 0, 2).copy() for x in (pq, pk, pv))
    masking = {"sparse_mode": 3, "atten_mask": CAUSAL_2048} if mode == 3 else {}
    out, lse = golden(pq, pk, pv, num_heads=n, num_key_value_heads=1, input_layout=layout,
                      scale=0.1, actual_seq_lengths=np.cumsum(lens_q).tolist(),
                      actual_seq_lengths_kv=np.cumsum(lens_kv).tolist(), **masking)
    ref, ref_lse = golden(q, k, v, num_heads=n, num_key_value_heads=1, input_layout="BNSD",
                          scale=0.1, actual_seq_lengths=lens_q, actual_seq_lengths_kv=lens_kv,
                          **masking)
    want = packed(ref, lens_q)
    close(out, want if out_layout == "TND" else want.transpose(1, 0, 2))
    assert lse.shape == (sum(lens_q), n, 1)
    close(lse, packed(ref_lse, lens_q))


@pytest.mark.parametrize("form", [[3], [3, 3], [3, 3, 1, 9], np.array([3, 3], np.int64)])
def test_actual_lengths_forms(form):
    """Length 1 broadcasts, length > B uses the first B, arrays equal lists [SEM §3]."""
    rng = np.random.default_rng(0)
    q, k = rand(rng, (2, 1, 5, 16)), rand(rng, (2, 1, 6, 16))
    base = golden(q, k, k, input_layout="BNSD", actual_seq_lengths=[3, 3],
                  actual_seq_lengths_kv=[3, 3])
    got = golden(q, k, k, input_layout="BNSD", actual_seq_lengths=form,
                 actual_seq_lengths_kv=form)
    close(got[0], base[0])
    close(got[1], base[1])


def test_padding_rows_are_zero_and_lse_inf():
    rng = np.random.default_rng(1)
    q, k = rand(rng, (2, 2, 4, 16)), rand(rng, (2, 2, 6, 16))
    out, lse = golden(q, k, k, num_heads=2, input_layout="BNSD", actual_seq_lengths=[2, 4],
                      actual_seq_lengths_kv=[6, 0])
    assert (out[0, :, 2:] == 0).all() and np.isinf(lse[0, :, 2:]).all()
    assert (out[1] == 0).all() and np.isinf(lse[1]).all()  # act_kv == 0: whole batch 0
    assert np.isfinite(lse[0, :, :2]).all()


def test_decode_ignores_actual_seq_lengths():
    """Q_S == 1 (non-TND) ignores actual_seq_lengths [SEM §3]."""
    rng = np.random.default_rng(2)
    q, k = rand(rng, (2, 2, 1, 16)), rand(rng, (2, 2, 6, 16))
    a = golden(q, k, k, num_heads=2, input_layout="BNSD")
    b = golden(q, k, k, num_heads=2, input_layout="BNSD", actual_seq_lengths=[0, 0])
    close(a[0], b[0])


@given(cases(plain=True))  # the BNSD relation holds for the plain float layouts
def test_strategy_cases_bnsd_relation_and_precisions(case):
    """On strategy-drawn cases: the call equals its BNSD form, and device tracks fp64."""
    call = case.call()
    view = case.view()
    layout = view.in_layout
    out, lse = golden(**dict(call, softmax_lse_flag=True))
    bnsd = {name: to_bnsd(np.asarray(call[name]), layout, view.N if name == "query"
                          else view.KV_N).copy() for name in ("query", "key", "value")}
    ref, ref_lse = golden(**dict(call, **bnsd, input_layout="BNSD", softmax_lse_flag=True))
    close(to_bnsd(out, view.out_layout, view.N), ref)
    close(lse, ref_lse)
    dev, _ = npu_fused_infer_attention_score(**call)
    assert dev.dtype == np.asarray(call["query"]).dtype
    # P cast and output rounding: each within one rounding of the dtype, scaled by max |v|;
    # plus the fp32 rounding of the logits, which outlier fills make large (|q|.|k| ~ 1e4)
    tol = 2.0 ** -7 if dev.dtype != np.float16 else 2.0 ** -10
    vmax = float(np.abs(np.asarray(call["value"]).astype(np.float64)).max())
    qa = np.abs(bnsd["query"].astype(np.float64))
    ka = np.repeat(np.abs(bnsd["key"].astype(np.float64)), view.G, axis=1)
    dots = np.matmul(qa, ka.swapaxes(-1, -2))
    logit_err = 2.0 ** -22 * abs(float(view.attrs["scale"])) * float(dots.max(initial=0.0))
    atol = 2 * tol * vmax + 4 * logit_err * vmax
    np.testing.assert_allclose(dev.astype(np.float64), out, rtol=2 * tol, atol=atol)
