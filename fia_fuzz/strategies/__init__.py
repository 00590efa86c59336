"""Hypothesis strategies: legal-by-construction cases, and cases breaking one named rule."""

from fia_fuzz.strategies.cases import PROFILES, cases
from fia_fuzz.strategies.illegal import INEXPRESSIBLE, NOT_MATERIALISABLE, illegal_cases

__all__ = ["INEXPRESSIBLE", "NOT_MATERIALISABLE", "PROFILES", "cases", "illegal_cases"]
