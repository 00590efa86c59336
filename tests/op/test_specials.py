"""Special values by region (op/specials.py) and what the golden makes of them
(docs/values.md): placement is deterministic and lands in the region named, a masked or
padded key's NaN/Inf never reaches the output, an attended one does (IEEE)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fia_fuzz.golden import npu_fused_infer_attention_score as golden
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.choices import RandomChooser
from fia_fuzz.strategies.draft import PROFILES, Draft
from fia_fuzz.strategies.sample import draw_cases
from fia_fuzz.strategies.values import draw, settle

B, N, S1, S2, D = 2, 2, 8, 12, 16
ACT_Q, ACT_KV = [6, 8], [9, 12]


def _case(**fills: dict) -> Case:
    """BNSD fp16 prefill, per-batch lengths (padding in both), a causal band (mode 2)."""
    params = {"query": TensorSpec((B, N, S1, D), "float16"),
              "key": TensorSpec((B, N, S2, D), "float16"),
              "value": TensorSpec((B, N, S2, D), "float16"),
              "atten_mask": TensorSpec((2048, 2048), "bool"), "sparse_mode": 2,
              "actual_seq_lengths": ACT_Q, "actual_seq_lengths_kv": ACT_KV,
              "num_heads": N, "input_layout": "BNSD", "softmax_lse_flag": True}
    base = {"query": {"dist": "normal", "scale": 1.0}, "key": {"dist": "normal", "scale": 1.0},
            "value": {"dist": "normal", "scale": 1.0}, "atten_mask": {"dist": "triu"}}
    return Case(params=params, fills={**base, **fills}, seed=77)


def _where(name: str, where: str, special: str = "nan", count: int = 3) -> dict:
    return {name: {"dist": "normal", "scale": 1.0, "special": special, "where": where,
                   "count": count}}


def _nonfinite(x: np.ndarray) -> np.ndarray:
    return np.argwhere(~np.isfinite(np.asarray(x, np.float32)))


def test_placement_is_deterministic_and_leaves_the_rest_as_it_was() -> None:
    case = _case(**_where("key", "attended"))
    a, b = case.call(), case.call()
    assert hashlib.sha256(a["key"].tobytes()).digest() == \
        hashlib.sha256(b["key"].tobytes()).digest()
    plain = _case().call()["key"]
    bad = ~np.isfinite(a["key"].astype(np.float32))
    assert 1 <= bad.sum() <= 3
    assert np.array_equal(a["key"][~bad], plain[~bad])
    assert case.features()["values"] == "nan_attended"


def test_positions_land_in_the_region_named() -> None:
    for b, s in _nonfinite(_case(**_where("key", "padding", count=5)).call()["key"])[:, [0, 2]]:
        assert s >= ACT_KV[b]  # past the batch's KV length
    for b, s in _nonfinite(_case(**_where("query", "padding")).call()["query"])[:, [0, 2]]:
        assert s >= ACT_Q[b]
    for b, s in _nonfinite(_case(**_where("value", "masked", count=5)).call()["value"])[:, [0, 2]]:
        assert s < ACT_KV[b] and s > 0  # mode 2 masks column j for rows i < j
    attended = _case(**_where("value", "attended", count=5)).call()["value"]
    for b, s in _nonfinite(attended)[:, [0, 2]]:
        assert s < min(ACT_Q[b], ACT_KV[b])
    pse = {"pse_shift": {"dist": "normal", "scale": 1.0, "special": "-inf", "count": 4}}
    case = _case(**pse)
    case = Case(params={**case.params, "pse_shift": TensorSpec((B, N, S1, S2), "float16")},
                fills=case.fills, seed=case.seed)
    for b, _, r, c in _nonfinite(case.call()["pse_shift"]):
        assert c <= r < ACT_Q[b] and c < ACT_KV[b]
    assert case.features()["values"] == "pse_neg_inf"


@pytest.mark.parametrize("precision", ["fp64", "device"])
def test_masked_and_padded_specials_never_reach_the_output(precision: str) -> None:
    clean = golden(**_case().call(), precision=precision)
    for name, where in [("key", "padding"), ("value", "padding"), ("query", "padding")]:
        for special in ("nan", "inf", "-inf"):
            out, lse = golden(**_case(**_where(name, where, special, 4)).call(),
                              precision=precision)
            assert np.array_equal(out, clean[0]) and np.array_equal(lse, clean[1]), \
                (name, where, special)
    for name in ("key", "value"):
        for special in ("nan", "inf", "-inf"):
            call = _case(**_where(name, "masked", special, 4)).call()
            out, lse = golden(**call, precision=precision)
            placed = _nonfinite(call[name])
            for b, h, s, _ in placed:
                # rows i < s mask key s (mode 2): theirs are the clean outputs; rows >= s
                # attend it and may not be
                s = placed[(placed[:, 0] == b) & (placed[:, 1] == h), 2].min()
                assert np.array_equal(out[b, h, :s], clean[0][b, h, :s])
                assert np.array_equal(lse[b, h, :s], clean[1][b, h, :s])


@pytest.mark.parametrize("precision", ["fp64", "device"])
def test_an_attended_nan_reaches_the_rows_that_attend_it(precision: str) -> None:
    call = _case().call()
    call["value"][0, 1, 2, 5] = np.nan  # batch 0, head 1, key 2: rows 2.. attend it (mode 2)
    out, lse = golden(**call, precision=precision)
    nan_rows = np.flatnonzero(np.isnan(out[0, 1, :, 5].astype(np.float32)))
    assert list(nan_rows) == list(range(2, ACT_Q[0]))
    assert np.isfinite(np.delete(out[0, 1].astype(np.float32), 5, axis=-1)).all()
    assert np.isfinite(lse).all() or np.isinf(lse[~np.isfinite(lse)]).all()
    call = _case().call()
    call["query"][1, 0, 3, 0] = np.nan  # a NaN score row: its output and lse are NaN
    out, lse = golden(**call, precision=precision)
    assert np.isnan(out[1, 0, 3].astype(np.float32)).all() and np.isnan(lse[1, 0, 3, 0])
    assert np.isfinite(out[1, 0, :3].astype(np.float32)).all()


def test_a_row_of_minus_inf_pse_is_a_fully_masked_row() -> None:
    call = _case().call()
    pse = np.zeros((B, N, S1, S2), np.float16)
    pse[0, 0, 4, :] = -np.inf
    pse[0, 1, 4, 5] = np.nan  # masked (5 > 4): replaced by the mask like any masked score
    out, lse = golden(**call, pse_shift=pse, precision="fp64")
    assert not out[0, 0, 4].any() and lse[0, 0, 4, 0] == np.inf
    assert np.isfinite(out[0, 1, 4]).all() and np.isfinite(lse[0, 1, 4, 0])


def test_a_fully_masked_row_is_placed_in_a_used_mask() -> None:
    params = {**_case().params, "sparse_mode": 0,
              "atten_mask": TensorSpec((S1, S2), "bool")}
    case = Case(params=params, fills={**_case().fills, "atten_mask": {
        "dist": "zeros", "special": "full_row", "count": 1}}, seed=5)
    mask = case.call()["atten_mask"]
    rows = np.flatnonzero(mask.all(axis=1))
    assert len(rows) == 1 and not np.delete(mask, rows, axis=0).any()
    out, lse = golden(**case.call(), precision="fp64")
    assert not out[:, :, rows[0]].any() and (lse[:, :, rows[0]] == np.inf).all()
    assert case.features()["values"] == "masked_row"


class _Counting(RandomChooser):
    calls = 0

    def one(self, options):  # type: ignore[no-untyped-def]
        _Counting.calls += 1
        return super().one(options)

    def int(self, lo: int, hi: int) -> int:
        _Counting.calls += 1
        return super().int(lo, hi)


def test_smoke_draws_no_values_decision_unless_filtered() -> None:
    """Smoke's choice sequences stay those of before the axis existed."""
    import random

    dr = Draft(prof=PROFILES["smoke"], ch=_Counting(random.Random(0), {}))
    dr.params = dict(_case().params)
    dr.fills = dict(_case().fills)
    dr.q_dtype = dr.kv_dtype = "float16"
    draw(dr)
    assert _Counting.calls == 0 and dr.fills == _case().fills
    dr.ch = _Counting(random.Random(0), {"values": "nan_masked"})
    draw(dr)
    assert Case(params=dr.params, fills=dr.fills).features()["values"] == "nan_masked"


