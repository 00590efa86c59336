"""torch-sdpa and torch-math against the golden, one legal call per claimed feature.

Every call here passes `validate` (so a refusal or a mismatch is never about
illegal input). A feature the golden does not compute yet is skipped with the
golden's own reason; the comparison switches on by itself when it lands.
The bound: within twice the same-dtype golden's error, plus one output ULP.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from torch_devices import DEVICES, torch_runner

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.rules.validate import validate

pytest.importorskip("torch")

M2048 = np.triu(np.ones((2048, 2048), bool), 1)


def _catalogue() -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(0)

    def r(*shape: int, dt: Any = np.float16) -> np.ndarray:
        return rng.standard_normal(shape).astype(dt)

    def i8(*shape: int) -> np.ndarray:
        return rng.integers(-128, 128, shape).astype(np.int8)

    b, n, kvn, s1, s2, d, bs = 2, 4, 2, 5, 40, 64, 16
    base = {"query": r(b, n, s1, d), "key": r(b, kvn, s2, d), "value": r(b, kvn, s2, d),
            "num_heads": n, "num_key_value_heads": kvn, "input_layout": "BNSD",
            "scale": 0.125, "softmax_lse_flag": True}
    lens = {"actual_seq_lengths": [5, 3], "actual_seq_lengths_kv": [40, 17]}
    dec = {**base, "query": r(b, n, 1, d)}
    table = np.array([[3, 0, 5], [1, 2, -1]], np.int32)
    paged = {"block_table": table, "block_size": bs, "actual_seq_lengths_kv": [40, 20]}
    rope_table = np.array([[0, 2, 1]], np.int32)
    rope = {"num_heads": 8, "num_key_value_heads": 1, "block_table": rope_table,
            "block_size": 128, "actual_seq_lengths_kv": [300], "scale": 0.05}
    return {
        "bsh_gqa": {**base, "query": r(b, s1, n * d), "key": r(b, s2, kvn * d),
                    "value": r(b, s2, kvn * d), "input_layout": "BSH"},
        "bnsd_bsnd_bf16": {**base, "query": r(b, n, s1, d, dt=ml_dtypes.bfloat16),
                           "key": r(b, kvn, s2, d, dt=ml_dtypes.bfloat16),
                           "value": r(b, kvn, s2, d, dt=ml_dtypes.bfloat16),
                           "input_layout": "BNSD_BSND"},
        "actual_lengths": {**base, **lens},
        "mode0_mask_band": {**base, "atten_mask": rng.random((b, 1, s1, s2)) < 0.3,
                            "pre_tokens": 3, "next_tokens": 10},
        "mode1_mask": {**base, "sparse_mode": 1,
                       "atten_mask": (rng.random((s1, s2)) < 0.3).astype(np.int8)},
        "mode2": {**base, **lens, "sparse_mode": 2, "atten_mask": M2048},
        "mode3": {**base, **lens, "sparse_mode": 3, "atten_mask": M2048},
        "mode4": {**base, **lens, "sparse_mode": 4, "atten_mask": M2048, "pre_tokens": 4,
                  "next_tokens": 2},
        "pse": {**base, "pse_shift": r(1, n, s1, s2)},
        "left_padding": {**base, "actual_seq_lengths": [3, 4], "actual_seq_lengths_kv": [30, 17],
                         "query_padding_size": np.array([1], np.int64),
                         "kv_padding_size": np.array([2], np.int64)},
        "prefix": {**base, "key_shared_prefix": r(1, kvn, 8, d),
                   "value_shared_prefix": r(1, kvn, 8, d), "actual_shared_prefix_len": [6]},
        "sink": {**base, "learnable_sink": r(n, dt=np.float32)},
        "decode_mask": {**dec, "atten_mask": rng.random((b, 1, 1, s2)) < 0.3},
        "paged_bnbsh": {**dec, **paged, "key": r(6, bs, kvn * d), "value": r(6, bs, kvn * d)},
        "paged_bnnbsd": {**dec, **paged, "key": r(6, kvn, bs, d), "value": r(6, kvn, bs, d)},
        "tensor_list": {**base, "query": r(b, 1, n * d), "input_layout": "BSH",
                        "key": [r(1, 30, kvn * d), r(1, 12, kvn * d)],
                        "value": [r(1, 30, kvn * d), r(1, 12, kvn * d)],
                        "actual_seq_lengths_kv": [25, 12]},
        "tnd_mode3": {"query": r(8, n, 128, dt=ml_dtypes.bfloat16),
                      "key": r(35, kvn, 128, dt=ml_dtypes.bfloat16),
                      "value": r(35, kvn, 128, dt=ml_dtypes.bfloat16), "num_heads": n,
                      "num_key_value_heads": kvn, "input_layout": "TND", "scale": 0.1,
                      "actual_seq_lengths": [3, 8], "actual_seq_lengths_kv": [10, 35],
                      "softmax_lse_flag": True, "sparse_mode": 3, "atten_mask": M2048},
        "tnd_paged_mode3": {"query": r(6, n, 128, dt=ml_dtypes.bfloat16),
                            "key": r(4, 128, kvn * 128, dt=ml_dtypes.bfloat16),
                            "value": r(4, 128, kvn * 128, dt=ml_dtypes.bfloat16),
                            "num_heads": n, "num_key_value_heads": kvn, "input_layout": "TND",
                            "actual_seq_lengths": [2, 6], "actual_seq_lengths_kv": [200, 130],
                            "block_table": np.array([[0, 2], [1, 3]], np.int32),
                            "block_size": 128, "scale": 0.1, "softmax_lse_flag": True,
                            "sparse_mode": 3, "atten_mask": M2048},
        "rope_paged": {**rope, "query": r(1, 8, 1, 512), "key": r(4, 1, 128, 512),
                       "value": r(4, 1, 128, 512), "query_rope": r(1, 8, 1, 64),
                       "key_rope": r(4, 1, 128, 64), "input_layout": "BNSD"},
        "rope_nbsd_mode3": {**rope, "query": r(1, 8, 3, 512), "key": r(4, 1, 128, 512),
                            "value": r(4, 1, 128, 512), "query_rope": r(1, 8, 3, 64),
                            "key_rope": r(4, 1, 128, 64), "input_layout": "BNSD_NBSD",
                            "sparse_mode": 3, "atten_mask": M2048},
        "antiquant_combined": {**dec, "key": i8(b, kvn, s2, d), "value": i8(b, kvn, s2, d),
                               "antiquant_scale": (rng.random((2, kvn, 1, d)) * 0.02
                                                   ).astype(np.float16),
                               "antiquant_offset": rng.integers(-3, 3, (2, kvn, 1, d)
                                                                ).astype(np.float16)},
        "antiquant_per_token_head": {**dec, "key": i8(b, kvn, s2, d), "value": i8(b, kvn, s2, d),
                                     "key_antiquant_scale": (rng.random((b, kvn, s2)) * 0.02
                                                             ).astype(np.float32),
                                     "value_antiquant_scale": (rng.random((b, kvn, s2)) * 0.02
                                                               ).astype(np.float32),
                                     "key_antiquant_mode": 3, "value_antiquant_mode": 3},
        "post_quant": {**base, "quant_scale2": np.array([100.0], np.float32)},
    }


CATALOGUE = _catalogue()


@pytest.mark.parametrize("feature", sorted(CATALOGUE))
def test_catalogue_calls_are_legal(feature: str) -> None:
    assert validate(**CATALOGUE[feature]) == []


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["torch-sdpa", "torch-math"])
@pytest.mark.parametrize("feature", sorted(CATALOGUE))
def test_runner_agrees_with_golden(name: str, feature: str, device: str) -> None:
    call = CATALOGUE[feature]
    try:
        truth = npu_fused_infer_attention_score(**call, precision="fp64")
        base = npu_fused_infer_attention_score(**call)
    except NotImplementedError as exc:
        pytest.skip(str(exc))
    out, lse = torch_runner(name, device).run(call)
    assert out.shape == base[0].shape and out.dtype == base[0].dtype
    assert lse.shape == base[1].shape and lse.dtype == np.float32
    if out.dtype == np.int8:   # post-quant: the two documented orders differ by 1 LSB
        assert np.abs(out.astype(np.int64) - base[0].astype(np.int64)).max() <= 1
        return
    ulp = 2.0 ** -10 if out.dtype == np.float16 else 2.0 ** -7
    scale = max(1.0, float(np.abs(truth[0]).max()))
    base_err = float(np.abs(base[0].astype(np.float64) - truth[0]).max())
    err = float(np.abs(out.astype(np.float64) - truth[0]).max())
    assert err <= 2 * base_err + ulp * scale, (err, base_err)
    if call.get("softmax_lse_flag"):
        inf = np.isinf(truth[1])
        assert np.array_equal(np.isinf(lse), inf)
        np.testing.assert_allclose(lse[~inf], truth[1][~inf], atol=1e-3, rtol=1e-4)
