"""The dashboard's data model: pass rates per policy and feature cell, worst cases, trends.

Every figure and table of the dashboard is built from these functions, so
what the page shows can be tested on DataFrames without parsing HTML.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fia_fuzz.diff import DEFAULT_POLICY, POLICIES

VERDICTS = ("pass", "warn", "fail")
PROBLEM_OUTCOMES = ("error", "crashed", "timeout")
WORST_N = 20


@dataclass(frozen=True)
class Heatmap:
    """One pass-rate heatmap: feature `rows` x feature `cols`."""

    rows: str
    cols: str
    title: str


HEATMAPS = (
    Heatmap("layout", "q_dtype", "layout x query dtype"),
    Heatmap("quant", "branch", "quant mode x branch"),
    Heatmap("sparse_mode", "padding", "sparse mode x padding"),
    Heatmap("kv_source", "branch", "KV source x branch"),
    Heatmap("mask", "pse", "atten_mask dtype x pse_shift"),
    Heatmap("actual_q", "actual_kv", "actual_seq_lengths x actual_seq_lengths_kv"),
)


def verdict_col(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} is not one of {sorted(POLICIES)}")
    return f"verdict_{policy}"


def _label(values: pd.Series) -> pd.Series:
    return values.map(lambda v: "-" if v is None or (isinstance(v, float) and np.isnan(v))
                      else str(v))


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Add the derived feature columns the heatmaps group by (quant, padding, kv_source)."""
    df = df.copy()

    def col(name: str, default: object) -> pd.Series:
        return df[name] if name in df else pd.Series(default, index=df.index)

    anti = _label(col("antiquant", "none"))
    full = col("full_quant", False).fillna(False).astype(bool)
    post = col("post_quant", False).fillna(False).astype(bool)
    quant = np.where(full, "full int8", np.where(anti.isin(["none", "-"]), "none",
                                                 "antiquant " + anti))
    df["quant"] = pd.Series(quant, index=df.index) + np.where(post, " +post", "")
    qp = col("q_padding", False).fillna(False).astype(bool)
    kp = col("kv_padding", False).fillna(False).astype(bool)
    df["padding"] = np.select([qp & kp, qp, kp], ["q+kv", "q", "kv"], "none")
    paged = col("paged", False).fillna(False).astype(bool)
    kv_list = col("kv_list", False).fillna(False).astype(bool)
    prefix = col("prefix", False).fillna(False).astype(bool)
    src = np.select([paged, kv_list], ["paged", "tensor list"], "contiguous")
    df["kv_source"] = pd.Series(src, index=df.index) + np.where(prefix, " +prefix", "")
    if "out_dtype" not in df:
        df["out_dtype"] = col("q_dtype", None)
    return df


