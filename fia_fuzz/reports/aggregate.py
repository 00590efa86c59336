"""The dashboard's data model: pass rates per policy and feature cell, worst cases, trends.

Every figure and table of the dashboard is built from these functions, so
what the page shows can be tested on DataFrames without parsing HTML.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fia_fuzz.diff import DEFAULT_POLICY, POLICIES
from fia_fuzz.diff.policies import SEVERITY
from fia_fuzz.op.args import keyword_of
from fia_fuzz.op.params import ATTR_DEFAULTS

VERDICTS = ("pass", "inconclusive", "warn", "fail")
#: Verdicts that decide a case; "inconclusive" ones (the fp64 truth cannot decide: float
#: conditioning, diff/policies.py) stay out of every pass rate and are counted apart.
DECISIVE = ("pass", "warn", "fail")
#: Outcomes without a verdict that the dashboard lists: the backend raised, crashed, hung
#: or ran out of memory, or the tool could not run the case (`harness`).
PROBLEM_OUTCOMES = ("error", "crashed", "timeout", "oom", "harness")
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
    Heatmap("mask", "pse", f"{keyword_of('mask')} dtype x {keyword_of('pse')}"),
    Heatmap("actual_q", "actual_kv", "actual_seq_lengths x actual_seq_lengths_kv"),
    Heatmap("route", "branch", "Atlas A2 route (kernel.template) x branch"),
)


def verdict_col(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} is not one of {sorted(POLICIES)}")
    return f"verdict_{policy}"


def _label(values: pd.Series) -> pd.Series:
    return values.map(lambda v: "-" if v is None or (isinstance(v, float) and np.isnan(v))
                      else str(v))


#: The column of a row's call up to explicit defaults (`call_key`).
CALL = "call_key"


def _is_default(name: str, value: object) -> bool:
    """Whether attribute `name` is given as its default (a bool only for a bool default)."""
    if name not in ATTR_DEFAULTS:
        return False
    default = ATTR_DEFAULTS[name]
    return isinstance(value, bool) == isinstance(default, bool) and value == default


def call_key(case_json: object, fallback: object = "") -> str:
    """The call of a case up to explicitly passed defaults: its JSON with every attribute
    equal to its default (op/params.py ATTR_DEFAULTS) left out, hashed. Two calls that
    differ only in a default given explicitly (`scale` given as 1.0, `sparse_mode: 0`)
    are the same call and get the same key; a row without a readable case keeps
    `fallback` (its case id)."""
    try:
        doc = json.loads(str(case_json))
        params = doc["params"]
    except (TypeError, ValueError, KeyError):
        return str(fallback)
    if not isinstance(params, dict):
        return str(fallback)
    doc["params"] = {k: v for k, v in params.items() if not _is_default(k, v)}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def with_call_keys(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with its CALL column (computed once)."""
    if CALL in df or df.empty:
        return df
    ids = df["case_id"] if "case_id" in df else pd.Series(range(len(df)), index=df.index)
    cases = df["case_json"] if "case_json" in df else pd.Series(None, index=df.index)
    keys = pd.Series([call_key(c, i) for c, i in zip(cases, ids, strict=True)],
                     index=df.index, name=CALL)
    return pd.concat([df, keys], axis=1)


def dedupe_calls(df: pd.DataFrame, by: tuple[str, ...] = ("run_id", "runner")) -> pd.DataFrame:
    """One row per call up to explicit defaults (`call_key`) and each column of `by` that
    `df` has: its first row."""
    if df.empty:
        return df
    df = with_call_keys(df)
    return df.drop_duplicates(subset=[c for c in by if c in df] + [CALL], keep="first")


#: A number on its own (not inside a name such as int8 or S2).
_NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+(\.\d+)?")


