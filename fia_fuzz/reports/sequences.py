"""Call sequences on the dashboard: pass rate per step position.

A sequence campaign writes one row per step (`position`: prefill, first_decode,
block_full, block_new, after_rollback, capture, replay, chunk, spec, decode) and
one per sequence (`step_kind` "sequence"). A step passes when its verdict under the
page's policy passes and it equals the same step run alone (`state_equal`).
"""

from __future__ import annotations

import html

import pandas as pd

#: The dataset columns that mark sequence rows.
COLUMNS = ("sequence_id", "step", "step_kind", "position")


def has_sequences(df: pd.DataFrame) -> bool:
    return "step_kind" in df and bool(df["step_kind"].notna().any())


def _true(v: object) -> bool:
    return v is True or str(v) == "True"


def position_table(df: pd.DataFrame, policy: str) -> str:
    """Per position: steps, passed (verdict pass and state equal), failed, state findings."""
    col = "verdict" if policy is None or f"verdict_{policy}" not in df else f"verdict_{policy}"
    steps = df[df["step_kind"].notna() & (df["step_kind"] != "sequence")]
    rows = []
    for pos, g in steps.groupby("position", sort=True):
        state = int(sum(not _true(v) for v in g.get("state_equal", pd.Series(dtype=object))
                        if v is not None and v == v))
        judged = g[g[col].notna()] if col in g else g.iloc[0:0]
        ok = int(sum((judged[col] == "pass") & judged["state_equal"].map(_true)))
        rate = f"{100 * ok / len(judged):.1f}%" if len(judged) else "-"
        rows.append(f"<tr><td>{html.escape(str(pos))}</td><td>{len(g)}</td><td>{ok}</td>"
                    f"<td>{int((judged[col] == 'fail').sum())}</td><td>{state}</td>"
                    f"<td>{rate}</td></tr>")
    seqs = df[df["step_kind"] == "sequence"]
    head = ("<tr><th>step position</th><th>steps</th><th>passed</th><th>failed</th>"
            "<th>state (differs from the step alone)</th><th>pass rate</th></tr>")
    note = (f"<p class='note'>{len(seqs)} sequences, "
            f"{int((seqs.get('seq_verdict') == 'pass').sum()) if len(seqs) else 0} passing "
            "every step.</p>")
    return f"<table id='sequence-positions'>{head}{''.join(rows)}</table>{note}"
