"""The registry of the op's arguments: one `Arg` per optional argument or argument family.

An `Arg` is everything the framework knows about one argument outside its
rules and its arithmetic: the keyword(s) it adds to the signature (`Param`:
name, kind, default), the documented forms it takes (a coverage axis each,
with what a form implies for the draw), how a case is classified on it (its
feature axes and the function computing them), which strategy families may
carry it and its draw, and where its rules, breakers, golden and runner code
live. Each module of `fia_fuzz/op/args/` registers one with `register` at
import; `fia_fuzz.op.args.MODULES` is their order (the torch_npu signature's
order of first appearance, which `op/params.py` derives the signature from).
The tables other layers used to restate (`op/params.py`'s argument tuples,
`op/forms.py` FORM_AXES and its implications, the feature axes of
`strategies/axes.py`, the family scopes and `EMPTY_OK` of
`strategies/families.py`) are derived from the registry.

This module imports nothing of ours, so every module of the op layer can ask
the registry.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The kinds of keyword the op takes.
TENSOR, VALUE, ATTR = "tensor", "value", "attr"

#: Roles a parameter may play, which other layers ask for instead of naming it:
#: - "rope": extra query/key head dims that join D in the scores (rope split off Q and K);
#: - "query_seq": shares query's leading axes (S, or T packed), so a change of query's S
#:   changes it too;
#: - "per_head": a per-query-head vector (N,);
#: - "bias": an additive term of the scores in the query dtype (pse).
ROLES = frozenset({"rope", "query_seq", "per_head", "bias"})


@dataclass(frozen=True)
class Param:
    """One keyword of the op's signature.

    `alone(ctx)`: a value legal on its own for this keyword given `ctx` (the
    sizes of a case: b, n, s1, s2, d, q (query spec), k0 (first key spec), fdt
    (the float dtype of scales)), which the breakers' `add` mutation inserts;
    `partner`: the keyword added and resized with it (value_shared_prefix for
    key_shared_prefix).
    """

    name: str
    kind: str
    default: Any = None
    roles: frozenset[str] = frozenset()
    alone: Callable[[Any], Any] | None = None
    partner: str | None = None


@dataclass
class Arg:
    """One optional argument (or argument family) of the op: see the module docstring.

    - `params`: its keywords, in signature order;
    - `forms`: form axis -> its documented values, "none" (absent) first; `implies`:
      form axis -> the features a form value implies (a function of the value), so a
      form filter steers the draw's earlier decisions; `form_of(case, view, branch)`: the
      form each axis takes in a case ("other" where none fits);
    - `features`: feature axis -> its values (the simplest first, the shrink order);
      `classify(case, view)`: the value of each for a case (`case.features()`);
    - `families`: the strategy families that may carry it (None: every family);
      `absent`: the feature values every family outside `families` is held to (its
      scope); `scope`: family -> feature -> values, where a family reaches only some
      values; `empty`: the feature values an empty query or KV case carries (none of
      the argument);
    - `draw(dr, allowed=True)`: the argument's draw (`dr`: the strategies' Draft,
      duck-typed): each family of `families` calls it where its optional inputs are
      drawn, with allowed=False where the path cannot carry it; `own_step`: the
      families call `draw` at a step of their own instead (its sizes depend on
      earlier decisions);
    - `special(dr)`: the draw of its documented special values (a default spelled out
      explicitly, a value that means another argument's: `Draft.pick_special`), which every
      family's last step (`strategies/tail.py`) calls once the case is drawn; `specials`:
      form axis -> the values only that draw takes, which only the nightly and stress
      profiles draw unfiltered (smoke's stream stays as it was);
    - `rules`: its rulebook modules (`fia_fuzz/rules/rulebook/<name>.py`, whose breakers
      are `fia_fuzz/strategies/illegal/<name>.py`); `golden`, `runners`: the modules
      holding its arithmetic in the golden and in the torch runners;
    - `notes`: numbered decisions of docs/rules.md ("Disagreements ...") about it.
    """

    name: str
    params: tuple[Param, ...]
    doc: str = ""
    forms: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    implies: dict[str, Callable[[str], dict[str, Any]]] = field(default_factory=dict)
    form_of: Callable[[Any, Any, str], dict[str, str]] | None = None
    features: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    classify: Callable[[Any, Any], dict[str, Any]] | None = None
    absent: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, dict[str, tuple[Any, ...]]] = field(default_factory=dict)
    families: tuple[str, ...] | None = None
    empty: dict[str, Any] = field(default_factory=dict)
    draw: Callable[..., Any] | None = None
    own_step: bool = False
    special: Callable[..., Any] | None = None
    specials: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    rules: tuple[str, ...] = ()
    golden: tuple[str, ...] = ()
    runners: tuple[str, ...] = ()
    notes: dict[int, str] = field(default_factory=dict)
    module: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


#: name -> Arg, in registration order (fia_fuzz.op.args.MODULES imports them in order).
ARGS: dict[str, Arg] = {}
#: Bumped by every change of ARGS, so derived tables (`Derived`) rebuild.
_VERSION = [0]


def register(arg: Arg) -> Arg:
    """Add `arg` to the registry (the calling module is recorded as its home)."""
    if arg.name in ARGS:
        raise ValueError(f"argument {arg.name!r} registered twice")
    taken = {p for a in ARGS.values() for p in a.names}
    if taken & set(arg.names):
        raise ValueError(f"{sorted(taken & set(arg.names))} already belong to another argument")
    for p in arg.params:
        if p.kind not in (TENSOR, VALUE, ATTR) or not p.roles <= ROLES:
            raise ValueError(f"{p.name}: kind {p.kind!r} or roles {set(p.roles)} unknown")
    caller = sys._getframe(1).f_globals
    if not arg.module:
        arg.module = caller.get("__name__", "")
    if not arg.doc:
        arg.doc = caller.get("__doc__") or ""
    ARGS[arg.name] = arg
    _VERSION[0] += 1
    return arg


def unregister(name: str) -> None:
    """Remove an argument (tests that register a toy one clean up with this)."""
    if ARGS.pop(name, None) is not None:
        _VERSION[0] += 1


def params() -> Iterator[Param]:
    """Every keyword of every registered argument, in registration order."""
    for arg in ARGS.values():
        yield from arg.params


def of_param(name: str) -> Arg | None:
    """The argument a keyword belongs to."""
    for arg in ARGS.values():
        if name in arg.names:
            return arg
    return None


def with_role(role: str) -> tuple[str, ...]:
    """The keywords playing `role` (ROLES)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    return tuple(p.name for p in params() if role in p.roles)


class _Derived:
    """A table derived from the registry, rebuilt when an argument is (un)registered.

    Module-level tables of other layers (`op/params.py` TENSOR_ARGS, `op/forms.py`
    FORM_AXES, ...) are derived ones, so an argument registered later (a test's toy)
    shows everywhere; `DerivedTuple` reads as a tuple, `DerivedDict` as a dict.
    """

    _kind: type = tuple

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._seen = -1
        self._value: Any = None
        self._keys: frozenset[Any] = frozenset()

    def _get(self) -> Any:
        if self._seen != _VERSION[0]:
            self._value = self._kind(self._build())
            self._keys = frozenset(self._value)
            self._seen = _VERSION[0]
        return self._value

    def __iter__(self) -> Iterator[Any]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __contains__(self, key: object) -> bool:
        self._get()
        try:
            return key in self._keys
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        return bool(self._get() == (other._get() if isinstance(other, _Derived) else other))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return repr(self._get())


class DerivedTuple(_Derived, Sequence[Any]):
    _kind = tuple

    def __getitem__(self, i: Any) -> Any:
        return self._get()[i]

    def __add__(self, other: Any) -> tuple[Any, ...]:
        return self._get() + tuple(other)

    def __radd__(self, other: Any) -> tuple[Any, ...]:
        return tuple(other) + self._get()


class DerivedDict(_Derived, Mapping[Any, Any]):
    _kind = dict

    def __getitem__(self, key: Any) -> Any:
        return self._get()[key]


def partners() -> tuple[tuple[str, str], ...]:
    """(keyword, the keyword added and resized with it), in signature order."""
    return tuple((p.name, p.partner) for p in params() if p.partner)


def keyword_of(feature: str) -> str:
    """The (first) keyword of the argument whose feature axis `feature` is."""
    for arg in ARGS.values():
        if feature in arg.features:
            return arg.params[0].name
    raise KeyError(f"no argument has the feature {feature!r}")
