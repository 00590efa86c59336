"""`illegal_cases(rule)`: cases that break exactly one named rule.

Each breaker takes a legal case and changes it just enough to violate its
rule; the result is checked against `validate` by the meta-tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.spec import RULES, Case, TensorSpec
from fia_fuzz.strategies.cases import cases

Breaker = Callable[[st.DrawFn, Case], dict[str, Any]]


def _gqa_ratio(draw: st.DrawFn, case: Case) -> dict[str, Any]:
    """One KV head shared by more than 64 query heads (base case is BNSD)."""
    b, _, s1, d = case.params["query"].shape
    kb, _, s2, _ = case.params["key"].shape
    n = draw(st.sampled_from([65, 96, 128]))
    dtype = case.params["query"].dtype
    kv = TensorSpec((kb, 1, s2, d), dtype)
    return {"query": TensorSpec((b, n, s1, d), dtype), "key": kv, "value": kv,
            "num_heads": n, "num_key_value_heads": 1}


BREAKERS: dict[str, Breaker] = {
    "gqa.ratio_max_64": _gqa_ratio,
}


def illegal_cases(rule: str | None = None) -> st.SearchStrategy[Case]:
    """Cases whose only violation is `rule` (any rule that has a breaker when None)."""
    if rule is not None and rule not in RULES:
        raise InvalidArgument(f"rule={rule!r} is not a rule id; see fia_fuzz.spec.RULES")
    if rule is not None and rule not in BREAKERS:
        raise InvalidArgument(f"rule={rule!r} has no breaker yet")
    ids = [rule] if rule else sorted(BREAKERS)

    @st.composite
    def broken(draw: st.DrawFn) -> Case:
        rid = draw(st.sampled_from(ids))
        base = draw(cases(layout="BNSD"))
        changes = BREAKERS[rid](draw, base)
        return Case(params={**base.params, **changes}, fills=base.fills, seed=base.seed)

    return broken()
