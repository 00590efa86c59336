"""Meta-tests of `cases()`: draws are legal, filters are honoured, every axis value is reached.

In the style of array-api-tests' meta_tests: the strategies are tested, not trusted.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import PROFILES, cases, pair_aims
from fia_fuzz.strategies.axes import (
    AXES,
    FILTER_ONLY_IN_SMOKE,
    LARGE_ONLY,
    ROUTE_AXES,
    ROUTES_NOT_IN_SMOKE,
)
from fia_fuzz.strategies.bars import measure
from fia_fuzz.strategies.cases import build, families_for
from fia_fuzz.strategies.choices import RandomChooser
from fia_fuzz.strategies.sample import draw_cases


def _violations(case: Case) -> list[str]:
    return [v.rule for v in validate(**case.specs())]


@given(cases())
def test_every_draw_is_legal(case: Case) -> None:
    assert _violations(case) == [], case.to_json()
    assert Case.from_json(case.to_json()) == case


@pytest.mark.parametrize("profile", ["nightly", "stress"])
@settings(max_examples=10)
@given(data=st.data())
def test_profiles_draw_legal_cases(profile: str, data: st.DataObject) -> None:
    assert _violations(data.draw(cases(profile=profile))) == []


def _int32_packed_kv() -> Case:
    """Decode, BNSD, float16 query D 64, int4 KV packed 8-per-int32 (last dim D/8)."""
    q = TensorSpec((1, 2, 1, 64), "float16")
    kv = TensorSpec((1, 2, 8, 8), "int32")
    scale = TensorSpec((1, 2, 1, 64), "float16")
    return Case(params={"query": q, "key": kv, "value": kv, "num_heads": 2,
                        "num_key_value_heads": 2, "input_layout": "BNSD",
                        "key_antiquant_scale": scale, "value_antiquant_scale": scale})


def _tnd_dv_128() -> Case:
    """TND, bfloat16, Q_D = K_D = 192 and V_D = 128 without rope."""
    return Case(params={"query": TensorSpec((5, 2, 192), "bfloat16"),
                        "key": TensorSpec((7, 2, 192), "bfloat16"),
                        "value": TensorSpec((7, 2, 128), "bfloat16"),
                        "num_heads": 2, "num_key_value_heads": 2, "input_layout": "TND",
                        "actual_seq_lengths": [2, 5], "actual_seq_lengths_kv": [3, 7]})


@pytest.mark.parametrize("case", [_int32_packed_kv(), _tnd_dv_128()],
                         ids=["int32_packed_kv_d_over_8", "tnd_dv_ne_d"])
def test_once_disputed_documented_calls_stay_legal(case: Case) -> None:
    """Calls the strategies draw that the rulebook once rejected against the docs:
    int32-packed int4 KV has last dim D/8 (V2 §Q_S=1); TND allows V_D != K_D (V4 §TND)."""
    assert _violations(case) == []


def _walk(n: int, seed: int, profile: str = "smoke") -> list[Case]:
    rng = random.Random(seed)
    fams = families_for({})
    return [build(RandomChooser(rng, {}), PROFILES[profile], fams, {}) for _ in range(n)]


def test_random_walks_reach_every_axis_value_and_stay_legal() -> None:
    """The construction reaches every value of every axis (cheap walks, no Hypothesis)."""
    seen: dict[str, set] = defaultdict(set)
    for case in _walk(3000, seed=11):
        assert _violations(case) == [], case.to_json()
        for axis, value in case.features().items():
            seen[axis].add(repr(value))
    assert _missing(seen) == {}


def test_random_nightly_walks_reach_every_axis_value() -> None:
    """Every value comes up at least 10 times in 4000 nightly walks (a quarter percent):
    the rare forms (a combined or per-channel antiquant scale shape, an NBSD/NTD output, a
    per-channel post-quant shape) are weighted where the draw picks them, so the rarest come
    up 12+ times here, where they came up 5-9 times before, and Hypothesis' clumped draws
    reach them all in `fia-fuzz coverage --profile nightly --cases 5000`."""
    seen: dict[str, Counter] = defaultdict(Counter)
    with pair_aims.unaimed():  # the profile's own mix: pair aims pin their own values
        walks = _walk(4000, seed=13, profile="nightly")
    for case in walks:
        for axis, value in case.features().items():
            seen[axis][repr(value)] += 1
    assert {a: v for a, v in _missing(seen, "nightly").items() if a not in ROUTE_AXES} == {}
    rare = {(a, v): seen[a][repr(v)] for a, vals in AXES.items() for v in vals
            if seen[a][repr(v)] < 10 and a not in ROUTE_AXES}
    assert rare == {}


def _missing(seen: dict[str, set], profile: str = "smoke") -> dict[str, list]:
    """Axis values never seen (values only larger profiles draw excused in smoke)."""
    missing = {a: [v for v in vals if repr(v) not in seen[a]
                   and (profile != "smoke"
                        or (a, v) not in LARGE_ONLY | FILTER_ONLY_IN_SMOKE | ROUTES_NOT_IN_SMOKE)]
               for a, vals in AXES.items()}
    return {a: v for a, v in missing.items() if v}


def test_random_walks_reach_large_only_values_in_nightly_not_in_smoke() -> None:
    nightly = {(a, c.features()[a]) for c in _walk(1500, seed=3, profile="nightly")
               for a, _ in LARGE_ONLY}
    smoke = {(a, c.features()[a]) for c in _walk(1500, seed=3) for a, _ in LARGE_ONLY}
    assert LARGE_ONLY <= nightly and not LARGE_ONLY & smoke


def test_budget_holds() -> None:
    """query+key+value stay near the profile's element budget (block rounding may add a bit)."""
    prof = PROFILES["smoke"]
    for case in _walk(1000, seed=5):
        total = sum(t.numel for name in ("query", "key", "value")
                    for t in (case.params[name] if isinstance(case.params[name], list)
                              else [case.params[name]]))
        assert total <= 4 * prof.max_elements, case.to_json()


