"""Rule profiles: `docs` is the documented model unchanged; `atlas-a2` holds each row of
device-a2.md with a call it accepts and a call it rejects."""

from __future__ import annotations

import pytest

from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles import PROFILES, get
from fia_fuzz.rules.profiles.atlas_a2_examples import NEGATIVE, PAGED, POSITIVE, TND, call
from fia_fuzz.rules.rule import RULES, IllegalCall
from fia_fuzz.rules.validate import infer_outputs, validate

A2 = PROFILES["atlas-a2"]


def test_docs_profile_is_the_rulebook() -> None:
    assert [r.id for r in get("docs").rules()] == list(RULES)


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="atlas-a2"):
        validate(**PAGED, rules="atlas-a9")


@pytest.mark.parametrize("row, kwargs, doc_rules", POSITIVE,
                         ids=[f"row{r}-{i}" for i, (r, _, _) in enumerate(POSITIVE)])
def test_device_accepts(row: int, kwargs: dict, doc_rules: frozenset) -> None:
    assert validate(**kwargs, rules="atlas-a2") == []
    assert {v.rule for v in validate(**kwargs)} == doc_rules


@pytest.mark.parametrize("row, rule_id, kwargs", NEGATIVE,
                         ids=[f"row{r}-{rid}-{i}" for i, (r, rid, _) in enumerate(NEGATIVE)])
def test_device_rejects(row: int, rule_id: str, kwargs: dict) -> None:
    violations = validate(**kwargs, rules="atlas-a2")
    assert [v.rule for v in violations] == [rule_id], [str(v) for v in violations]
    assert rule_id in RULES or A2.holds(rule_id)


def test_every_row_has_a_positive_and_a_negative_test() -> None:
    rows = set(range(1, 17))
    assert {r for r, _, _ in POSITIVE} == rows
    assert {r for r, _, _ in NEGATIVE} == rows


def test_every_device_rule_is_broken_by_an_example() -> None:
    broken = {rid for _, rid, _ in NEGATIVE}
    assert set(A2.own) - broken == {A2.accept_when}  # a shortcut accepts, it never rejects


def test_device_rules_cite_the_device_check_and_name_what_they_replace() -> None:
    for r in A2.own.values():
        assert r.id.startswith("a2.") and "device-a2.md" in r.source and "§" in r.source
    v = validate(**call(TND, sparse_mode=2, atten_mask=TensorSpec((2048, 2048), "bool")),
                 rules="atlas-a2")
    assert "in place of tnd.sparse" in v[0].message
    assert {d for d in A2.replaced} <= set(RULES) and set(A2.removed) <= set(RULES)


def test_outputs_of_device_only_forms() -> None:
    q = TensorSpec((2, 4, 8 * 128), "float16")
    kv = TensorSpec((2, 16, 2 * 128), "float16")
    kw = {"num_heads": 8, "num_key_value_heads": 2, "input_layout": "BSH_BNSD"}
    out, _ = infer_outputs(q, kv, kv, rules="atlas-a2", **kw)
    assert out.shape == (2, 8, 4, 128)
    with pytest.raises(IllegalCall, match="layout.known"):
        infer_outputs(q, kv, kv, **kw)
    out, _ = infer_outputs(**call(TND, quant_scale2=TensorSpec((1,), "float32")),
                           rules="atlas-a2")
    assert (out.shape, out.dtype) == ((10, 8, 128), "int8")
