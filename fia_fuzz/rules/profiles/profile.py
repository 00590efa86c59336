"""The Profile record and the registry of profiles (the package's __init__ explains them).

Apart from the package's __init__ so that a profile's module (atlas_a2.py)
can register itself without importing the package that imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import fia_fuzz.rules.rulebook  # noqa: F401  (registers every documented rule)
from fia_fuzz.op.case import DEFAULT_RULES
from fia_fuzz.rules.rule import RULES, Rule

DEFAULT = DEFAULT_RULES


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    #: the profile's own rules (id -> Rule), registered by its module
    own: Mapping[str, Rule] = field(default_factory=dict)
    #: documented rule id -> why the profile does not hold it
    removed: Mapping[str, str] = field(default_factory=dict)
    #: documented rule id -> the profile's rule id evaluated in its place
    replaced: Mapping[str, str] = field(default_factory=dict)
    #: the profile's rule ids evaluated after the documented ones
    added: tuple[str, ...] = ()
    #: a rule of `own` whose check returns a truthy reason when the call is accepted outright
    accept_when: str | None = None
    #: decisions taken where the profile's source is ambiguous (markdown, for docs/rules.md)
    notes: str = ""

    def rules(self) -> list[Rule]:
        """The rules this profile holds, in evaluation order."""
        out: dict[str, Rule] = {}
        for rid, r in RULES.items():
            if rid in self.removed:
                continue
            r = self.own[self.replaced[rid]] if rid in self.replaced else r
            out.setdefault(r.id, r)
        out.update((rid, self.own[rid]) for rid in self.added)
        return list(out.values())

    def holds(self, rule_id: str) -> bool:
        if rule_id in RULES:
            return rule_id not in self.removed and rule_id not in self.replaced
        return rule_id in self.added or rule_id in self.replaced.values() \
            or rule_id == self.accept_when

    def replaces(self, rule_id: str) -> list[str]:
        """The documented rule ids a rule of this profile stands in for."""
        return [doc for doc, dev in self.replaced.items() if dev == rule_id]


PROFILES: dict[str, Profile] = {DEFAULT: Profile(DEFAULT, "the documented constraints "
                                                          "(seeds/, fia-semantics.md)")}


def register(profile: Profile) -> Profile:
    """Add a profile; its own rules must cover every id it names."""
    if profile.name in PROFILES:
        raise RuntimeError(f"rule profile {profile.name!r} registered twice")
    named = set(profile.replaced.values()) | set(profile.added) \
        | ({profile.accept_when} if profile.accept_when else set())
    missing = named - set(profile.own)
    unknown = (set(profile.removed) | set(profile.replaced)) - set(RULES)
    if missing or unknown:
        raise RuntimeError(f"profile {profile.name!r}: own rules missing {sorted(missing)}, "
                           f"unknown documented rules {sorted(unknown)}")
    PROFILES[profile.name] = profile
    return profile


def get(name: str) -> Profile:
    """The profile called `name`; ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in PROFILES:
        raise ValueError(f"unknown rule profile rules={name!r}, expected one of "
                         f"{sorted(PROFILES)}")
    return PROFILES[name]


def names() -> list[str]:
    return list(PROFILES)


def all_rules() -> dict[str, Rule]:
    """Every rule of every profile by id (documented first)."""
    out = dict(RULES)
    for p in PROFILES.values():
        out.update(p.own)
    return out