def test_a_masked_special_whose_mask_masks_nothing_is_dropped_not_labelled() -> None:
    """A mask that masks no key of the valid window leaves the masked region empty: the draw
    drops the special, so the case is labelled by what it holds (finite), not nan_masked."""
    params = {**_case().params, "sparse_mode": 0, "atten_mask": TensorSpec((S1, S2), "bool")}
    empty = Case(params=params, fills={**_case().fills, "atten_mask": {"dist": "zeros"},
                                       **_where("key", "masked")}, seed=5)
    assert empty.features()["values"] == "nan_masked"  # the recipe alone would say so
    assert np.isfinite(empty.call()["key"].astype(np.float32)).all()  # yet places nothing
    settled = settle(empty)
    assert settled.features()["values"] == "finite" and "special" not in settled.fills["key"]
    held = _case(**_where("key", "masked"))  # the causal band masks keys: kept as it is
    assert settle(held) == held and not np.isfinite(held.call()["key"].astype(np.float32)).all()


@pytest.mark.parametrize("value", ["nan_masked", "inf_masked", "nan_padding", "inf_padding",
                                   "nan_attended", "pse_nan", "masked_row", "antiquant_nan",
                                   "antiquant_inf"])
def test_a_drawn_special_value_is_in_the_call_it_labels(value: str) -> None:
    """Every filtered draw labelled with a placed value holds it (a bernoulli mask or a
    sliding band may mask nothing once the seed fixes it: such a draw is not labelled so)."""
    for case in draw_cases(40, 1, "smoke", values=value):
        assert case.features()["values"] == value
        call = case.call()
        if value == "masked_row":
            mask = np.asarray(call["atten_mask"]).astype(bool)
            assert mask.all(axis=-1).any(), case.to_json()
            continue
        held = [n for n, f in case.fills.items() if "special" in f]
        assert held and all(_holds_nonfinite(call[n]) for n in held), case.to_json()


