"""Failure signatures across runs: one row per distinct failure, not one per failing case.

Each signature (`fia_fuzz.diff.signature`: cell, failure kind, error shape)
gets its count of failing rows, distinct cases and runs, when it was first and
last seen (over every run directory given), and its minimal case: a shrunk
case (origin=shrunk) when there is one, else the smallest failing case
(tensor elements), with its repro command.
"""

from __future__ import annotations

import time

import pandas as pd

from fia_fuzz.diff.signature import failure_kind, signature
from fia_fuzz.op.case import Case
from fia_fuzz.reports.aggregate import run_order
from fia_fuzz.reports.triage import Triage

COLUMNS = ["signature", "kind", "count", "cases", "runs", "first_seen", "last_seen",
           "first_run", "last_run", "minimal_case", "minimal_size", "minimal_shrunk", "repro",
           "triage", "ticket", "status"]
#: A replayed bundle's result (the row's `replay_result`).
STILL_FAILS, NOW_PASSES, NOW_UNSUPPORTED, NOT_RUN = (
    "still fails", "now passes", "now unsupported", "not run")
#: Nights a known failure's bundles must pass before it is reported possibly fixed.
FIXED_AFTER = 3


def _elements(case_json: object) -> float:
    try:
        return float(Case.from_json(str(case_json)).elements())
    except Exception:  # a row without a readable case ranks last
        return float("inf")


def failing(df: pd.DataFrame) -> pd.DataFrame:
    """The failing rows of `df` with their `signature` (the recorded one, else computed)."""
    if df.empty:
        return df.assign(signature=pd.Series(dtype=str))
    records = df.to_dict("records")
    kinds = [failure_kind(r) for r in records]
    sigs = [(str(r.get("signature")) if r.get("signature") else signature(r)) if k else ""
            for r, k in zip(records, kinds, strict=True)]
    out = df.assign(signature=sigs, failure=[k or "" for k in kinds])
    return out[out["failure"] != ""]


def stamp(t: object) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(t)))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"


def signatures(df: pd.DataFrame, triage: Triage | None = None) -> pd.DataFrame:
    """One row per signature (COLUMNS), most frequent first, marked against `triage`."""
    triage = triage or Triage()
    f = failing(df)
    if f.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    for sig, part in f.groupby("signature", sort=False):
        ts = pd.to_numeric(part.get("timestamp"), errors="coerce") if "timestamp" in part \
            else pd.Series(float("nan"), index=part.index)
        shrunk = (part["origin"] == "shrunk") if "origin" in part else \
            pd.Series(False, index=part.index)
        size = part["case_json"].map(_elements) if "case_json" in part else \
            pd.Series(float("inf"), index=part.index)
        best = pd.DataFrame({"shrunk": ~shrunk, "size": size}).sort_values(
            ["shrunk", "size"], kind="stable").index[0]
        first, last = (ts.idxmin(), ts.idxmax()) if ts.notna().any() else (best, best)
        runs = part["run_id"].astype(str) if "run_id" in part else pd.Series("-", part.index)
        out.append({"signature": sig, "kind": part["failure"].iloc[0], "count": len(part),
                    "cases": part["case_id"].nunique() if "case_id" in part else len(part),
                    "runs": runs.nunique(), "first_seen": stamp(ts.get(first)),
                    "last_seen": stamp(ts.get(last)), "first_run": runs.get(first),
                    "last_run": runs.get(last), "minimal_case": part.at[best, "case_id"]
                    if "case_id" in part else "-", "minimal_size": size.at[best],
                    "minimal_shrunk": bool(shrunk.at[best]),
                    "repro": part.at[best, "repro"] if "repro" in part else "",
                    "triage": triage.mark(str(sig)), **_filed(triage, str(sig))})
    return pd.DataFrame(out, columns=COLUMNS).sort_values(
        ["count", "signature"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _filed(triage: Triage, sig: str) -> dict[str, str]:
    e = triage.entry(sig)
    return {"ticket": e.ticket if e else "", "status": e.status if e else ""}


def replays(df: pd.DataFrame) -> pd.DataFrame:
    """The replay rows of `df` that carry a result (rows of runs before replays had results
    have none and are left out)."""
    if df.empty or "replay_result" not in df:
        return df.iloc[0:0]
    return df[df["replay_result"].fillna("").astype(str) != ""]


def replay_signature(row: dict[str, object]) -> str:
    return str(row.get("replay_signature") or "")


def _night_state(df: pd.DataFrame, sigs: pd.Series, sig: str, night: str) -> str | None:
    """'pass' (every replay of `sig` passed, nothing failed as `sig`), 'fail', or None (the
    night neither replayed nor found it)."""
    night_rows = df["run_id"].astype(str) == night
    failed = bool(((sigs == sig) & night_rows).any())
    rep = replays(df[night_rows])
    rep = rep[rep["replay_signature"].fillna("").astype(str) == sig] \
        if "replay_signature" in rep else rep.iloc[0:0]
    if failed:
        return "fail"
    if rep.empty:
        return None
    return "pass" if (rep["replay_result"] == NOW_PASSES).all() else "fail"


def possibly_fixed(df: pd.DataFrame, nights: int = FIXED_AFTER) -> dict[str, str]:
    """Signature -> the repro command of a passing replay, for each signature whose bundles
    passed on each of the last `nights` nights (runs) that replayed or found it."""
    df = df.reset_index(drop=True)
    rep = replays(df)
    if rep.empty or "run_id" not in df or "replay_signature" not in rep:
        return {}
    f = failing(df)
    sigs = pd.Series("", index=df.index)
    sigs.loc[f.index] = f["signature"].astype(str)
    order = run_order(df)
    out: dict[str, str] = {}
    for sig in sorted(set(rep["replay_signature"].dropna().astype(str)) - {""}):
        states = [s for s in (_night_state(df, sigs, sig, n) for n in order) if s is not None]
        if len(states) >= nights and all(s == "pass" for s in states[-nights:]):
            passing = rep[(rep["replay_signature"].astype(str) == sig)
                          & (rep["replay_result"] == NOW_PASSES)]
            out[sig] = str(passing["repro"].iloc[-1]) if "repro" in passing else ""
    return out


def night_counts(df: pd.DataFrame, triage: Triage | None = None,
                 nights: int = FIXED_AFTER) -> pd.DataFrame:
    """Per night (run, in run order): distinct failing signatures that are new, known and
    regressed against `triage`, and those possibly fixed as of that night."""
    triage = triage or Triage()
    f = failing(df)
    out = []
    for i, night in enumerate(run_order(df)):
        part = f[f["run_id"].astype(str) == night] if "run_id" in f else f.iloc[0:0]
        marks = [triage.mark(s) for s in set(part["signature"].astype(str))]
        upto = df[df["run_id"].astype(str).isin(run_order(df)[:i + 1])]
        out.append({"run_id": night, "new": marks.count("new"), "known": marks.count("known"),
                    "regressed": marks.count("regressed"),
                    "possibly_fixed": len(possibly_fixed(upto, nights))})
    return pd.DataFrame(out, columns=["run_id", "new", "known", "regressed", "possibly_fixed"])
