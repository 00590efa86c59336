"""Argument forms (op/forms.py): each documented form is named, an undocumented one is
"other", the docs table lists exactly the axis values, and filters imply what forms need."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fia_fuzz.op.case import Case
from fia_fuzz.op.forms import FORM_AXES, implied_pins
from fia_fuzz.rules.rulebook.bases import B, T, call, f32, i8
from fia_fuzz.rules.validate import case_violations

DOC = Path(__file__).resolve().parents[2] / "docs" / "forms.md"


def _forms(base: str, **over) -> dict:
    case = Case(params=call(base, **over))
    assert case_violations(case) == [], [str(v) for v in case_violations(case)]
    return case.features()


@pytest.mark.parametrize(("base", "over", "want"), [
    ("decode", {"pse_shift": T(1, 8, 1, 16)},
     {"pse_shift_form": "decode:1,N,1,S2", "pse_shift_size": "decode:exact"}),
    ("decode", {"pse_shift": T(2, 8, 1, 48)},
     {"pse_shift_form": "decode:B,N,1,S2", "pse_shift_size": "decode:cols"}),
    ("masked", {"pse_shift": T(2, 8, 6, 16)},
     {"pse_shift_form": "prefill:B,N,S1,S2", "pse_shift_size": "prefill:rows"}),
    ("masked", {"atten_mask": B(2, 1, 4, 32)}, {"atten_mask_size": "prefill:cols",
                                                "mask_oversized": True}),
    ("masked", {}, {"atten_mask_size": "prefill:exact", "mask_oversized": False}),
    ("decode", {"atten_mask": B(2, 1, 1, 32)}, {"atten_mask_size": "decode:cols"}),
    ("causal", {}, {"atten_mask_size": "prefill:2048"}),
    ("paged_decode", {}, {"block_table_size": "decode:exact"}),
    ("paged_decode", {"actual_seq_lengths_kv": [40, 40]}, {"block_table_size": "decode:wider"}),
    ("paged_prefill", {}, {"block_table_size": "prefill:exact"}),
    ("decode", {"quant_scale2": f32(1, 1, 512)}, {"quant_scale2_form": "decode:1,1,H"}),
    ("prefill", {"quant_scale2": f32(1, 8, 1, 64)}, {"quant_scale2_form": "prefill:1,N,1,D"}),
    ("prefill", {"quant_scale2": f32(1), "key": T(2, 2, 0, 64), "value": T(2, 2, 0, 64)},
     {"quant_scale2_form": "empty_kv", "empty": "kv"}),
    ("aq_combined", {}, {"antiquant_scale_form": "decode:m0:2,N,1,D"}),
    ("aq_combined", {"antiquant_scale": f32(2, 2, 16), "antiquant_offset": f32(2, 2, 16),
                     "antiquant_mode": 1}, {"antiquant_scale_form": "decode:m1:2,B,S2"}),
    ("aq_separate", {}, {"key_antiquant_scale_form": "decode:m0:1,N,1,D",
                         "value_antiquant_scale_form": "decode:m0:1,N,1,D"}),
    ("aq_separate", {"value_antiquant_scale": f32(1, 2, 16), "value_antiquant_offset":
                     f32(1, 2, 16), "value_antiquant_mode": 1},
     {"key_antiquant_scale_form": "decode:m0:1,N,1,D",
      "value_antiquant_scale_form": "decode:m1:1,B,S2"}),
    ("padded", {}, {"query_padding_size_form": "prefill:1", "kv_padding_size_form": "prefill:1"}),
    ("padded", {"kv_padding_size": [2, 0]}, {"kv_padding_size_form": "prefill:B"}),
    ("prefix", {}, {"key_shared_prefix_form": "prefill",
                    "actual_shared_prefix_len_form": "partial"}),
    ("prefix", {"actual_shared_prefix_len": [0]}, {"actual_shared_prefix_len_form": "0"}),
    ("prefix", {"actual_shared_prefix_len": [8]}, {"actual_shared_prefix_len_form": "full"}),
    ("prefix", {"actual_shared_prefix_len": None}, {"actual_shared_prefix_len_form": "none"}),
    ("prefill", {"learnable_sink": f32(8)}, {"learnable_sink_form": "prefill"}),
    ("causal", {"num_key_value_heads": 0}, {"num_key_value_heads_form": "0"}),
    ("causal", {"num_key_value_heads": 4}, {"num_key_value_heads_form": "N"}),
    ("causal", {}, {"num_key_value_heads_form": "absent"}),
    ("prefill", {}, {"num_key_value_heads_form": "KV_N"}),
])
def test_documented_forms_are_named(base: str, over: dict, want: dict) -> None:
    feats = _forms(base, **over)
    assert {k: feats[k] for k in want} == want


@pytest.mark.parametrize(("base", "over", "axis"), [
    ("prefill", {"quant_scale2": f32(2, 8, 64)}, "quant_scale2_form"),
    ("aq_separate", {"key_antiquant_scale": T(2, 1, 64), "value_antiquant_scale": T(2, 1, 64),
                     "key_antiquant_offset": None, "value_antiquant_offset": None},
     "key_antiquant_scale_form"),
    ("decode", {"pse_shift": T(1, 8, 2, 16)}, "pse_shift_form"),
])
def test_undocumented_shapes_are_other_and_illegal(base: str, over: dict, axis: str) -> None:
    """A shape no documented form has is "other" (never an axis value) and breaks a rule."""
    case = Case(params=call(base, **over))
    assert case.features()[axis] == "other" and case_violations(case)


def test_int8_kv_decode_pattern_with_dims_equal() -> None:
    """Patterns compare dims by symbol, so KV_N == B does not confuse (1,N,D) and (1,B,S)."""
    feats = _forms("aq_separate", key=i8(2, 16, 2 * 64), value=i8(2, 16, 2 * 64),
                   key_antiquant_scale=T(1, 2, 64), value_antiquant_scale=T(1, 2, 64),
                   key_antiquant_offset=T(1, 2, 64), value_antiquant_offset=T(1, 2, 64))
    assert feats["key_antiquant_scale_form"] == "decode:m0:1,N,D"


def test_form_filters_imply_what_they_need() -> None:
    assert implied_pins({"quant_scale2_form": "empty_kv"}) == {"post_quant": True,
                                                               "empty": "kv"}
    assert implied_pins({"pse_shift_form": "decode:B,N,1,S2"}) == {
        "branch": "decode", "pse_batch": "B"}
    assert implied_pins({"atten_mask_size": "prefill:2048"}) == {
        "branch": "prefill", "mask_oversized": False}
    assert implied_pins({"learnable_sink_form": "none", "layout": "BSH"}) == {}
    # a filter given explicitly wins over what a form implies
    assert implied_pins({"kv_padding_size_form": "decode:1", "branch": "decode"}) == {
        "kv_padding": True}


def _doc_rows() -> dict[str, set[str]]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|[^|]+\|.+\| `([a-z0-9_]+)` = (.*?) \|[^|]+\|$", line)
        if m:
            values = m.group(2).split(" (")[0]
            rows[m.group(1)] = set(re.findall(r"`([^`]+)`", values))
    return rows


def test_docs_table_lists_exactly_the_axis_values() -> None:
    rows = _doc_rows()
    assert set(rows) == set(FORM_AXES)
    for axis, values in FORM_AXES.items():
        assert rows[axis] == set(values), axis
