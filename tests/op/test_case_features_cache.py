"""A case's features and view are computed once per Case object and invisible to its
identity."""

import dataclasses
import pickle

import fia_fuzz.op.case as case_module
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec


def _case() -> Case:
    q = TensorSpec((2, 8, 3, 64), "float16")
    kv = TensorSpec((2, 2, 5, 64), "float16")
    return Case(params={"query": q, "key": kv, "value": kv, "num_heads": 8,
                        "num_key_value_heads": 2, "input_layout": "BNSD"},
                fills={"query": {"dist": "normal", "scale": 1.0}}, seed=7)


def test_features_are_computed_once_per_case(monkeypatch) -> None:
    calls = []
    real = case_module.case_features
    monkeypatch.setattr(case_module, "case_features",
                        lambda c: calls.append(c.case_id) or real(c))
    case = _case()
    first = case.features()
    first["layout"] = "changed by a caller"  # a copy: the cache stays intact
    assert case.features() == real(case)
    assert len(calls) == 1
    _case().features()  # another object computes its own
    assert len(calls) == 2


def test_cache_leaves_equality_hash_repr_and_json_alone() -> None:
    fresh, used = _case(), _case()
    before = (used.to_json(), used.case_id, repr(used), hash(used))
    used.features()
    assert (used.to_json(), used.case_id, repr(used), hash(used)) == before
    assert used == fresh and fresh == used
    assert [f.name for f in dataclasses.fields(Case)] == ["params", "fills", "seed", "rules",
                                                          "stored"]
    assert dataclasses.replace(used, seed=8).features()["layout"] == used.features()["layout"]


def test_pickled_case_carries_its_features(monkeypatch) -> None:
    case = _case()
    feats = case.features()
    back = pickle.loads(pickle.dumps(case))
    monkeypatch.setattr(case_module, "case_features", lambda c: 1 / 0)
    assert back == case and back.case_id == case.case_id
    assert back.features() == feats  # no recomputation on the other side
    unused = pickle.loads(pickle.dumps(_case()))
    monkeypatch.undo()
    assert unused.features() == feats


def test_view_is_built_once_and_not_pickled(monkeypatch) -> None:
    built = []
    real = case_module.CallView
    monkeypatch.setattr(case_module, "CallView", lambda kw: built.append(1) or real(kw))
    case = _case()
    view = case.view()
    case.features()
    assert case.view() is view and len(built) == 1  # features read the same view
    back = pickle.loads(pickle.dumps(case))
    assert case_module._VIEW not in back.__dict__  # rebuilt on demand, not shipped
    assert back.view() is not view and back.view().B == view.B == 2
    assert len(pickle.dumps(case)) == len(pickle.dumps(back))
