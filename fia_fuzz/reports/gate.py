"""`--fail-on`: which findings of a result set make `campaign` and `report` exit non-zero,
so a nightly CI job fails on them without parsing JUnit."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from fia_fuzz.diff import DEFAULT_POLICY
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.reports.aggregate import verdict_col
from fia_fuzz.reports.signatures import failing
from fia_fuzz.reports.triage import NEW, REGRESSED, Triage

#: The exit status of a run that found what `--fail-on` names.
FOUND = 1
#: What `--fail-on` may name: verdicts under the report's policy, run outcomes, and
#: failure kinds (a failing row's `failure_kind`, e.g. nonfinite).
VERDICT_TOKENS = ("fail", "warn", "inconclusive")
OUTCOME_TOKENS = {"crash": "crashed", "crashed": "crashed", "timeout": "timeout",
                  "oom": "oom", "error": "error", "harness": "harness"}
KIND_TOKENS = ("nonfinite", "state")
#: Failing rows by their signature's mark against the triage file (`--triage`; without
#: one every failure is new): `new` gates only on what nobody has triaged.
TRIAGE_TOKENS = (NEW, REGRESSED)
TOKENS = (*VERDICT_TOKENS, *OUTCOME_TOKENS, *KIND_TOKENS, *TRIAGE_TOKENS)


def parse_fail_on(values: Iterable[str]) -> tuple[str, ...]:
    """The tokens of repeatable, comma-separated `--fail-on` values; ValueError naming an
    unknown one and the known ones."""
    out: list[str] = []
    for value in values:
        for token in (t.strip() for t in value.split(",")):
            if token not in TOKENS:
                raise ValueError(f"--fail-on {token!r} is not one of {list(TOKENS)}")
            if token not in out:
                out.append(token)
    return tuple(out)


def marked(df: pd.DataFrame, triage: Triage, mark: str) -> dict[str, int]:
    """Failing rows per signature whose mark against `triage` is `mark`."""
    f = failing(df)
    sigs = f["signature"].astype(str) if not f.empty else pd.Series(dtype=str)
    hits = sigs[sigs.map(triage.mark) == mark]
    return {str(k): int(v) for k, v in hits.value_counts().sort_index().items()}


def found(df: pd.DataFrame, tokens: Iterable[str], policy: str = DEFAULT_POLICY,
          triage: Triage | None = None) -> dict[str, int]:
    """Rows matching each token (only tokens with at least one row)."""
    counts: dict[str, int] = {}
    if df.empty:
        return counts
    col = verdict_col(policy)
    verdicts = df[col] if col in df else df.get("verdict", pd.Series(dtype=object))
    outcomes = df.get("outcome", pd.Series(dtype=object))
    for token in tokens:
        if token in VERDICT_TOKENS:
            n = int((verdicts == token).sum())
        elif token in TRIAGE_TOKENS:
            n = sum(marked(df, triage or Triage(), token).values())
        elif token in OUTCOME_TOKENS:
            n = int((outcomes == OUTCOME_TOKENS[token]).sum())
        else:
            kinds = (str(row.get("failure_kind") or failure_kind(row) or "")
                     for row in df.to_dict("records"))
            # a kind names its class after a colon (nonfinite:nan_to_finite)
            n = sum(1 for k in kinds if k == token or k.startswith(token + ":"))
        if n:
            counts[token] = n
    return counts


def verdict_line(counts: dict[str, int], named: dict[str, list[str]] | None = None) -> str:
    """One line for stderr: what --fail-on found (`named`: the signatures behind a triage
    token, listed after its count)."""
    named = named or {}
    return "--fail-on: found " + ", ".join(
        f"{n} {t}" + (f" ({len(named[t])} signature(s): {' | '.join(named[t])})"
                      if named.get(t) else "") for t, n in counts.items())