def test_the_emptiness_check_agrees_with_the_positions_placement_draws_from() -> None:
    """`unplaced` asks each region whether it holds a position without listing them: the
    answer is the listing's, for every region of a banded, padded call and of a call whose
    mask masks nothing, a position bias included."""
    from fia_fuzz.op.call import CallView
    from fia_fuzz.op.specials import _Regions

    quiet = {**_case().params, "sparse_mode": 0, "atten_mask": TensorSpec((S1, S2), "bool"),
             "pse_shift": TensorSpec((B, N, S1, S2), "float16")}
    calls = [_case().call(data=False), Case(params=quiet, fills={"atten_mask": {
        "dist": "zeros"}}, seed=5).call()]
    answers = set()
    for call in calls:
        regions = _Regions(CallView(call), call)
        for name in ("query", "key", "value"):
            for where in ("attended", "masked", "padding"):
                listed = bool(regions._candidates(name, where))
                assert regions.placeable(name, where) == listed, (name, where)
                answers.add(listed)
        if call.get("pse_shift") is not None:
            assert regions.placeable("pse_shift", "attended") == bool(regions._pse_pairs())
        assert regions.placeable("atten_mask", "attended") == bool(regions._mask_rows())
    assert answers == {False, True}  # both answers are checked


def _holds_nonfinite(x: np.ndarray | list[np.ndarray]) -> bool:
    return any(not np.isfinite(np.asarray(a, np.float32)).all()
               for a in (x if isinstance(x, list) else [x]))
