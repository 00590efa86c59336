"""Kernel-edge sizes in every family: each edge kind is drawn unfiltered, and each
size_edge / table_width filter can be met, by every family that can carry it."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fia_fuzz.op.case import Case
from fia_fuzz.op.edges import (
    BATCH_CLASSES,
    EMPTY_SHARES,
    LONG_KV,
    NUMEL_CLASSES,
    SIZE_EDGES,
    SPLIT_BN,
    TABLE_WIDTHS,
    batch_class,
    empty_share,
    numel_class,
    size_edge,
    table_width,
)
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases
from fia_fuzz.strategies.axes import AXES
from fia_fuzz.strategies.cases import _plan, build
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES
from fia_fuzz.strategies.families import FAMILIES

#: Families that take a block table in some draws (full_quant never pages).
TABLED = tuple(f for f in FAMILIES if f != "full_quant")


def _walk(family: str, n: int, seed: int = 5) -> list[Case]:
    rng = random.Random(seed)
    return [build(RandomChooser(rng, {}), PROFILES["nightly"], [family], {})
            for _ in range(n)]


#: Walks per family: dense pages in about 1 draw of 16 (its other KV forms exclude a
#: table), so it needs more walks for each table width to show up.
WALKS = {"dense": 1500}


@pytest.fixture(scope="module")
def walks() -> dict[str, list[Case]]:
    return {f: _walk(f, WALKS.get(f, 500)) for f in FAMILIES}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_draws_every_size_edge(walks: dict[str, list[Case]], family: str) -> None:
    """Unfiltered nightly draws of each family hit every edge kind (and stay legal)."""
    feats = [c.features() for c in walks[family]]
    hits = Counter(f["size_edge"] for f in feats)
    assert set(hits) == set(SIZE_EDGES), hits
    assert all(validate(**c.specs()) == [] for c in walks[family][:100])
    widths = Counter(f["table_width"] for f in feats)
    if family in TABLED:
        assert set(widths) - {"none"} == set(TABLE_WIDTHS[1:]), widths
        assert any(f["table_oversized"] for f in feats)
    else:
        assert set(widths) == {"none"}


@pytest.mark.parametrize("axis", ["size_edge", "table_width"])
def test_edge_filters_reach_every_family_that_can_carry_them(axis: str) -> None:
    values = SIZE_EDGES if axis == "size_edge" else TABLE_WIDTHS[1:]
    for value in values:
        families = _plan("nightly", {axis: value})[1]
        assert set(families) == set(FAMILIES if axis == "size_edge" else TABLED), value


@pytest.mark.parametrize("value", SIZE_EDGES)
def test_size_edge_filter_draws_legal_cases_in_the_nightly_profile(value: str) -> None:
    @settings(max_examples=10, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases(profile="nightly", size_edge=value))
    def check(case: Case) -> None:
        f = case.features()
        assert f["size_edge"] == value and validate(**case.specs()) == []
        if value == "long":
            assert f["B"] * f["N"] < SPLIT_BN and max(case.view().act_kv) >= LONG_KV

    check()


@pytest.mark.parametrize(("bn", "lengths", "kv", "kind"), [
    (1, [511, 100], [100], "below"),
    (1, [512, 513], [512], "above"),
    (2, [1024], [1024], "multiple"),
    (2, [64, 65], [64], "above"),         # one value per case: below, above, multiple
    (2, [62, 130], [130], "free"),        # 62 sits under the first tile's edge (63)
    (20, [511], [511], "cores"),
    (19, [LONG_KV], [LONG_KV], "cores"),  # next to 20 cores: not a flash-decode split
    (18, [1], [LONG_KV], "long"),
    (18, [1], [LONG_KV - 1], "free"),
    (22, [1], [LONG_KV * 2], "free"),
])
def test_size_edge_classifies(bn: int, lengths: list[int], kv: list[int], kind: str) -> None:
    assert size_edge(bn, lengths, kv) == kind


@pytest.mark.parametrize(("width", "kind"), [
    (None, "none"), (1, "free"), (6, "free"), (7, "below"), (8, "multiple"), (9, "above"),
    (10, "free"), (127, "below"), (129, "above")])
def test_table_width_classifies(width: int | None, kind: str) -> None:
    assert table_width(width) == kind


@pytest.mark.parametrize(("numel", "kind"), [
    (0, "<2^16"), ((1 << 16) - 1, "<2^16"), (1 << 16, "2^16"), ((1 << 24) - 1, "2^16"),
    (1 << 24, "2^24"), ((1 << 31) - 1, "2^24"), (1 << 31, "2^31"), ((1 << 32) - 1, "2^31"),
    (1 << 32, "2^32")])
def test_numel_class_takes_the_highest_edge_reached(numel: int, kind: str) -> None:
    assert numel_class(numel) == kind


@pytest.mark.parametrize(("lengths", "share"), [
    ([5, 7], "none"), ([0], "all"), ([0, 0, 0], "all"), ([0, 7], "one"), ([0, 3, 4], "one"),
    ([0, 0, 3, 4, 5], "few"), ([0, 0, 3, 4], "half"), ([0, 0, 3], "half")])
def test_empty_share_classifies(lengths: list[int], share: str) -> None:
    assert empty_share(lengths) == share


@pytest.mark.parametrize(("b", "kind"), [
    (1, "1"), (2, "under"), (19, "under"), (20, "cores"), (24, "cores"), (25, "over")])
def test_batch_class_against_the_dies_cube_cores(b: int, kind: str) -> None:
    assert batch_class(b) == kind


def test_size_class_values_are_axis_values() -> None:
    assert (AXES["numel_class"], AXES["empty_share"], AXES["batch_class"]) == (
        NUMEL_CLASSES, EMPTY_SHARES, BATCH_CLASSES)


@pytest.mark.parametrize("share", ["one", "half", "all"])
def test_an_empty_share_filter_steers_the_smoke_profile(share: str) -> None:
    """Smoke's unfiltered draws never zero a batch (strategies/draft.py empty_batches), a
    filter for a share draws it."""
    rng = random.Random(3)
    pins = {"empty_share": share}
    got = []
    for _ in range(300):
        try:
            got.append(build(RandomChooser(rng, pins), PROFILES["smoke"], ["dense"], pins))
        except Dead:
            continue
        if len(got) == 3:
            break
    assert len(got) == 3 and {c.features()["empty_share"] for c in got} == {share}
    assert all(validate(**c.specs()) == [] for c in got)
