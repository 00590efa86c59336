"""Masks and sparse modes [V4 §Mask, SEM §4], left padding [SEM §3], fully masked rows."""

import numpy as np
import pytest
from golden_refs import close, dense_ref, golden, rand
from hypothesis import given
from hypothesis import strategies as st

from fia_fuzz.golden import npu_fused_infer_attention_score

CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)

# Hand-written attend patterns (1 = attend) for S1=3, S2=5, from the mode
# definitions in [V4 §Mask]: 2 left-up causal, 3 right-down causal, 4 band
# anchored bottom-right, 0 band of (pre, next) over an all-zero user mask.
HAND = {
    ("mode2", 2, 0, 0): ["10000", "11000", "11100"],
    ("mode3", 3, 0, 0): ["11100", "11110", "11111"],
    ("mode4 pre=1 next=0", 4, 1, 0): ["01100", "00110", "00011"],
    ("mode4 pre=0 next=-1", 4, 0, -1): ["00000", "00000", "00000"],
    ("mode4 pre=3 next=1", 4, 3, 1): ["11110", "11111", "01111"],
    ("mode0 pre=0 next=1", 0, 0, 1): ["11000", "01100", "00110"],
    ("mode0 pre=1 next=0", 0, 1, 0): ["10000", "11000", "01100"],
    ("mode0 pre=-1 next=2", 0, -1, 2): ["01100", "00110", "00011"],
}


def _pattern(rows):
    return ~np.array([[c == "1" for c in r] for r in rows])


@pytest.mark.parametrize("name", list(HAND))
def test_hand_computed_band_edges(name):
    mode, pre, nxt = name[1:]
    rows = HAND[name]
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, (1, 1, 3, 16)), rand(rng, (1, 1, 5, 16)), rand(rng, (1, 1, 5, 16))
    mask = CAUSAL_2048 if mode in (2, 3, 4) else np.zeros((3, 5), bool)
    out, lse = golden(q, k, v, input_layout="BNSD", sparse_mode=mode, pre_tokens=pre,
                      next_tokens=nxt, atten_mask=mask, scale=0.5)
    ref, ref_lse = dense_ref(q, k, v, 0.5, excluded=_pattern(rows))
    close(out, ref)
    close(lse, ref_lse[..., None])


def test_mode3_query_longer_than_kv_has_dead_rows():
    """S1 > S2 under mode 3: the first S1-S2 rows attend nothing -> 0 and +inf [SEM §4]."""
    rng = np.random.default_rng(4)
    q, k, v = rand(rng, (1, 1, 5, 16)), rand(rng, (1, 1, 3, 16)), rand(rng, (1, 1, 3, 16))
    out, lse = golden(q, k, v, input_layout="BNSD", sparse_mode=3, atten_mask=CAUSAL_2048)
    ex = _pattern(["000", "000", "100", "110", "111"])
    ref, ref_lse = dense_ref(q, k, v, 1.0, excluded=ex)
    assert (out[0, 0, :2] == 0).all() and np.isinf(lse[0, 0, :2]).all()
    close(out, ref)
    close(lse, ref_lse[..., None])


@st.composite
def sparse_case(draw):
    b = draw(st.integers(1, 3))
    s1, s2 = draw(st.integers(1, 12)), draw(st.integers(1, 24))
    act_q = draw(st.lists(st.integers(0, s1), min_size=b, max_size=b))
    act_kv = draw(st.lists(st.integers(0, s2), min_size=b, max_size=b))
    pre, nxt = draw(st.integers(-3, 30)), draw(st.integers(-3, 30))
    return b, s1, s2, act_q, act_kv, pre, nxt, draw(st.integers(0, 2**32 - 1))


@given(sparse_case(), st.sampled_from([2, 3, 4]))
def test_sparse_modes_equal_mode0_with_explicit_mask(case, mode):
    """Modes 2/3/4 == mode 1 with the per-batch mask they describe, anchored per batch."""
    b, s1, s2, act_q, act_kv, pre, nxt, seed = case
    if s1 == 1:
        s1 = 2  # decode ignores sparse modes; this test is about the prefill branch
        act_q = [min(a, 2) for a in act_q]
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, (b, 2, s1, 16)), rand(rng, (b, 2, s2, 16)), rand(rng, (b, 2, s2, 16))
    mask = np.zeros((b, 1, s1, s2), bool)
    i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
    for x in range(b):
        sq, sk = act_q[x], act_kv[x]
        if mode == 2:
            mask[x, 0] = j > i
        elif mode == 3:
            mask[x, 0] = j > i + sk - sq
        else:
            mask[x, 0] = (j > i + sk - sq + nxt) | (j < i - (sq - sk + pre))
    kw = {"num_heads": 2, "input_layout": "BNSD", "actual_seq_lengths": act_q,
          "actual_seq_lengths_kv": act_kv, "scale": 0.25}
    got = golden(q, k, v, sparse_mode=mode, atten_mask=CAUSAL_2048, pre_tokens=pre,
                 next_tokens=nxt, **kw)
    want = golden(q, k, v, sparse_mode=1, atten_mask=mask, **kw)
    close(got[0], want[0])
    close(got[1], want[1])