def unsupported_reasons(df: pd.DataFrame) -> pd.DataFrame:
    """Unsupported cases grouped by their reason (the runner's message with its numbers
    taken out, those inside names such as int8 kept): columns reason and count, most
    frequent first."""
    if df.empty or "outcome" not in df:
        return pd.DataFrame(columns=["reason", "count"])
    part = df[df["outcome"] == "unsupported"]
    if part.empty:
        return pd.DataFrame(columns=["reason", "count"])
    text = part["error"] if "error" in part else pd.Series("", index=part.index)
    reasons = text.fillna("").astype(str).map(
        lambda t: " ".join(_NUMBER.sub("N", t).split()) or "(no reason given)")
    counts = reasons.value_counts()
    out = pd.DataFrame({"reason": counts.index, "count": counts.to_numpy()})
    return out.sort_values(["count", "reason"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Add the derived feature columns the heatmaps group by (quant, padding, kv_source)
    and each row's call up to explicit defaults (CALL)."""
    df = with_call_keys(df.copy())

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


def pass_rate(counts: pd.Series | dict[str, int]) -> float:
    """Passes over decisive verdicts (inconclusive ones excluded); NaN when none."""
    decisive = sum(int(counts.get(v, 0)) for v in DECISIVE)
    return counts.get("pass", 0) / decisive if decisive else np.nan


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """Per policy: judged cases, counts per verdict, the pass rate over decisive
    verdicts, and the pass rate the same-dtype baseline itself gets under that
    policy (its calibration, likewise over its decisive verdicts)."""
    rows = []
    for name in POLICIES:
        j = judged(df, name)
        counts = j[verdict_col(name)].value_counts() if not j.empty else pd.Series(dtype=int)
        n = len(j)
        base_col = f"baseline_verdict_{name}"
        base = j[base_col].dropna() if base_col in j else pd.Series(dtype=object)
        rows.append({"policy": name, "default": name == DEFAULT_POLICY, "judged": n,
                     **{v: int(counts.get(v, 0)) for v in VERDICTS},
                     "pass_rate": pass_rate(counts),
                     "baseline_pass_rate": pass_rate(base.value_counts())})
    return pd.DataFrame(rows)


def functional_failures(df: pd.DataFrame) -> pd.DataFrame:
    """Judged rows with a functional failure (shape, one-sided NaN/Inf, inexact invalid row)."""
    if "functional" not in df:
        return df.iloc[0:0]
    return df[df["functional"].fillna("").astype(str) != ""]


def outcomes(df: pd.DataFrame) -> pd.Series:
    """Cases per outcome (ok, unsupported, error, crashed, timeout, oom, harness)."""
    return df["outcome"].value_counts() if "outcome" in df else pd.Series(dtype=int)


def cell_table(df: pd.DataFrame, rows: str, cols: str, policy: str = DEFAULT_POLICY
               ) -> pd.DataFrame:
    """Long form per (rows, cols) cell: n, counts per verdict, pass rate, worst case, marked.

    A cell is marked when anything in it warns or fails; the pass rate leaves
    inconclusive cases out (NaN for a cell of inconclusive cases only).
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
        out.append({rows: r, cols: c, "n": len(cell),
                    **{v: int(counts.get(v, 0)) for v in VERDICTS},
                    "pass_rate": pass_rate(counts), "worst_case": cell.iloc[0].get("case_id", ""),
                    "marked": bool(counts.get("warn", 0) + counts.get("fail", 0))})
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
    rank = df[verdict_col(policy)].map(SEVERITY).fillna(-1)
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
    """Judged rows, worst first (fail, warn, inconclusive, pass; functional first)."""
    if df.empty:
        return df
    keys = severity(df, policy)
    order = keys.sort_values(["_rank", "_functional", "_score"], ascending=False,
                             kind="stable").index
    return df.loc[order]


def worst_cases(df: pd.DataFrame, n: int = WORST_N, policy: str = DEFAULT_POLICY
                ) -> pd.DataFrame:
    """The n worst judged cases under `policy`, each call once per runner (up to explicit
    defaults, `call_key`; its worst row, over every run)."""
    return dedupe_calls(rank_worst(judged(df, policy), policy), by=("runner",)).head(n)


def problems(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose runner raised, crashed, timed out or ran out of memory, or that the tool
    could not run (no verdict, a result all the same)."""
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


RELATION_COLUMNS = ["relation", "cases", "pass", "fail", "error", "unsupported",
                    "worst_ratio", "worst_case", "worst_variant", "worst_detail",
                    "worst_repro", "marked"]


def has_relations(df: pd.DataFrame) -> bool:
    """Whether `df` comes from a `--metamorphic` campaign (it carries mm_* columns)."""
    return any(str(c).startswith("mm_") for c in df.columns)


def _relation_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Every relation row of every case (from mm_rows), with the case's repro command."""
    if "mm_rows" not in df:
        return []
    out = []
    for _, r in df.iterrows():
        raw = r.get("mm_rows")
        if not isinstance(raw, str) or not raw:
            continue
        try:
            rows = json.loads(raw)
        except ValueError:
            continue
        for row in rows:
            out.append({**row, "case_id": row.get("case_id", r.get("case_id")),
                        "_repro": r.get("repro", "")})
    return out


def _ratio(row: dict[str, Any]) -> float:
    """Measured difference over its allowance (inf when nothing is allowed but it moved)."""
    try:
        diff, allowed = float(row["out_max_abs_diff"]), float(row["out_allowed"])
    except (KeyError, TypeError, ValueError):
        return float("nan")
    ratio = diff / allowed if allowed else (0.0 if diff == 0 else float("inf"))
    return ratio if ratio == ratio else float("inf")


def relation_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per metamorphic relation: cases checked, outcome counts, worst difference vs its
    allowance, and the worst failing case with its repro command.

    A case counts once per relation, as summarise() judges a case: fail if any
    partner failed, else error, else pass if any was judged, else unsupported;
    not_applicable rows are not checks. A relation is marked when any case
    failed or errored; the worst failing partner is the one furthest over its
    allowance (a failure with nothing measured, e.g. outputs that could not be
    put in one frame, ranks above any measured one).
    """
    rows = [r for r in _relation_rows(df) if r.get("outcome") != "not_applicable"]
    if not rows:
        return pd.DataFrame(columns=RELATION_COLUMNS)
    out = []
    for name in sorted({str(r.get("relation")) for r in rows}):
        mine = [r for r in rows if str(r.get("relation")) == name]
        per_case: dict[str, set[str]] = {}
        for r in mine:
            per_case.setdefault(str(r.get("case_id")), set()).add(str(r.get("outcome")))
        counts = {k: 0 for k in ("pass", "fail", "error", "unsupported")}
        for seen in per_case.values():
            key = next((k for k in ("fail", "error", "pass") if k in seen), "unsupported")
            counts[key] += 1
        ratios = [_ratio(r) for r in mine if r.get("outcome") in ("pass", "fail")]
        ratios = [x for x in ratios if x == x]
        failing = [r for r in mine if r.get("outcome") in ("fail", "error")]
        worst: dict[str, Any] = {}
        if failing:
            worst = max(failing, key=lambda r: (r.get("outcome") == "fail",
                                                 _ratio(r) if _ratio(r) == _ratio(r)
                                                 else float("inf")))
        out.append({"relation": name, "cases": len(per_case), **counts,
                    "worst_ratio": max(ratios) if ratios else np.nan,
                    "worst_case": worst.get("case_id", ""),
                    "worst_variant": worst.get("variant", ""),
                    "worst_detail": str(worst.get("detail", "")),
                    "worst_repro": worst.get("_repro", "") or "",
                    "marked": bool(failing)})
    t = pd.DataFrame(out, columns=RELATION_COLUMNS)
    return t.sort_values(["marked", "worst_ratio"], ascending=False, kind="stable",
                         na_position="last").reset_index(drop=True)


#: The stages a row's time is split into (its t_<stage> columns, seconds).
STAGES = ("generate", "materialise", "golden", "runner", "diff")


def throughput(df: pd.DataFrame) -> pd.DataFrame:
    """Per run attempt and shard: cases, workers, wall seconds, cases per minute, the
    workers' busy share (their rows' t_case summed over workers x wall) and each stage's
    share of that case time (share_<stage>; the rest is transfers and bundles).

    The wall is from the first case's start (its timestamp less its t_case) to the last
    case's end; workers are those that wrote a row. Empty without timing columns.
    """
    need = {"timestamp", "t_case"}
    if df.empty or not need <= set(df.columns):
        return pd.DataFrame()
    rows = df[df["timestamp"].notna() & df["t_case"].notna()]
    keys = [k for k in ("run_id", "attempt", "shard") if k in rows.columns]
    out = []
    groups = rows.groupby(keys, sort=False, dropna=False) if keys else [((), rows)]
    for key, g in groups:
        ts, tc = g["timestamp"].astype(float), g["t_case"].astype(float)
        wall = float(ts.max() - (ts - tc).min())
        workers = int(g["worker"].nunique()) if "worker" in g else 1
        busy = float(tc.sum())
        rec: dict[str, Any] = dict(zip(keys, key if isinstance(key, tuple) else (key,),
                                       strict=True))
        rec.update(cases=len(g), workers=workers, wall_s=wall,
                   cases_per_min=len(g) / wall * 60 if wall > 0 else float("nan"),
                   busy_share=min(busy / (workers * wall), 1.0) if wall > 0 else float("nan"))
        for stage in STAGES:
            col = f"t_{stage}"
            spent = float(g[col].fillna(0.0).astype(float).sum()) if col in g else 0.0
            rec[f"share_{stage}"] = spent / busy if busy > 0 else float("nan")
        out.append(rec)
    return pd.DataFrame(out)


#: The row column holding the environment that made a case's bits (JSON of names and
#: versions, `numerics/environment.py`), and how a row without one is shown.
ENVIRONMENT, NOT_RECORDED = "environment", "not recorded"


def environments(df: pd.DataFrame) -> pd.DataFrame:
    """Each distinct environment of the rows (a column per recorded key, in the order
    recorded; rows written before environments were recorded are one `not recorded`
    group), with its rows and where they were written (`where`: run directory and the
    shards, `run_dir shard,shard`). Empty without rows."""
    if df.empty:
        return pd.DataFrame()
    env = df[ENVIRONMENT] if ENVIRONMENT in df else pd.Series(None, index=df.index)
    env = env.map(lambda v: v if isinstance(v, str) and v else NOT_RECORDED)
    where = df["run_dir"].astype(str) if "run_dir" in df else pd.Series("", index=df.index)
    shard = df["shard"].astype(str) if "shard" in df else pd.Series("", index=df.index)
    out = []
    for text, g in pd.DataFrame({"env": env, "where": where, "shard": shard}).groupby(
            "env", sort=False):
        try:
            fields = json.loads(text) if text != NOT_RECORDED else {}
        except json.JSONDecodeError:
            fields = {}
        if not isinstance(fields, dict):
            fields = {}
        places = [f"{d} {','.join(sorted(set(s['shard'])))}".strip()
                  for d, s in g.groupby("where", sort=True)]
        out.append({ENVIRONMENT: text, **{k: "absent" if v is None else str(v)
                                          for k, v in fields.items()},
                    "rows": len(g), "where": "; ".join(places)})
    return pd.DataFrame(out).sort_values("rows", ascending=False, kind="stable") \
        .reset_index(drop=True)
