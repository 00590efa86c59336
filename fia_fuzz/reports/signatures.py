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

COLUMNS = ["signature", "kind", "count", "cases", "runs", "first_seen", "last_seen",
           "first_run", "last_run", "minimal_case", "minimal_size", "minimal_shrunk", "repro"]


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


def signatures(df: pd.DataFrame) -> pd.DataFrame:
    """One row per signature (COLUMNS), most frequent first."""
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
                    "repro": part.at[best, "repro"] if "repro" in part else ""})
    return pd.DataFrame(out, columns=COLUMNS).sort_values(
        ["count", "signature"], ascending=[False, True], kind="stable").reset_index(drop=True)
