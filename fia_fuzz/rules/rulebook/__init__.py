"""The documented constraints of FIA, one module per rule-id prefix.

A rule `gqa.divisible` lives in `rulebook/gqa.py` as the check
`gqa_divisible`, next to that module's `NEGATIVE` calls (each breaking one of
its rules, built from the legal calls of `bases.py`); its breaker is in
`fia_fuzz/strategies/illegal/gqa.py`. Importing this package registers every
rule in `fia_fuzz.rules.rule.RULES`; the order of `MODULES` is the evaluation
order (arguments before shapes before features), so the cheapest, most basic
violation is reported first.
"""

from __future__ import annotations

from typing import Any

# isort: off
from fia_fuzz.rules.rulebook import (
    args,
    dtype,
    layout,
    gqa,
    dims,
    lengths,
    mask,
    pse,
    padding,
    kvlist,
    paged,
    prefix,
    antiquant,
    quant,
    rope,
    mla,
    tnd,
    nz,
    precise,
    sink,
)
# isort: on
from fia_fuzz.rules.rulebook.bases import call

MODULES = (args, dtype, layout, gqa, dims, lengths, mask, pse, padding, kvlist, paged, prefix,
           antiquant, quant, rope, mla, tnd, nz, precise, sink)

#: (rule id, base call, overrides) of every module, in evaluation order.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [n for m in MODULES for n in m.NEGATIVE]


def violating(rule_id: str) -> list[dict[str, Any]]:
    """Calls that break exactly `rule_id` (empty for an unknown id)."""
    return [call(base, **over) for r, base, over in NEGATIVE if r == rule_id]
