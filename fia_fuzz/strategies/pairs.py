"""Pairs of feature values, and the stored set of which pairs a legal case can carry.

Real kernel bugs sit where two or three features meet (a route with one mask mode,
a cache form with one group size), so coverage counts pairs of values of every two
paired axes, and triples route x axis x axis. The paired axes are AXES (core axes,
route and route_edge, each argument's features) less the argument-form axes: a form
is how a call spells an argument (absent, an explicit default, a shape form), which
the host normalises before any kernel branches on it; an axis added to AXES is paired
with no change here.

Which pairs are feasible is computed once per rule profile (strategies/pair_feasible.py,
`fia-fuzz coverage --pairs --refresh-feasible`) and stored in `feasible/<rules>.json.gz`
with the fingerprint of the axes it was computed over; `stale()` says when it no
longer matches them.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import itertools
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fia_fuzz.op import args
from fia_fuzz.strategies.axes import AXES

#: Where the stored feasible sets live, one file per rule profile.
FEASIBLE_DIR = Path(__file__).parent / "feasible"
#: The axis whose values head the counted triples (route x axis x axis).
TRIPLE_HEAD = "route"
#: Axes left out of the triples' tails: route_edge names the route itself.
TRIPLE_SKIP = ("route", "route_edge")
#: Pair status codes in the stored set.
FEASIBLE, UNKNOWN, INFEASIBLE = 0, 1, 2


def paired_axes() -> dict[str, tuple[Any, ...]]:
    """Every axis of AXES but the argument-form axes, in AXES order."""
    forms = args.form_axes()
    return {a: vals for a, vals in AXES.items() if a not in forms}


@dataclass(frozen=True)
class Space:
    """The paired axes' values numbered: value i is (axis, value); pair (i, j), i < j, of
    two different axes has the id `pair_id`; `fingerprint` hashes the numbering."""

    values: tuple[tuple[str, Any], ...]
    axis_of: tuple[int, ...]
    index: Mapping[tuple[str, str], int]

    @property
    def fingerprint(self) -> str:
        text = json.dumps([[a, repr(v)] for a, v in self.values])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def n(self) -> int:
        return len(self.values)

    def pair_id(self, i: int, j: int) -> int:
        return i * self.n + j if i < j else j * self.n + i

    def split(self, pid: int) -> tuple[int, int]:
        return divmod(pid, self.n)

    def all_pairs(self) -> Iterable[int]:
        for i, j in itertools.combinations(range(self.n), 2):
            if self.axis_of[i] != self.axis_of[j]:
                yield i * self.n + j

    def indices(self, feats: Mapping[str, Any]) -> list[int]:
        """The value numbers a case's features take (values off the axes are skipped)."""
        out = []
        for a in self.axes:
            i = self.index.get((a, repr(feats.get(a))))
            if i is not None:
                out.append(i)
        return out

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a for a, _ in self.values))

    def name(self, i: int) -> str:
        a, v = self.values[i]
        return f"{a}={v}"

    def pins(self, ids: Iterable[int]) -> dict[str, Any]:
        return {self.values[i][0]: self.values[i][1] for i in ids}


@lru_cache(maxsize=1)
def space() -> Space:
    """The numbering of the paired axes' values as AXES now holds them."""
    values = tuple((a, v) for a, vals in paired_axes().items() for v in vals)
    axes = list(dict.fromkeys(a for a, _ in values))
    return Space(values=values, axis_of=tuple(axes.index(a) for a, _ in values),
                 index={(a, repr(v)): i for i, (a, v) in enumerate(values)})


def case_pairs(sp: Space, ids: list[int]) -> Iterable[int]:
    """The pair ids of one case's value numbers."""
    for x, y in itertools.combinations(sorted(ids), 2):
        yield x * sp.n + y


def case_triples(sp: Space, ids: list[int]) -> Iterable[tuple[int, int]]:
    """(route value, pair id of two other axes) of one case's value numbers."""
    head = [i for i in ids if sp.values[i][0] == TRIPLE_HEAD]
    if not head:
        return
    tail = sorted(i for i in ids if sp.values[i][0] not in TRIPLE_SKIP)
    for x, y in itertools.combinations(tail, 2):
        yield head[0], x * sp.n + y