FILTER_CELLS = [(axis, value) for axis, values in AXES.items() for value in values
                if axis not in ROUTE_AXES]


@pytest.mark.parametrize(("axis", "value"), FILTER_CELLS,
                         ids=[f"{a}={v}" for a, v in FILTER_CELLS])
def test_filter_is_honoured(axis: str, value: object) -> None:
    @settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow],
              phases=[Phase.generate])
    @given(cases(**{axis: value}, profile="nightly" if (axis, value) in LARGE_ONLY else "smoke"))
    def check(case: Case) -> None:
        assert case.features()[axis] == value
        assert _violations(case) == []

    check()


ROUTE_FILTERS = [("route", r) for r in ROUTE_AXES["route"]] + [
    ("route_edge", c) for c in ("fai:s2+1", "ifa.antiquant:split_on", "pfa.float:cores",
                                "v3.gqa:s2-1", "ifa.mla_quant:s2")]


@pytest.mark.parametrize(("axis", "value"), ROUTE_FILTERS,
                         ids=[f"{a}={v}" for a, v in ROUTE_FILTERS])
def test_route_filters_are_honoured(axis: str, value: str) -> None:
    """A route or route_edge filter steers the draw onto its route (strategies/routes.py)."""
    @settings(max_examples=2, suppress_health_check=list(HealthCheck), phases=[Phase.generate],
              deadline=None)
    @given(cases(**{axis: value}, profile="nightly"))
    def check(case: Case) -> None:
        assert case.features()[axis] == value
        assert _violations(case) == []

    check()


