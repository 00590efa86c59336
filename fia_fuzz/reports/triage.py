"""The triage file: failure signatures someone already looked at, and where they are filed.

A small TOML file the user keeps in their own repository and passes with
`--triage FILE` to `campaign` and `report`. Each `[[known]]` table names a
signature pattern (a signature as `diff/signature.py` makes it, matched exactly,
or a glob: `*`, `?`, `[...]`), a ticket (URL or id), a status (`open`, `wontfix`:
documented behaviour, or `fixed-in VERSION`) and a note:

    [[known]]
    signature = "BNSD/float16/prefill nonfinite:nan_to_finite: out"
    ticket = "https://github.com/pytorch/pytorch/issues/141128"
    status = "open"
    note = "flash returns 0 for a NaN query row when S2 < 16"

A failing signature is `new` (no entry matches), `known` (an open or wontfix
entry matches) or `regressed` (an entry says it was fixed, and it fails again).
The first entry that matches wins, an exact pattern before any glob.
`fia-fuzz triage add` writes entries, so nobody hand-writes a signature.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (Python 3.10: the same parser as a package)
    import tomli as tomllib

#: A failing signature's mark against the triage file.
NEW, KNOWN, REGRESSED = "new", "known", "regressed"
MARKS = (NEW, KNOWN, REGRESSED)
#: Statuses an entry may have (`fixed-in` takes the version: `fixed-in 2.6.0`).
OPEN, WONTFIX, FIXED_IN = "open", "wontfix", "fixed-in"
STATUS_FORMS = (OPEN, WONTFIX, f"{FIXED_IN} VERSION")
#: The keys of an entry, the first two required.
KEYS = ("signature", "ticket", "status", "note")
_FIXED = re.compile(rf"{FIXED_IN} (\S+)")
_HEADER = "# fia-fuzz triage file: known failure signatures (fia-fuzz triage add ...)\n"


class TriageError(ValueError):
    """An unreadable triage file or a bad entry (the CLI: exit status 2, one line)."""


@dataclass(frozen=True)
class Entry:
    """One known signature pattern and where it is filed."""

    signature: str
    ticket: str
    status: str = OPEN
    note: str = ""

    @property
    def fixed(self) -> bool:
        return self.status.startswith(FIXED_IN)

    def matches(self, sig: str) -> bool:
        return sig == self.signature or fnmatchcase(sig, self.signature)


def check_status(status: str, where: str = "--status") -> str:
    """`status` if it is one of STATUS_FORMS, else TriageError naming the forms."""
    if status in (OPEN, WONTFIX) or _FIXED.fullmatch(status):
        return status
    raise TriageError(f"{where}: status {status!r} is not one of {', '.join(STATUS_FORMS)}")


@dataclass(frozen=True)
class Triage:
    """The entries of a triage file, in file order (none: every failure is new)."""

    entries: tuple[Entry, ...] = ()

    def entry(self, sig: str) -> Entry | None:
        """The entry for `sig`: an exact pattern first, else the first glob that matches."""
        exact = [e for e in self.entries if e.signature == sig]
        if exact:
            return exact[0]
        return next((e for e in self.entries if e.matches(sig)), None)

    def mark(self, sig: str) -> str:
        """new, known or regressed (see the module doc)."""
        e = self.entry(sig)
        if e is None:
            return NEW
        return REGRESSED if e.fixed else KNOWN


def _entry(table: object, where: str) -> Entry:
    if not isinstance(table, dict):
        raise TriageError(f"{where}: expected a table with keys {', '.join(KEYS)}")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise TriageError(f"{where}: unknown key(s) {unknown}; expected {', '.join(KEYS)}")
    for key in KEYS:
        if key in table and not isinstance(table[key], str):
            raise TriageError(f"{where}: {key} must be a string, not {table[key]!r}")
    for key in KEYS[:2]:
        if not str(table.get(key, "")).strip():
            raise TriageError(f"{where}: {key} is missing or empty")
    status = check_status(table.get("status", OPEN), f"{where}: status")
    return Entry(table["signature"], table["ticket"], status, table.get("note", ""))


def load_triage(path: str | Path | None) -> Triage:
    """The triage file at `path` (None: no file, every failure is new); TriageError with
    one line for an unreadable file, bad TOML or a bad entry."""
    if path is None:
        return Triage()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TriageError(f"--triage {p}: no such file (fia-fuzz triage add creates "
                          "one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TriageError(f"--triage {p}: cannot read it ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TriageError(f"--triage {p}: not TOML ({exc})") from None
    extra = sorted(set(data) - {"known"})
    if extra:
        raise TriageError(f"--triage {p}: unknown top-level key(s) {extra}; entries are "
                          "[[known]] tables")
    known = data.get("known", [])
    if not isinstance(known, list):
        raise TriageError(f"--triage {p}: 'known' must be an array of tables ([[known]])")
    return Triage(tuple(_entry(t, f"--triage {p}: entry {i + 1}")
                        for i, t in enumerate(known)))


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def entry_toml(e: Entry) -> str:
    """One `[[known]]` table as TOML text."""
    return "\n[[known]]\n" + "".join(f"{k} = {_toml_string(getattr(e, k))}\n" for k in KEYS)


def add_entry(path: str | Path, entry: Entry) -> str:
    """Add `entry` to the triage file at `path` (created when absent); an entry with the same
    signature pattern is replaced. Returns "added" or "updated".

    A new entry is appended, so the rest of the file (comments included) stays as written;
    replacing one rewrites the file from its entries (its comments are not kept).
    """
    check_status(entry.status)
    for key in KEYS[:2]:
        if not getattr(entry, key).strip():
            raise TriageError(f"triage add: {key} is empty")
    p = Path(path)
    current = load_triage(p) if p.exists() else Triage()
    if any(e.signature == entry.signature for e in current.entries):
        entries = [entry if e.signature == entry.signature else e for e in current.entries]
        p.write_text(_HEADER + "".join(entry_toml(e) for e in entries), encoding="utf-8")
        return "updated"
    text = p.read_text(encoding="utf-8") if p.exists() else _HEADER
    if text and not text.endswith("\n"):
        text += "\n"
    p.write_text(text + entry_toml(entry), encoding="utf-8")
    load_triage(p)  # what was written reads back
    return "added"
