"""The `large` value fill stays near the dtype limit without making the exact result
ill-conditioned (strategies/fills.py `_large`), deterministically."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.values import materialise
from fia_fuzz.strategies import cases

VALUE_SOURCES = ("value", "value_shared_prefix")


def _values(call: dict) -> list[np.ndarray]:
    out = []
    for name in VALUE_SOURCES:
        v = call.get(name)
        if v is not None:
            out += [np.asarray(x, np.float64) for x in (v if isinstance(v, list) else [v])]
    return out


@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(cases(v_dist="large", empty="none"))  # an empty KV has no values to sign
def test_large_values_are_one_sign_and_the_output_does_not_cancel(case: Case) -> None:
    """Mixed signs near 1e36 cancel to near 0 (the exact result's conditioning is lost);
    one sign keeps every output element a convex combination at >= half the bound."""
    call = case.call()
    values = _values(call)
    signs = {float(np.sign(x)) for v in values for x in np.unique(np.sign(v))}
    assert len(signs) == 1 and 0.0 not in signs, case.to_json()
    smallest = min(float(np.abs(v).min()) for v in values)
    assert smallest >= 0.5 * max(float(np.abs(v).max()) for v in values) * (1 - 2.0 ** -7)
    out, _ = npu_fused_infer_attention_score(**call, precision="fp64")
    live = out[out != 0]
    if case.params.get("quant_scale2") is None and live.size:
        assert set(np.unique(np.sign(live))) == signs, case.to_json()
        if case.params.get("learnable_sink") is None:  # a sink is a key of value 0
            assert np.abs(live).min() >= smallest * (1 - 2.0 ** -20), case.to_json()
    again = Case.from_json(case.to_json()).call()
    for a, b in zip(values, _values(again), strict=True):
        assert a.tobytes() == b.tobytes()


def test_signed_large_recipe_is_exact_and_unsigned_recipes_are_unchanged() -> None:
    spec = TensorSpec((2, 3, 8, 16), "bfloat16")
    fill = {"dist": "large", "scale": 3.3895313892515355e38, "fraction": 0.01, "sign": -1}
    v = materialise(spec, fill, 7, "value").astype(np.float64)
    bound = 3.3895313892515355e38 * 0.01
    assert (v < 0).all() and (np.abs(v) <= bound * (1 + 2.0 ** -8)).all()
    assert (np.abs(v) >= 0.5 * bound * (1 - 2.0 ** -8)).all()
    assert materialise(spec, fill, 7, "value").tobytes() == \
        materialise(spec, dict(fill), 7, "value").tobytes()
    legacy = {"dist": "large", "scale": 65504.0, "fraction": 0.25}  # stored q/k recipes
    k = materialise(TensorSpec((4, 64), "float16"), legacy, 3, "key").astype(np.float64)
    assert (k < 0).any() and (k > 0).any() and np.abs(k).max() <= 16376.0


def _first(x: object) -> np.ndarray:
    return np.asarray(x[0] if isinstance(x, list) else x, np.float64)


@settings(max_examples=6, suppress_health_check=[HealthCheck.too_slow])
@given(cases(q_dist="large", rope=False) | cases(k_dist="large", rope=False))
def test_large_query_or_key_keep_their_magnitude_but_bound_the_logits(case: Case) -> None:
    """|scale x q.k| <= 2^10 (fills.bound_logits): huge logits make near-tied rows'
    weights a matter of rounding; q/k themselves stay near the dtype limit."""
    call = case.call()
    q, f = _first(call["query"]), case.features()
    scale = float(case.params["scale"])
    big = [name for name in ("query", "key") if case.fill(name).get("dist") == "large"]
    k = _first(call["key"])
    if q.size == 0 or k.size == 0:  # an empty query or KV: nothing to bound
        return
    for name in big:
        x, fill = _first(call[name]), case.fill(name)
        if x.size >= 64:  # uniform in +-bound: all 64 below half of it has odds 2^-64
            assert np.abs(x).max() >= 0.5 * fill["scale"] * fill["fraction"], name
    if f["kv_dtype"] in ("float16", "bfloat16"):
        assert scale * f["D"] * np.abs(q).max() * np.abs(k).max() <= 2.0 ** 10
    assert np.frexp(scale)[0] == 0.5 or scale in (1.0, 0.0625) or \
        scale == 1.0 / np.sqrt(f["D"])