@pytest.mark.parametrize("filters", [
    {"layout": "TND", "paged": True, "kv_dtype": "bfloat16"},
    {"antiquant": "separate:4/4", "cache": "BnNBsD"},
    {"full_quant": True, "post_quant_form": "per_channel", "sparse_mode": 4},
    {"rope_d": "512", "cache": "NZ", "layout": "BSH_NBSD"},
    {"prefix": True, "mask_oversized": True, "pse_batch": "B"},
    {"q_padding": True, "kv_padding": True, "actual_q": "longer"},
])
def test_combined_filters_are_honoured(filters: dict) -> None:
    @settings(max_examples=5, phases=[Phase.generate])
    @given(cases(**filters))
    def check(case: Case) -> None:
        feats = case.features()
        assert {k: feats[k] for k in filters} == filters
        assert _violations(case) == []

    check()


@pytest.mark.parametrize(("filters", "word"), [
    ({"colour": "red"}, "unknown filter colour"),
    ({"layout": "XYZ"}, "layout='XYZ'"),
    ({"paged": 1}, "paged=1"),
    ({"full_quant": True, "layout": "TND"}, "no legal case"),
    ({"layout": "TND", "kv_list": True}, "no legal case"),
    ({"rope_d": "512", "lse": True}, "no legal case"),
])
def test_bad_filters_are_named_at_build_time(filters: dict, word: str) -> None:
    with pytest.raises(InvalidArgument, match=word.replace("(", r"\(")):
        cases(**filters)


def test_bad_profile_is_named() -> None:
    with pytest.raises(InvalidArgument, match="profile='huge'"):
        cases(profile="huge")


def test_shrinks_toward_the_simplest_case() -> None:
    """Minimal example: dense BNSD float16 MHA, no optional inputs, small sizes."""
    case = find(cases(), lambda c: True, settings=settings(database=None, max_examples=50))
    f = case.features()
    assert (f["layout"], f["q_dtype"], f["gqa"], f["plain"]) == ("BNSD", "float16", "mha", True)
    assert f["B"] == 1 and f["N"] == 1


def test_shrunk_failure_names_only_what_matters() -> None:
    """A predicate needing paged KV shrinks to a case whose other features are the simplest.

    Where the shrink ends (dense, packed, MLA or a workload: their paged paths are near
    in length) depends on the order tests run in; a workload's sparse 3 brings its
    optimized mask along, so only a user mask (modes 0/1) counts as an extra here.
    """
    case = find(cases(), lambda c: c.features()["paged"],
                settings=settings(database=None, max_examples=500))
    f = case.features()
    assert f["paged"] and f["mask_fill"] in ("none", "triu") and not f["pse"] \
        and not f["lse"], f


@pytest.mark.slow
def test_five_thousand_hypothesis_draws_are_legal_and_reach_every_value() -> None:
    """Every feature value reached, through Hypothesis itself (what `fia-fuzz coverage
    --cases 5000` prints)."""
    seen: dict[str, set] = defaultdict(set)
    bad: list[str] = []

    # the seed of `fia-fuzz coverage` (0), so the bar is the command's, not the source digest's
    @seed(0)
    @settings(max_examples=5000, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw(case: Case) -> None:
        if _violations(case):
            bad.append(case.to_json())
        for axis, value in case.features().items():
            seen[axis].add(repr(value))

    draw()
    assert bad == []
    assert _missing(seen) == {}


@pytest.mark.slow
def test_five_thousand_nightly_hypothesis_draws_reach_every_value_and_the_bars() -> None:
    """The production bars, as `fia-fuzz coverage --profile nightly --cases 5000` prints them."""
    drawn = draw_cases(5000, seed=0, profile="nightly")
    seen: dict[str, set] = defaultdict(set)
    for case in drawn:
        for axis, value in case.features().items():
            seen[axis].add(repr(value))
    assert _missing(seen, "nightly") == {}
    assert measure([c.features() for c in drawn], "nightly").missed() == []


def test_coverage_command_prints_every_axis_and_the_rate(capsys) -> None:
    from fia_fuzz.cli import main

    main(["coverage", "--cases", "40", "--filter", "layout=BSH"])
    text = capsys.readouterr().out
    for axis in AXES:
        assert f"{axis} |" in text
    assert "cases/s" in text and "validate: 40 cases" in text and "all legal" in text
