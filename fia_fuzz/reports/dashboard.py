"""A self-contained static HTML dashboard of a results dataset (plotly, inlined JS)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from fia_fuzz.diff import POLICIES

WORST_N = 20


def pass_rate_table(df: pd.DataFrame, rows: str, cols: str, verdict: str = "verdict"
                    ) -> pd.DataFrame:
    """Pass rate (share of 'pass') per (rows, cols) cell over judged cases."""
    judged = df[df[verdict].notna()]
    return judged.assign(_pass=judged[verdict].eq("pass")).pivot_table(
        index=rows, columns=cols, values="_pass", aggfunc="mean")


def worst_cases(df: pd.DataFrame, n: int = WORST_N) -> pd.DataFrame:
    """The n judged cases with the largest relative error of attention_out."""
    judged = df[df["verdict"].notna()] if "verdict" in df else df.iloc[0:0]
    if judged.empty or "out_max_rel" not in judged:
        return judged
    return judged.sort_values("out_max_rel", ascending=False).head(n)


def _heatmap(table: pd.DataFrame, title: str) -> go.Figure:
    fig = go.Figure(go.Heatmap(
        z=table.values, x=[str(c) for c in table.columns], y=[str(i) for i in table.index],
        zmin=0, zmax=1, colorscale="RdYlGn", texttemplate="%{z:.0%}"))
    fig.update_layout(title=title, height=320, margin={"l": 60, "r": 20, "t": 40, "b": 40})
    return fig


def render(df: pd.DataFrame, out: str | Path, title: str = "fia-fuzz precision dashboard"
           ) -> Path:
    """Write the dashboard to `out` and return its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = [f"<h1>{html.escape(title)}</h1>"]
    judged = df[df["verdict"].notna()] if "verdict" in df else df.iloc[0:0]
    parts.append(f"<p id='headline'>{len(df)} results, {len(judged)} judged.</p>")
    if not judged.empty:
        items = []
        for name in POLICIES:
            col = f"verdict_{name}"
            if col in judged:
                rate = judged[col].eq("pass").mean()
                items.append(f"<li><b>{html.escape(name)}</b>: {rate:.1%} pass</li>")
        parts.append("<ul class='headline'>" + "".join(items) + "</ul>")
        fig = _heatmap(pass_rate_table(judged, "layout", "q_dtype"),
                       "pass rate by layout x query dtype")
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=True))
    if "outcome" in df:
        counts = df["outcome"].value_counts()
        parts.append("<h2>Outcomes</h2>" + counts.to_frame("cases").to_html())
    worst = worst_cases(df)
    if not worst.empty:
        cols = ["case_id", "runner", "layout", "q_dtype", "branch", "out_max_abs",
                "out_max_rel", "out_cosine", "verdict", "repro"]
        cols = [c for c in cols if c in worst]
        parts.append("<h2>Worst cases</h2>" + worst[cols].to_html(index=False, table_id="worst"))
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "</style></head><body>" + "\n".join(parts) + "</body></html>")
    out.write_text(page, encoding="utf-8")
    return out
