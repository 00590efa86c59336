import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2
from fia_fuzz.rules.rule import IllegalCall


def _ref(q, k, v, scale):
    """Plain float64 softmax attention on BNSD with GQA, written independently."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k = np.repeat(k, g, axis=1)
    v = np.repeat(v, g, axis=1)
    s = np.einsum("bnqd,bnkd->bnqk", q, k) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bnqk,bnkd->bnqd", p, v)


@pytest.mark.parametrize("s1", [1, 7])
def test_bnsd_fp16_gqa_matches_float64_reference(s1: int) -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 8, s1, 64)).astype(np.float16)
    k = rng.standard_normal((2, 2, 33, 64)).astype(np.float16)
    v = rng.standard_normal((2, 2, 33, 64)).astype(np.float16)
    out, _ = npu_fused_infer_attention_score(q, k, v, num_heads=8, num_key_value_heads=2,
                                             input_layout="BNSD", scale=0.125)
    ref = _ref(q, k, v, 0.125)
    assert out.dtype == np.float16 and out.shape == ref.shape
    # within fp16 rounding of the output plus the fp16 cast of P (relative 2^-10 each)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2e-3, atol=2e-3)
    exact, _ = npu_fused_infer_attention_score(q, k, v, num_heads=8, num_key_value_heads=2,
                                               input_layout="BNSD", scale=0.125,
                                               precision="fp64")
    np.testing.assert_allclose(exact, ref, rtol=1e-12, atol=1e-12)


def test_lse_is_log_sum_exp_of_scores() -> None:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 2, 4, 16)).astype(np.float16)
    k = rng.standard_normal((1, 2, 9, 16)).astype(np.float16)
    _, lse = npu_fused_infer_attention_score(q, k, k, num_heads=2, input_layout="BNSD",
                                             softmax_lse_flag=True, precision="fp64")
    s = np.einsum("bnqd,bnkd->bnqk", q.astype(np.float64), k.astype(np.float64))
    m = s.max(-1, keepdims=True)
    np.testing.assert_allclose(lse, np.log(np.exp(s - m).sum(-1, keepdims=True)) + m, rtol=1e-12)


def test_illegal_call_raises_named_rule() -> None:
    q = np.zeros((1, 3, 1, 16), np.float16)
    k = np.zeros((1, 2, 4, 16), np.float16)
    with pytest.raises(IllegalCall) as err:
        npu_fused_infer_attention_score(q, k, k, num_heads=3, num_key_value_heads=2,
                                        input_layout="BNSD")
    assert "gqa.divisible" in {v.rule for v in err.value.violations}


def test_v2_names_map_to_v1() -> None:
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 4, 2, 32)).astype(np.float16)
    k = rng.standard_normal((1, 4, 6, 32)).astype(np.float16)
    a = npu_fused_infer_attention_score(q, k, k, num_heads=4, input_layout="BNSD", scale=0.5)
    b = npu_fused_infer_attention_score_v2(q, k, k, num_query_heads=4, input_layout="BNSD",
                                           softmax_scale=0.5, num_key_value_heads=4)
    assert a[0].tobytes() == b[0].tobytes()
