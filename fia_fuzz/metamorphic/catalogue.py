"""Relations as data: a name, a citation, and a map from a legal call to equivalent ones.

A relation's `build(case, call)` takes a case and its materialised canonical
call and returns partners: calls carrying the SAME data rearranged (a Case's
tensors come from (seed, tensor name), so a partner cannot be a fresh Case),
each with the expected equality and the maps that make the two outputs
comparable. A relation that does not apply to a case raises `NotApplicable`
with the reason; partners are checked with `fia_fuzz.rules.validate` by the
caller, never trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.values import raw_bits
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.validate import validate

Outputs = tuple[np.ndarray, np.ndarray]
#: Canonical keyword arguments with NumPy arrays, as `Case.call()` returns them.
Call = dict[str, Any]


class NotApplicable(Exception):
    """The relation has no equivalent partner for this case; the message says why."""


def _same(outputs: Outputs) -> Outputs:
    return outputs


@dataclass
class Partner:
    """One equivalent call and how to compare its outputs with the source's.

    `source_out` / `partner_out` map each side's (attention_out, softmax_lse)
    into a common frame (e.g. undo a layout change, select one query row).
    `api` names an API variant of the runner to run the partner on ("v2",
    "graph"); None runs it on the same runner. `inputs_unchanged` asks the
    checker to verify that running the partner left its inputs intact.
    """

    variant: str
    call: Call
    tolerance: Tolerance
    partner_out: Callable[[Outputs], Outputs] = _same
    source_out: Callable[[Outputs], Outputs] = _same
    api: str | None = None
    inputs_unchanged: bool = False
    #: Signs a failing row as a finding of its own kind (e.g. a wrapper finding): the
    #: row's `signature`, given the case and the row.
    signature: Callable[[Case, dict[str, Any]], str] | None = None


@dataclass(frozen=True)
class Relation:
    name: str
    summary: str
    source: str
    build: Callable[[Case, Call], list[Partner]] = field(repr=False)
    #: Every expected equality the relation's partners use (for the catalogue note).
    tolerances: tuple[Tolerance, ...] = ()


RELATIONS: dict[str, Relation] = {}


def relation(name: str, summary: str, source: str, tolerances: tuple[Tolerance, ...]
             ) -> Callable[[Callable[[Case, Call], list[Partner]]],
                           Callable[[Case, Call], list[Partner]]]:
    """Register `build` as the relation `name`; registration order is catalogue order."""
    def deco(build: Callable[[Case, Call], list[Partner]]
             ) -> Callable[[Case, Call], list[Partner]]:
        if name in RELATIONS:
            raise ValueError(f"relation {name!r} registered twice")
        RELATIONS[name] = Relation(name, summary, source, build, tolerances)
        return build
    return deco


def describe_catalogue() -> str:
    """The catalogue as a Markdown table: relation, claim, expected equality and why, source."""
    lines = ["| relation | claim | expected equality | why | source |",
             "| --- | --- | --- | --- | --- |"]
    for rel in RELATIONS.values():
        for i, tol in enumerate(rel.tolerances):
            first = i == 0
            lines.append(f"| {rel.name if first else ''} | {rel.summary if first else ''} | "
                         f"{tol.describe()} | {tol.reason} | {rel.source if first else ''} |")
    return "\n".join(lines) + "\n"


# ---- shared reading of a call -------------------------------------------------

def view_of(call: Call) -> CallView:
    return CallView(call)


def require_absent(call: Call, names: tuple[str, ...], why: str) -> None:
    """NotApplicable when any of `names` is given (the relation does not model it)."""
    used = [n for n in names if call.get(n) is not None]
    if used:
        raise NotApplicable(f"{why}: {used}")


def permutation(seed: int, label: str, n: int) -> np.ndarray:
    """A deterministic permutation of range(n) from the case seed (no Generator methods)."""
    if n <= 1:
        return np.arange(n)
    keys = raw_bits(seed, f"metamorphic.{label}", 0, n)
    return np.argsort(keys, kind="stable")


def keep_legal(partners: list[Partner], rules: str = DEFAULT) -> list[Partner]:
    """The partners `validate` accepts under the source case's rule profile `rules`;
    NotApplicable naming the broken rules if none is."""
    legal, dropped = [], []
    for p in partners:
        broken = validate(**p.call, rules=rules)
        if broken:
            dropped.append(f"{p.variant}: {sorted({b.rule for b in broken})}")
        else:
            legal.append(p)
    if not legal:
        raise NotApplicable("no legal partner (" + "; ".join(dropped or ["none built"]) + ")")
    return legal
