"""Filters on the size classes read from the finished case (numel_class, units_class,
kv_tiles, q_rows, q_seq, batch_class, g_class): the size draws steer toward the pinned
class, so seeded walks carry it often, and a combination no case has stays Dead."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis.errors import InvalidArgument
from pinned_walks import walked

from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases

WALKS = 20


def _carried(filters: dict[str, Any], profile: str = "nightly", seed: int = 0) -> int:
    """Seeded walks (of WALKS) of the construction a pair aim takes that carry `filters`;
    each case carried is legal and has the filtered features."""
    drawn = walked(filters, WALKS, seed, profile)
    for case in drawn:
        validate(case)
        feats = case.features()
        assert all(feats[k] == v for k, v in filters.items()), feats
    return len(drawn)


@pytest.mark.parametrize("filters", [
    {"numel_class": "<2^16"},
    {"numel_class": "<2^16", "q_dtype": "int8"},
    {"numel_class": "<2^16", "cache": "NZ"},
    {"numel_class": "<2^16", "q_seq": ">2048"},
    {"numel_class": "<2^16", "batch_class": "over"},
    {"numel_class": "2^31", "cache_reach": "near"},
    {"units_class": "cores", "kv_dtype": "int4"},
    {"units_class": "above"},
    {"kv_tiles": "past"},
    {"kv_tiles": "long", "antiquant": "separate:2/2"},
    {"q_rows": "spec", "workload": "sliding_causal"},
    {"q_rows": "tile"},
    {"q_rows": "past"},
    {"q_seq": "2-16", "workload": "vllm_prefill"},
    {"batch_class": "over", "workload": "vllm_chunked"},
    {"batch_class": "under"},
    {"g_class": "64", "workload": "paged_decode_bnsd"},
], ids=str)
def test_a_pinned_size_class_is_carried_by_several_walks(filters: dict[str, Any]) -> None:
    assert _carried(filters) >= 3


@pytest.mark.parametrize("filters", [
    {"q_rows": "past", "q_seq": "2-16"},             # the longest query is both 2..16 and 513+
    {"numel_class": "<2^16", "q_dtype": "int8", "q_seq": ">2048"},  # 2049 x D 32 > 2^16
    {"batch_class": "over", "g_class": "64", "gqa": "mha"},  # G 64 is no MHA
    {"kv_tiles": "past", "q_seq": "0"},              # an empty query takes no route
], ids=str)
def test_an_impossible_size_class_combination_stays_dead(filters: dict[str, Any]) -> None:
    assert _carried(filters) == 0


def test_smoke_has_no_batch_past_the_cores() -> None:
    """smoke's budget (max_batch 4, no core_batch) never reaches batch_class "over"."""
    assert _carried({"batch_class": "over"}, profile="smoke") == 0


def test_mla_has_no_tensor_under_2_16() -> None:
    """A 128-token paged block of D 512 is 2^16 elements: the filter rules MLA out up front."""
    with pytest.raises(InvalidArgument):
        cases(profile="nightly", numel_class="<2^16", rope_d="512")
