"""Hypothesis strategies: legal-by-construction cases, and cases breaking one named rule."""

from fia_fuzz.strategies.cases import PROFILES, cases
from fia_fuzz.strategies.illegal import illegal_cases

__all__ = ["PROFILES", "cases", "illegal_cases"]