MASK_SHAPES = ["S1S2", "1S1S2", "BS1S2", "11S1S2", "B1S1S2", "oversized"]


@pytest.mark.parametrize("shape", MASK_SHAPES)
def test_every_mask_shape_reads_the_same_mask(shape):
    rng = np.random.default_rng(5)
    b, s1, s2 = 2, 5, 7
    q, k, v = rand(rng, (b, 1, s1, 16)), rand(rng, (b, 1, s2, 16)), rand(rng, (b, 1, s2, 16))
    base = rng.random((s1, s2)) < 0.4
    if shape == "S1S2":
        mask = base
    elif shape == "1S1S2":
        mask = base[None]
    elif shape == "BS1S2":
        mask = np.stack([base, base])
    elif shape == "11S1S2":
        mask = base[None, None]
    elif shape == "B1S1S2":
        mask = np.stack([base, base])[:, None]
    else:  # padded up to alignment; the extra rows/columns are ignored [SEM §4]
        mask = rng.random((b, 1, 16, 32)) < 0.5
        mask[:, 0, :s1, :s2] = base
    out, lse = golden(q, k, v, input_layout="BNSD", atten_mask=mask, scale=0.5)
    ref, ref_lse = dense_ref(q, k, v, 0.5, excluded=base)
    close(out, ref)
    close(lse, ref_lse[..., None])


def test_per_batch_mask_and_uint8_mask():
    rng = np.random.default_rng(6)
    q, k, v = rand(rng, (2, 1, 4, 16)), rand(rng, (2, 1, 6, 16)), rand(rng, (2, 1, 6, 16))
    mask = rng.random((2, 4, 6)) < 0.5
    out, _ = golden(q, k, v, input_layout="BNSD", atten_mask=mask.astype(np.uint8))
    ref, _ = dense_ref(q, k, v, 1.0, excluded=mask[:, None])
    close(out, ref)


@pytest.mark.parametrize("shape", ["B,S2", "B,1,S2", "B,1,1,S2"])
def test_decode_mask_shapes_and_ignored_sparse_mode(shape):
    """Decode masks are (B,S2)/(B,1,S2)/(B,1,1,S2); Q_S == 1 ignores sparse/pre/next [SEM §4]."""
    rng = np.random.default_rng(7)
    b, s2 = 3, 9
    q, k, v = rand(rng, (b, 2, 1, 16)), rand(rng, (b, 2, s2, 16)), rand(rng, (b, 2, s2, 16))
    base = rng.random((b, s2)) < 0.3
    mask = {"B,S2": base, "B,1,S2": base[:, None], "B,1,1,S2": base[:, None, None]}[shape]
    out, _ = golden(q, k, v, num_heads=2, input_layout="BNSD", atten_mask=mask,
                    pre_tokens=0, next_tokens=0)
    ref, _ = dense_ref(q, k, v, 1.0, excluded=base[:, None, None])
    close(out, ref)


def test_mode0_without_mask_ignores_band():
    rng = np.random.default_rng(8)
    q, k = rand(rng, (1, 1, 4, 16)), rand(rng, (1, 1, 4, 16))
    a = golden(q, k, k, input_layout="BNSD", pre_tokens=0, next_tokens=0)
    b = golden(q, k, k, input_layout="BNSD")
    close(a[0], b[0])


@st.composite
def padded_case(draw):
    b = draw(st.integers(1, 3))
    s1, s2 = draw(st.integers(2, 10)), draw(st.integers(1, 20))
    act_q = draw(st.lists(st.integers(1, s1), min_size=b, max_size=b))
    act_kv = draw(st.lists(st.integers(1, s2), min_size=b, max_size=b))
    pad_q = [draw(st.integers(-2, s1 - a)) for a in act_q]
    pad_kv = [draw(st.integers(-2, s2 - a)) for a in act_kv]
    mode = draw(st.sampled_from([0, 3]))
    return b, s1, s2, act_q, act_kv, pad_q, pad_kv, mode, draw(st.integers(0, 2**32 - 1))


