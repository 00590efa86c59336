"""A route_edge filter steers the draw onto its cell: a seeded walk pinned to a cell, alone
or with one other filter, lands on it in most walks (routes.FILTER_AIMS, the aimed sizes),
and a cell another filter excludes stays Dead."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis.errors import InvalidArgument
from pinned_walks import walked

from fia_fuzz.rules.validate import case_violations

cases = importlib.import_module("fia_fuzz.strategies.cases")

WALKS = 10


def _walks(filters: dict[str, Any], seed: int = 0) -> tuple[int, list[Any]]:
    """(walks that carried every filter, the cases they drew) of WALKS seeded walks."""
    drawn = walked(filters, WALKS, seed)
    return len(drawn), drawn


@pytest.mark.parametrize("filters", [
    {"route_edge": "v3.gqa:s2+1"},
    {"route_edge": "v3.gqa:cores", "mask": "uint8"},
    {"route_edge": "fai:cores+1", "gqa": "mqa"},
    {"route_edge": "ifa.float:s2+1", "values": "inf_attended"},
    {"route_edge": "ifa.post_quant:s2+1"},
    {"route_edge": "pfa.float:cores", "plain": True},
    {"route_edge": "pfa.post_quant:s1"},
    {"route_edge": "pfa.float:s1-1", "kv_tiles": "long"},
])
def test_a_pinned_cell_lands_in_most_walks(filters: dict[str, Any]) -> None:
    carried, drawn = _walks(filters)
    assert carried >= WALKS // 2, f"{filters}: {carried}/{WALKS} walks"
    for case in drawn:
        feats = case.features()
        assert {k: feats[k] for k in filters} == filters
        assert not case_violations(case)


def test_a_cell_another_filter_excludes_stays_dead() -> None:
    # the split-fuse route takes packed layouts only
    assert _walks({"route_edge": "fai:cores", "layout": "BNSD"})[0] == 0
    with pytest.raises(InvalidArgument):
        cases.cases("nightly", route_edge="fai:cores", layout="BNSD")