def judged(df: pd.DataFrame, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Rows that carry a verdict under `policy` (outcome ok)."""
    col = verdict_col(policy)
    return df[df[col].isin(VERDICTS)] if col in df else df.iloc[0:0]


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """Per policy: judged cases, pass/warn/fail counts, the pass rate, and the pass
    rate the same-dtype baseline itself gets under that policy (its calibration)."""
    rows = []
    for name in POLICIES:
        j = judged(df, name)
        counts = j[verdict_col(name)].value_counts() if not j.empty else pd.Series(dtype=int)
        n = len(j)
        base_col = f"baseline_verdict_{name}"
        base = j[base_col].dropna() if base_col in j else pd.Series(dtype=object)
        rows.append({"policy": name, "default": name == DEFAULT_POLICY, "judged": n,
                     **{v: int(counts.get(v, 0)) for v in VERDICTS},
                     "pass_rate": counts.get("pass", 0) / n if n else np.nan,
                     "baseline_pass_rate": base.eq("pass").mean() if len(base) else np.nan})
    return pd.DataFrame(rows)


def functional_failures(df: pd.DataFrame) -> pd.DataFrame:
    """Judged rows with a functional failure (shape, one-sided NaN/Inf, inexact invalid row)."""
    if "functional" not in df:
        return df.iloc[0:0]
    return df[df["functional"].fillna("").astype(str) != ""]


def outcomes(df: pd.DataFrame) -> pd.Series:
    """Cases per outcome (ok, unsupported, error, crashed, timeout)."""
    return df["outcome"].value_counts() if "outcome" in df else pd.Series(dtype=int)


def cell_table(df: pd.DataFrame, rows: str, cols: str, policy: str = DEFAULT_POLICY
               ) -> pd.DataFrame:
    """Long form per (rows, cols) cell: n, pass/warn/fail, pass rate, worst case, marked.

    A cell is marked when anything in it is not a pass.
    """
    j = judged(prepare(df) if rows not in df or cols not in df else df, policy)
    columns = [rows, cols, "n", *VERDICTS, "pass_rate", "worst_case", "marked"]
    if j.empty or rows not in j or cols not in j:
        return pd.DataFrame(columns=columns)
    j = j.assign(_r=_label(j[rows]), _c=_label(j[cols]))
    ranked = rank_worst(j, policy)
    out = []
    for (r, c), cell in ranked.groupby(["_r", "_c"], sort=True):
        counts = cell[verdict_col(policy)].value_counts()
        n = len(cell)
        rate = counts.get("pass", 0) / n
        out.append({rows: r, cols: c, "n": n, **{v: int(counts.get(v, 0)) for v in VERDICTS},
                    "pass_rate": rate, "worst_case": cell.iloc[0].get("case_id", ""),
                    "marked": bool(rate < 1.0)})
    return pd.DataFrame(out, columns=columns)


def pass_rate_table(df: pd.DataFrame, rows: str, cols: str, policy: str = DEFAULT_POLICY
                    ) -> pd.DataFrame:
    """Pass rate as a rows x cols matrix (NaN where no case was judged)."""
    t = cell_table(df, rows, cols, policy)
    if t.empty:
        return pd.DataFrame()
    return t.pivot(index=rows, columns=cols, values="pass_rate")


def marked_cells(df: pd.DataFrame, rows: str, cols: str, policy: str = DEFAULT_POLICY
                 ) -> set[tuple[str, str]]:
    """The (row, col) labels of cells with anything but passes."""
    t = cell_table(df, rows, cols, policy)
    return {(r, c) for r, c, m in zip(t[rows], t[cols], t["marked"], strict=True) if m}


def severity(df: pd.DataFrame, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Sort keys of judged rows: verdict, functional failure, error vs the baseline.

    The error score is the attention_out max abs error in multiples of the
    same-dtype baseline's (`out_fa_ratio`), so fp16 and bf16 rank alike; the
    lse ratio counts when it is worse.
    """
    rank = df[verdict_col(policy)].map({"pass": 0, "warn": 1, "fail": 2}).fillna(-1)
    functional = (df["functional"].fillna("").astype(str) != "") if "functional" in df else False
    score = pd.Series(0.0, index=df.index)
    for col in ("out_fa_ratio", "lse_fa_ratio"):
        if col in df:
            score = np.fmax(score, pd.to_numeric(df[col], errors="coerce").fillna(0.0))
    if "out_max_abs" in df:
        score = score.where(score > 0, pd.to_numeric(df["out_max_abs"], errors="coerce"))
    return pd.DataFrame({"_rank": rank, "_functional": functional, "_score": score.fillna(0.0)},
                        index=df.index)


def rank_worst(df: pd.DataFrame, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Judged rows, worst first (fail before warn before pass, functional first)."""
    if df.empty:
        return df
    keys = severity(df, policy)
    order = keys.sort_values(["_rank", "_functional", "_score"], ascending=False,
                             kind="stable").index
    return df.loc[order]


def worst_cases(df: pd.DataFrame, n: int = WORST_N, policy: str = DEFAULT_POLICY
                ) -> pd.DataFrame:
    """The n worst judged cases under `policy`."""
    return rank_worst(judged(df, policy), policy).head(n)


def problems(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose runner raised, crashed or timed out (no verdict, a result all the same)."""
    if "outcome" not in df:
        return df.iloc[0:0]
    return df[df["outcome"].isin(PROBLEM_OUTCOMES)]


def run_order(df: pd.DataFrame) -> list[str]:
    """Run ids by their first timestamp."""
    if "run_id" not in df:
        return []
    if "timestamp" in df:
        first = df.groupby("run_id")["timestamp"].min().sort_values()
        return [str(r) for r in first.index]
    return sorted(str(r) for r in df["run_id"].dropna().unique())


def trend(df: pd.DataFrame) -> pd.DataFrame:
    """Pass rate per policy per run, in run order (one row per run)."""
    out = []
    for run in run_order(df):
        part = df[df["run_id"].astype(str) == run]
        h = headline(part).set_index("policy")["pass_rate"]
        out.append({"run_id": run, "cases": len(part), **h.to_dict()})
    return pd.DataFrame(out)


def error_samples(df: pd.DataFrame, metric: str = "out_mere") -> dict[str, np.ndarray]:
    """Values of `metric` per output dtype over judged rows, for the ECDFs."""
    if metric not in df:
        return {}
    j = prepare(df) if "out_dtype" not in df else df
    j = j[j["outcome"].eq("ok")] if "outcome" in j else j
    out = {}
    for dtype, part in j.groupby(_label(j["out_dtype"])):
        vals = pd.to_numeric(part[metric], errors="coerce").dropna().to_numpy()
        if vals.size:
            out[str(dtype)] = np.sort(vals)
    return out


def runners(df: pd.DataFrame) -> list[str]:
    return sorted(str(r) for r in df["runner"].dropna().unique()) if "runner" in df else []


def by_runner(df: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """('all', df) then one (runner, rows) per runner when there is more than one."""
    yield "all runners", df
    names = runners(df)
    if len(names) > 1:
        for name in names:
            yield name, df[df["runner"].astype(str) == name]
