"""Breakers of the `lengths.*` rules: actual_seq_lengths(_kv) counts and ranges
(rulebook/lengths.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "lengths.q_count": searched(
        {"prefix": True, "branch": "prefill"}, "values:actual_seq_lengths:empty"),  # 100%
    "lengths.kv_count": searched(
        {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode"},
        "values:actual_seq_lengths_kv:count"),  # 100%
    "lengths.q_nonnegative": searched(
        {"prefix": True, "branch": "prefill"}, "values:actual_seq_lengths:neg"),  # 100%
    "lengths.kv_nonnegative": searched(
        {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode"},
        "values:actual_seq_lengths_kv:neg"),  # 100%
    "lengths.q_max": searched(
        {"antiquant": "combined:0", "branch": "prefill"}, "values:actual_seq_lengths:big"),  # 100%
    "lengths.kv_max": searched(
        {"prefix": True, "branch": "decode"}, "values:actual_seq_lengths_kv:big"),  # 100%
    "lengths.packed_required": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "drop:actual_seq_lengths"),  # 100%
    "lengths.packed_count_max": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "values:actual_seq_lengths_kv:many"),  # 100%
    "lengths.packed_monotonic": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "values:actual_seq_lengths:decreasing"),  # 100%
    "lengths.packed_total": searched({"layout": "TND", "rope": False}, "axis:query:0:-1"),  # 100%
}
