"""Production workloads: legal, shaped as the engines call, reached in the share the
production bars ask."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fia_fuzz.op.case import Case
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases
from fia_fuzz.strategies.bars import S2_REACH, measure
from fia_fuzz.strategies.cases import build, families_for
from fia_fuzz.strategies.choices import RandomChooser
from fia_fuzz.strategies.draft import PROFILES
from fia_fuzz.strategies.masks import DECODE_SHAPES
from fia_fuzz.strategies.paged import EDGE_SLACK
from fia_fuzz.strategies.sample import draw_cases
from fia_fuzz.strategies.workloads import MODELS, OWN, TP


def _walk(n: int, profile: str, seed: int = 7) -> list[Case]:
    rng = random.Random(seed)
    fams = families_for({})
    return [build(RandomChooser(rng, {}), PROFILES[profile], fams, {}) for _ in range(n)]


@pytest.fixture(scope="module")
def nightly() -> list[Case]:
    return _walk(1500, "nightly")


def _split(n: int, kv: int, d: int) -> set[tuple[int, int, int]]:
    return {(n // tp, max(1, kv // tp), d) for tp in TP if n % tp == 0}


GEOMETRIES = set().union(*(_split(*m) for m in MODELS))


@pytest.mark.parametrize("workload", OWN)
def test_workload_draws_are_legal_production_calls(workload: str) -> None:
    @settings(max_examples=8, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow])
    @given(cases(profile="nightly", workload=workload))
    def check(case: Case) -> None:
        assert validate(**case.specs()) == []
        f = case.features()
        assert f["workload"] == workload and f["cache"] == "BnBsH"
        assert (f["N"], f["KV_N"], f["D"]) in GEOMETRIES
        v = case.view()
        q, kv = v.act_q, v.act_kv
        if workload == "vllm_prefill":
            assert q == kv
        elif workload == "vllm_decode":
            assert set(q) == {1}
        elif workload == "vllm_prefix_hit":
            bs = case.attr("block_size")
            assert all(k > x and (k - x) % bs == 0 for x, k in zip(q, kv, strict=True))
        if workload.startswith("vllm") or workload == "sliding_causal":
            assert f["layout"] == "TND" and f["sparse_mode"] == 3 and f["q_dtype"] == "bfloat16"
        if workload.startswith("paged_decode"):
            assert f["branch"] == "decode" and f["block_size"] == 128

    check()


def test_nightly_reaches_the_production_calls(nightly: list[Case]) -> None:
    """The production bars (strategies/bars.py, what `fia-fuzz coverage` prints) on unfiltered
    nightly walks."""
    feats = [c.features() for c in nightly]
    bars = measure(feats, "nightly")
    assert bars.missed() == [], bars.lines()
    assert set(DECODE_SHAPES) <= set(bars.masked)
    assert {f["workload"] for f in feats} >= set(OWN)
    assert Counter(f["view"] for f in feats)["strided"] > 0


def test_a_few_percent_of_nightly_draws_take_32k_keys_within_the_memory_budget(
        nightly: list[Case]) -> None:
    """Long KV costs golden time: S2 >= 32768 in a few percent of the draws, each within the
    element budget (KV_N x D small enough; the host holds what 16-bit elements of the budget
    take, with the block rounding paged.EDGE_SLACK allows: 64 MiB, far under 1 GiB)."""
    far = [c for c in nightly if c.features()["S2"] >= S2_REACH["nightly"]]
    assert 0.005 * len(nightly) <= len(far) <= 0.05 * len(nightly)
    assert max(max(c.view().act_kv) for c in far) >= S2_REACH["nightly"]
    for case in far:
        assert case.host_bytes() <= 2 * EDGE_SLACK * PROFILES["nightly"].max_elements


@pytest.mark.parametrize(("profile", "n"), [("nightly", 200), ("stress", 80)])
def test_long_filtered_draws_reach_the_profiles_longest_kv(profile: str, n: int) -> None:
    """cases(size_edge="long") reaches S2 >= 32768 (nightly) and >= 131072 (stress): long-KV
    draws go up to the profile's long_kv, each doubling from LONG_KV as likely."""
    drawn = draw_cases(n, seed=0, profile=profile, size_edge="long")
    assert max(c.features()["S2"] for c in drawn) >= S2_REACH[profile]


def test_smoke_keeps_workloads_a_small_share() -> None:
    feats = [c.features() for c in _walk(600, "smoke")]
    share = sum(f["workload"] in OWN for f in feats) / len(feats)
    assert 0 < share < 0.2
    assert max(f["S2"] for f in feats) <= 8192


@pytest.mark.parametrize("workload", ("mla_decode", "mla_mtp"))
def test_mla_workloads_take_deepseek_heads_and_mtp_lengths_by_construction(workload: str
                                                                           ) -> None:
    """Pinned to an MLA pattern, the mla family builds it (no draw is discarded for it):
    N = 128 / TP for TP 1, 2, 4, 8, S1 = 1 (decode) or 2..4 with the causal mask (MTP)."""
    rng = random.Random(3)
    pins = {"workload": workload}
    feats = [build(RandomChooser(rng, pins), PROFILES["nightly"], ["mla"], pins).features()
             for _ in range(120)]
    assert {f["N"] for f in feats} == {128 // tp for tp in (1, 2, 4, 8)}
    assert all(f["rope_d"] == "512" and f["KV_N"] == 1 and f["paged"] for f in feats)
    if workload == "mla_decode":
        assert {f["S1"] for f in feats} == {1} and {f["sparse_mode"] for f in feats} == {0}
    else:
        assert {f["S1"] for f in feats} == {2, 3, 4} and {f["sparse_mode"] for f in feats} == {3}
        assert "TND" in {f["layout"] for f in feats}


def test_mla_cases_are_classed_by_deepseek_heads_and_mtp_lengths() -> None:
    """Any MLA case (generic draws included) is a production pattern only with N = 128 / TP,
    paged, and S1 = 1 (decode) or 2..4 under sparse 3 (MTP)."""
    rng = random.Random(4)
    seen = Counter()
    for _ in range(300):
        f = build(RandomChooser(rng, {}), PROFILES["nightly"], ["mla"], {}).features()
        deepseek = f["N"] in (16, 32, 64, 128) and f["paged"]
        want = ("mla_decode" if deepseek and f["branch"] == "decode" else
                "mla_mtp" if deepseek and f["S1"] in (2, 3, 4) and f["sparse_mode"] == 3
                else "none")
        assert f["workload"] == want
        seen[want] += 1
    assert min(seen[w] for w in ("none", "mla_decode", "mla_mtp")) >= 30
