"""Precision metrics and named verdict policies."""

from fia_fuzz.diff.judge import judge
from fia_fuzz.diff.metrics import compare
from fia_fuzz.diff.policies import DEFAULT_POLICY, POLICIES

__all__ = ["DEFAULT_POLICY", "POLICIES", "compare", "judge"]
