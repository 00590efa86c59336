"""NaN in an antiquant scale or offset (docs/values.md, rule 6): the dequantised key or
value, (k + offset) * scale, is NaN at every position that element scales, and from
there the rules for NaN in K/V hold: attended positions propagate (IEEE), masked and
padded keys never reach the output."""

from __future__ import annotations

import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score as golden
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate

B, N, KV_N, S1, S2, D = 2, 4, 2, 6, 8, 64
G = N // KV_N
#: Valid query rows and keys per batch: batch 0 has a padding query row and padding keys.
ACT_Q, ACT_KV = [5, 6], [6, 8]


def _call(per_token: bool) -> dict:
    """BNSD bf16 prefill over int8 KV with a causal band (mode 2: row i attends keys <= i),
    key/value antiquant scales and offsets per channel (N, D) or per token (B, S2)."""
    shape, dtype = ((B, S2), "float32") if per_token else ((KV_N, D), "bfloat16")
    params = {"query": TensorSpec((B, N, S1, D), "bfloat16"),
              "key": TensorSpec((B, KV_N, S2, D), "int8"),
              "value": TensorSpec((B, KV_N, S2, D), "int8"),
              "atten_mask": TensorSpec((2048, 2048), "bool"), "sparse_mode": 2,
              "actual_seq_lengths": ACT_Q, "actual_seq_lengths_kv": ACT_KV,
              "num_heads": N, "num_key_value_heads": KV_N, "input_layout": "BNSD",
              "softmax_lse_flag": True,
              **{f"{kv}_antiquant_{p}": TensorSpec(shape, dtype)
                 for kv in ("key", "value") for p in ("scale", "offset")},
              **({"key_antiquant_mode": 1, "value_antiquant_mode": 1} if per_token else {})}
    fills = {"query": {"dist": "normal", "scale": 1.0}, "atten_mask": {"dist": "triu"},
             **{f"{kv}_antiquant_scale": {"dist": "uniform", "scale": 0.05}
                for kv in ("key", "value")},
             **{f"{kv}_antiquant_offset": {"dist": "normal", "scale": 1.0}
                for kv in ("key", "value")}}
    case = Case(params=params, fills=fills, seed=11)
    assert validate(**case.specs()) == [], validate(**case.specs())
    return case.call()


def _attends(b: int, row: int, key: int) -> bool:
    return row < ACT_Q[b] and key < ACT_KV[b] and key <= row


def _nan_rows(out: np.ndarray) -> np.ndarray:
    return np.isnan(out.astype(np.float32))


@pytest.mark.parametrize("precision", ["fp64", "device"])
@pytest.mark.parametrize("param", ["scale", "offset"])
def test_a_nan_key_channel_turns_every_attending_row_of_its_heads_nan(precision: str,
                                                                     param: str) -> None:
    call = _call(per_token=False)
    h, d = 1, 7
    call[f"key_antiquant_{param}"][h, d] = np.nan  # every key of KV head 1, channel 7
    out, lse = golden(**call, precision=precision)
    want = np.zeros((B, N, S1), bool)
    for b in range(B):
        want[b, h * G:(h + 1) * G, :ACT_Q[b]] = True  # every valid row attends key 0
    nan = _nan_rows(out)
    assert (nan.all(axis=-1) == want).all() and (nan.any(axis=-1) == want).all()
    assert (np.isnan(lse[..., 0]) == want).all()
    assert not out[0, :, ACT_Q[0]:].any()  # a padding row stays 0


@pytest.mark.parametrize("precision", ["fp64", "device"])
def test_a_nan_value_channel_reaches_that_output_column_only(precision: str) -> None:
    call = _call(per_token=False)
    h, d = 0, 3
    call["value_antiquant_scale"][h, d] = np.nan
    out, lse = golden(**call, precision=precision)
    nan = _nan_rows(out)
    want = np.zeros(nan.shape, bool)
    for b in range(B):
        want[b, h * G:(h + 1) * G, :ACT_Q[b], d] = True
    assert (nan == want).all() and np.isfinite(lse[..., 0][:, :, :5]).all()


@pytest.mark.parametrize("precision", ["fp64", "device"])
@pytest.mark.parametrize(("kv", "b", "j"), [("key", 0, 3), ("value", 1, 5), ("key", 0, 7),
                                            ("value", 0, 6)])
def test_a_nan_token_scale_reaches_the_rows_that_attend_that_key(precision: str, kv: str,
                                                                 b: int, j: int) -> None:
    """Key 3 of batch 0 is attended by rows 3-4 (rows 0-2 mask it: causal); key 5 of batch 1
    by rows 5; keys 6 and 7 of batch 0 are padding, attended by no row: nothing is NaN."""
    call = _call(per_token=True)
    call[f"{kv}_antiquant_scale"][b, j] = np.nan
    out, lse = golden(**call, precision=precision)
    rows = np.zeros((B, N, S1), bool)
    for r in range(S1):
        rows[b, :, r] = _attends(b, r, j)
    nan = _nan_rows(out)
    assert (nan.all(axis=-1) == rows).all() and (nan.any(axis=-1) == rows).all()
    assert (np.isnan(lse[..., 0]) == (rows if kv == "key" else False)).all()
