"""Filters on derived features steer the construction: a seeded walk pinned to a workload,
an empty-batch share, a paged-table feature, a route or a `values` value carries it in most
walks (the path a stream's pair aim takes, strategies/cases.py `_walk_aim`), legally, and a
combination no case can carry is still refused."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis.errors import InvalidArgument
from pinned_walks import walked

from fia_fuzz.rules.validate import case_violations

C = importlib.import_module("fia_fuzz.strategies.cases")

WALKS = 12


def _carried(filters: dict[str, Any], walks: int = WALKS, seed: int = 0) -> int:
    """Walks (of `walks`) that carry `filters`, each drawn case legal."""
    drawn = walked(filters, walks, seed)
    for case in drawn:
        feats = case.features()
        assert {k: feats[k] for k in filters} == filters
        assert case_violations(case) == []
    return len(drawn)


@pytest.mark.parametrize("filters", [
    # workload: the pattern's implied features pin every family that can carry it
    {"workload": "paged_decode_bsh", "band": "small"},
    {"workload": "paged_decode_bnsd", "sink": True},
    {"workload": "paged_decode_bnsd", "d_class": "<64"},
    {"workload": "paged_decode_bsh", "actual_q": "one"},
    {"workload": "sliding_causal", "q_dtype": "bfloat16"},
    # empty batches: B and per-batch lengths steered, packed and paged decode too
    {"empty_share": "few", "layout": "NTD_TND"},
    {"empty_share": "one", "rope_d": "128"},
    {"empty_share": "few", "route": "v3.gqa"},
    {"empty_share": "one", "workload": "paged_decode_bnsd"},
    {"act_zero": True, "workload": "paged_decode_bnsd"},
    # paged tables
    {"table_shuffled": False, "layout": "TND_NTD"},
    {"table_shuffled": False, "workload": "paged_decode_bnsd"},
    {"table_spare": False, "cache": "BnBsH"},
    {"block_edge": "max", "q_dtype": "bfloat16"},
    # route V3 GQA: dims and inputs of its templates, prefill for full masks and modes
    {"route": "v3.gqa", "mask_shape": "B,S1,S2"},
    {"route": "v3.gqa", "sparse_mode": 2},
    # values a mask or a shared prefix carries
    {"values": "nan_masked", "prefix_len": "absent"},
    {"values": "inf_masked", "prefix_len": "given"},
])
def test_pinned_derived_features_are_carried_by_most_walks(filters: dict[str, Any]) -> None:
    assert _carried(filters) >= WALKS // 3


@pytest.mark.parametrize("filters", [
    {"workload": "paged_decode_bsh", "layout": "BNSD"},   # the pattern is BSH
    {"table_spare": False, "cache_reach": "2^24"},        # blocks below a far cache are spare
    {"route": "v3.gqa", "prefix_len": "given"},           # V3 GQA has no prefix template
])
def test_a_combination_no_case_carries_is_refused(filters: dict[str, Any]) -> None:
    assert _carried(filters, walks=6) == 0
    with pytest.raises(InvalidArgument):
        C.cases("nightly", **filters)
