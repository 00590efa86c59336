"""Every relation on the golden (exact where the golden is exact) and on torch-sdpa.

A relation whose feature the runner does not express yet is skipped with the
runner's own reason, never faked.
"""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from torch_devices import CUDA, NO_CUDA, torch_runner

from fia_fuzz.metamorphic import RELATIONS, build_partners, check_relations
from fia_fuzz.op.case import Case
from fia_fuzz.rules.rulebook.bases import BASES
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners import Runner, get_runner
from fia_fuzz.strategies import cases

from .sources import SOURCES

#: Relations the golden computes through identical arithmetic, so they must be bit-exact
#: there: it normalises layouts, gathers pages and lists, prepends the prefix and turns every
#: mask form into one excluded set before one attention core. Measured: padding moves its
#: KV tiles (lse differs by ~2 float32 ulps) and decode_row changes the matmul shapes.
#: sink_column is exact because every source fits one golden KV tile (512 columns).
GOLDEN_EXACT = {"layout", "gqa_repeat", "paged", "kv_list", "prefix", "sparse_mask",
                "sink_column", "v1_v2", "run_twice", "batch_perm", "mask_shape",
                "mask_vs_lengths", "kv_tail"}
TORCH = importlib.util.find_spec("torch") is not None
#: torch-sdpa on the CPU, and as torch-sdpa@cuda on the GPU where torch sees one.
RUNNERS = ["golden"] + (["torch-sdpa", pytest.param("torch-sdpa@cuda", marks=[CUDA, NO_CUDA])]
                        if TORCH else [])
SLOW_TORCH = ([pytest.param("torch-sdpa", marks=pytest.mark.slow),
               pytest.param("torch-sdpa@cuda", marks=[pytest.mark.slow, CUDA, NO_CUDA])]
              if TORCH else [])


def _runner(runner_name: str) -> Runner:
    """The runner a parameter names: `golden`, `torch-sdpa` (on the CPU, whatever torch
    sees) or `torch-sdpa@cuda`."""
    spec, _, device = runner_name.partition("@")
    return get_runner(spec) if spec == "golden" else torch_runner(spec, device or "cpu")


#: The relations the catalogue must hold, by name.
REQUIRED = {"layout", "gqa_repeat", "paged", "kv_list", "padding", "prefix", "sparse_mask",
            "decode_row", "sink_column", "v1_v2", "eager_graph", "run_twice", "batch_perm",
            "mask_shape", "mask_vs_lengths", "kv_tail"}


def test_catalogue_holds_the_required_relations() -> None:
    assert REQUIRED <= set(RELATIONS), REQUIRED - set(RELATIONS)
    for rel in RELATIONS.values():
        assert rel.summary and rel.source, rel.name
    assert set(SOURCES) == set(RELATIONS), "every relation needs hand-built sources"


@pytest.mark.parametrize("name", list(RELATIONS))
def test_sources_yield_legal_deterministic_partners(name: str) -> None:
    rel = RELATIONS[name]
    for case in SOURCES[name]:
        call = case.call()
        [(_, built)] = build_partners(case, call, [rel])
        assert not isinstance(built, str), f"{name} does not apply to its own source: {built}"
        [(_, again)] = build_partners(case, case.call(), [rel])
        assert [p.variant for p in built] == [p.variant for p in again]
        for p, q in zip(built, again, strict=True):
            assert validate(**p.call) == [], (name, p.variant)
            for k, v in p.call.items():
                w = q.call[k]
                if isinstance(v, list) and v and hasattr(v[0], "tobytes"):
                    assert all(a.tobytes() == b.tobytes() for a, b in zip(v, w, strict=True))
                elif hasattr(v, "tobytes"):
                    assert v.tobytes() == w.tobytes(), (name, p.variant, k)


@pytest.mark.parametrize("runner_name", RUNNERS)
@pytest.mark.parametrize("name", list(RELATIONS))
def test_relation_holds(name: str, runner_name: str) -> None:
    runner = _runner(runner_name)
    rows = [r for case in SOURCES[name] for r in check_relations(case, runner, [name])]
    assert rows, f"{name} produced no partner for its sources"
    bad = [f"{r['relation']}/{r['variant']} case {r['case_id']}: {r['outcome']}: {r['detail']}"
           for r in rows if r["outcome"] in ("fail", "error")]
    assert not bad, f"{runner_name} breaks a metamorphic relation:\n" + "\n".join(bad)
    judged = [r for r in rows if r["outcome"] == "pass"]
    if not judged:
        pytest.skip(f"{name} on {runner_name}: {rows[0]['detail']}")
    if runner_name == "golden" and name in GOLDEN_EXACT:
        inexact = [(r["variant"], r["out_max_abs_diff"], r.get("lse_max_abs_diff"))
                   for r in judged if r["out_max_abs_diff"] or r.get("lse_max_abs_diff")]
        assert not inexact, f"the golden is not bit-exact under {name}: {inexact}"


@pytest.mark.parametrize("runner_name", RUNNERS)
@settings(max_examples=8)
@given(case=cases())
def test_catalogue_holds_on_drawn_cases(runner_name: str, case: Case) -> None:
    rows = check_relations(case, _runner(runner_name))
    bad = [r for r in rows if r["outcome"] in ("fail", "error")]
    assert not bad, bad


@pytest.mark.parametrize("runner_name", ["golden", *SLOW_TORCH])
@pytest.mark.parametrize("family", list(BASES))
def test_catalogue_holds_on_every_feature_family(family: str, runner_name: str) -> None:
    """The spec's legal base call of each feature family (quant, MLA, NZ, lists, ...)."""
    case = Case(params=dict(BASES[family]), seed=11)
    try:
        case.call()
    except ValueError as exc:
        pytest.skip(f"{family}: no default data recipe: {exc}")
    rows = check_relations(case, _runner(runner_name))
    bad = [f"{r['relation']}/{r['variant']}: {r['outcome']}: {r['detail']}"
           for r in rows if r["outcome"] in ("fail", "error")]
    assert not bad, "\n".join(bad)