@given(padded_case())
def test_left_padding_equals_right_padding_of_shifted_data(case):
    """Left padding puts the window at S - pad - act [SEM §3]; negative pads count as 0.

    The user mask is read at absolute positions, so it shifts with the data;
    mode 3 anchors to the window.
    """
    b, s1, s2, act_q, act_kv, pad_q, pad_kv, mode, seed = case
    rng = np.random.default_rng(seed)
    n = 2
    q, k, v = rand(rng, (b, n, s1, 16)), rand(rng, (b, n, s2, 16)), rand(rng, (b, n, s2, 16))
    mask = rng.random((b, 1, s1, s2)) < 0.3 if mode == 0 else CAUSAL_2048
    kw = {"num_heads": n, "input_layout": "BNSD", "sparse_mode": mode,
          "actual_seq_lengths": act_q, "actual_seq_lengths_kv": act_kv}
    out, lse = golden(q, k, v, atten_mask=mask, query_padding_size=pad_q,
                      kv_padding_size=pad_kv, **kw)
    for x in range(b):
        q0 = s1 - max(pad_q[x], 0) - act_q[x]
        k0 = s2 - max(pad_kv[x], 0) - act_kv[x]
        rq = np.roll(q[x:x + 1], -q0, axis=2)
        rk, rv = np.roll(k[x:x + 1], -k0, axis=2), np.roll(v[x:x + 1], -k0, axis=2)
        rmask = mask
        if mode == 0:
            rmask = np.roll(np.roll(mask[x:x + 1], -q0, axis=2), -k0, axis=3)
        kwx = dict(kw, actual_seq_lengths=[act_q[x]], actual_seq_lengths_kv=[act_kv[x]])
        ref, ref_lse = golden(rq, rk, rv, atten_mask=rmask, **kwx)
        rows = slice(q0, q0 + act_q[x])
        close(out[x, :, rows], ref[0, :, :act_q[x]])
        close(lse[x, :, rows], ref_lse[0, :, :act_q[x]])
        outside = np.ones(s1, bool)
        outside[rows] = False
        assert (out[x, :, outside] == 0).all() and np.isinf(lse[x, :, outside]).all()


def test_fully_masked_row_is_zero_with_inf_lse():
    rng = np.random.default_rng(9)
    q, k, v = rand(rng, (1, 2, 3, 16)), rand(rng, (1, 2, 4, 16)), rand(rng, (1, 2, 4, 16))
    mask = np.zeros((3, 4), bool)
    mask[1] = True
    for precision in ("fp64", "device"):
        out, lse = npu_fused_infer_attention_score(
            q, k, v, num_heads=2, input_layout="BNSD", atten_mask=mask, softmax_lse_flag=True,
            precision=precision)
        assert (out[0, :, 1] == 0).all() and np.isinf(lse[0, :, 1]).all()
        assert np.isfinite(lse[0, :, [0, 2]]).all()


@pytest.mark.parametrize("inner_precise,corrected", [(0, False), (1, False), (2, True),
                                                     (3, True)])
def test_row_invalid_docs_model(inner_precise, corrected):
    """row_invalid="docs": only inner_precise 2/3 zero a fully masked row [V4 innerPrecise]."""
    rng = np.random.default_rng(10)
    q, k, v = rand(rng, (1, 1, 3, 16)), rand(rng, (1, 1, 4, 16)), rand(rng, (1, 1, 4, 16))
    mask = np.zeros((3, 4), bool)
    mask[2] = True
    kw = {"input_layout": "BNSD", "atten_mask": mask, "inner_precise": inner_precise}
    ref = golden(q, k, v, **kw)
    docs = golden(q, k, v, row_invalid="docs", **kw)
    close(docs[0][0, 0, :2], ref[0][0, 0, :2])
    if corrected:
        close(docs[0], ref[0])
    else:
        close(docs[0][0, 0, 2], v[0, 0].astype(np.float64).mean(axis=0))
        assert docs[1][0, 0, 2, 0] < -1e37


def test_row_invalid_docs_autodetects_mode3_s1_gt_s2():
    rng = np.random.default_rng(11)
    q, k = rand(rng, (1, 1, 5, 16)), rand(rng, (1, 1, 3, 16))
    kw = {"input_layout": "BNSD", "sparse_mode": 3, "atten_mask": CAUSAL_2048,
          "inner_precise": 0}
    close(golden(q, k, k, row_invalid="docs", **kw)[0], golden(q, k, k, **kw)[0])
