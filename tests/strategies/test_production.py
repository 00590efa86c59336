"""The production sizes table (strategies/production.py) holds what the model table says."""

from __future__ import annotations

from fia_fuzz.strategies import production
from fia_fuzz.strategies.workloads import MLA_MODEL, MODELS


def test_production_sizes_come_from_the_model_table() -> None:
    assert {d for _, _, d in MODELS} <= set(production.HEAD_DIMS)
    # MLA: latent 512, 576 with the rope half; its prefill's qk 192; 128 heads over one
    assert {512, 576, 192} <= set(production.HEAD_DIMS)
    assert MLA_MODEL[0] // MLA_MODEL[1] in production.GROUPS
    assert {4, 8, 16, 64} <= set(production.GROUPS)
    assert 128 in production.BLOCK_SIZES


def test_past_keeps_the_values_a_bound_rejects() -> None:
    assert production.past(production.HEAD_DIMS, lambda d: d <= 512) == [576]
    assert production.past(production.GROUPS, lambda g: g <= 64) == [128]