@dataclass
class Feasible:
    """One rule profile's pairs: status per pair id (FEASIBLE, UNKNOWN, INFEASIBLE), the
    reason per pair (the constraint for an infeasible one, the commonest failure of the
    pinned draws for an unknown one), the triples witnessed by the reference draws, and
    the pair aims (strategies/pair_aims.py) as pin sets."""

    rules: str
    fingerprint: str
    status: dict[int, int] = field(default_factory=dict)
    reason: dict[int, str] = field(default_factory=dict)
    triples: set[tuple[int, int]] = field(default_factory=set)
    aims: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def pairs(self, code: int) -> list[int]:
        return sorted(p for p, s in self.status.items() if s == code)


def path(rules: str) -> Path:
    return FEASIBLE_DIR / f"{rules}.json.gz"


def _pack(ints: list[int]) -> str:
    """Sorted ints as base64 zlib of their varint deltas: the stored sets stay small."""
    out = bytearray()
    prev = 0
    for x in sorted(ints):
        d, prev = x - prev, x
        while True:
            b = d & 0x7F
            d >>= 7
            out.append(b | (0x80 if d else 0))
            if not d:
                break
    return base64.b64encode(zlib.compress(bytes(out), 9)).decode()


def _unpack(text: str) -> list[int]:
    data = zlib.decompress(base64.b64decode(text))
    out, cur, shift, acc = [], 0, 0, 0
    for b in data:
        acc |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            cur += acc
            out.append(cur)
            acc = shift = 0
    return out


def save(fs: Feasible) -> Path:
    sp = space()
    reasons = sorted(set(fs.reason.values()))
    by_reason = {r: k for k, r in enumerate(reasons)}
    doc = {
        "rules": fs.rules, "fingerprint": fs.fingerprint, "notes": fs.notes,
        "values": [[a, repr(v)] for a, v in sp.values],
        "feasible": _pack(fs.pairs(FEASIBLE)),
        "infeasible": _pack(fs.pairs(INFEASIBLE)),
        "unknown": _pack(fs.pairs(UNKNOWN)),
        "reasons": reasons,
        "reason_of": [by_reason[fs.reason[p]] for p in
                      sorted(p for p in fs.status if p in fs.reason)],
        "reason_pairs": _pack([p for p in fs.status if p in fs.reason]),
        "triples": _pack([h * sp.n * sp.n + p for h, p in fs.triples]),
        "aims": [[[a, v] for a, v in aim.items()] for aim in fs.aims],
    }
    FEASIBLE_DIR.mkdir(exist_ok=True)
    p = path(fs.rules)
    # mtime 0: the same set gives the same bytes
    p.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 9, mtime=0))
    return p


@lru_cache(maxsize=4)
def load(rules: str) -> Feasible | None:
    """The stored set of `rules`, None when there is none (read once per process)."""
    p = path(rules)
    if not p.exists():
        return None
    doc = json.loads(gzip.decompress(p.read_bytes()))
    n = len(doc["values"])
    fs = Feasible(rules=doc["rules"], fingerprint=doc["fingerprint"], notes=doc["notes"])
    for code, key in ((FEASIBLE, "feasible"), (INFEASIBLE, "infeasible"), (UNKNOWN, "unknown")):
        for pid in _unpack(doc[key]):
            fs.status[pid] = code
    for pid, k in zip(_unpack(doc["reason_pairs"]), doc["reason_of"], strict=True):
        fs.reason[pid] = doc["reasons"][k]
    fs.triples = {divmod(t, n * n) for t in _unpack(doc["triples"])}
    fs.aims = [{a: v for a, v in aim} for aim in doc["aims"]]
    return fs


def stale(rules: str) -> str | None:
    """Why the stored set of `rules` no longer fits the axes (None when it does)."""
    fs = load(rules)
    if fs is None:
        return f"no stored feasible set for rules {rules} ({path(rules)})"
    if fs.fingerprint != space().fingerprint:
        return (f"the feasible set of rules {rules} was computed over other axes or values "
                f"(fingerprint {fs.fingerprint}, axes now {space().fingerprint})")
    return None
