"""A self-contained static HTML dashboard of a results dataset.

Charts are inline SVG (`charts.py`) and the few lines of script are in the
page, so the file opens offline with no server and stays small (tens of KB
for a small run). The numbers come from `aggregate`;
this module only lays them out: headline pass rates per policy, pass-rate
heatmaps per feature cell (each with a policy selector), error ECDFs per
output dtype, a trend over runs, the worst cases with their repro command,
the runs that raised, the unsupported cases by reason, throughput (cases per minute,
the workers' busy share, stage shares), (for a `--metamorphic` campaign) the
metamorphic relations, and the environments the rows were made in (library versions,
OpenBLAS core, CPU architecture; a value that differs between them marked). With
several runners there is one tab per runner. A call given with an attribute at its
default counts as the call without it (`agg.call_key`): once per run in every count,
once in the worst cases. Long cells wrap, so the tables fit the page, and every repro
command has a copy button.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd

from fia_fuzz.diff import DEFAULT_POLICY, POLICIES
from fia_fuzz.diff.signature import is_wrong_result
from fia_fuzz.reports import aggregate as agg
from fia_fuzz.reports import charts
from fia_fuzz.reports import sequences as seq_report
from fia_fuzz.reports import signatures as sig
from fia_fuzz.reports.triage import Triage

POLICY_ABBR = {"ascend-thousandth": "thou", "ascend-threshold": "thr",
               "ascend-benchmark": "bench", "flash-attention": "fa", "vendor-fia": "vend"}

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.cards{display:flex;flex-wrap:wrap;gap:.8em}
.card{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;min-width:12em}
.card.default{border:2px solid #333}.card .rate{font-size:1.8em;font-weight:bold}
.card .sub{color:#666;font-size:.85em}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:.5em}
table{border-collapse:collapse;font-size:.85em}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}
th{background:#f4f4f4}code{font-size:.95em;white-space:nowrap}
.pass{background:#d9f2d9}.warn{background:#fff1c2}.fail{background:#f8c9c9}
.inconclusive{background:#e4e4f4}
.tabs button{padding:.4em 1em;margin-right:.3em;border:1px solid #aaa;background:#f4f4f4;
cursor:pointer}.tabs button.active{background:#333;color:#fff}
.tab{display:none}.tab.active{display:block}.note{color:#555;max-width:70em}
.chart{border:1px solid #eee;padding:.4em;overflow-x:auto}.chart svg{font-size:12px}
.chart .axis{font-weight:bold}.chart .grid{stroke:#ddd}.chart .cell:hover rect{stroke:#333}
.legend span{margin-right:1em}.legend i{display:inline-block;width:1em;height:.6em;
margin-right:.3em}
table.worst,table.signatures,table.problems{width:100%}
table.worst td,table.signatures td,table.problems td{overflow-wrap:anywhere}
td.differs{background:#fde2c8;font-weight:bold}
.cmd{display:flex;gap:.3em;align-items:flex-start}
.cmd code{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.9em;min-width:0}
button.copy{font-size:.75em;padding:0 .4em;cursor:pointer;flex:none;white-space:nowrap;
overflow-wrap:normal}
"""

TAB_JS = """
function copyCmd(b){
  var t=b.parentNode.querySelector('code').textContent;
  if(navigator.clipboard){navigator.clipboard.writeText(t).then(
    function(){b.textContent='copied';},function(){b.textContent='select';});}
}
function showTab(i){
  document.querySelectorAll('.tab').forEach(function(t,j){t.classList.toggle('active',i===j);});
  document.querySelectorAll('.tabs button').forEach(function(b,j){
    b.classList.toggle('active',i===j);});
}
"""


def command(text: object) -> str:
    """A shell command as a wrapping <code> block with a copy button."""
    return (f"<div class='cmd'><code>{html.escape(str(text or ''))}</code>"
            "<button class='copy' type='button' title='copy the command' "
            "onclick='copyCmd(this)'>copy</button></div>")


def _pct(x: float, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}%}"


def heatmap_html(df: pd.DataFrame, spec: agg.Heatmap, policy: str, chart_id: str) -> str | None:
    """Pass rate per cell of `spec`, one layer per policy, `policy` shown first."""
    tables = {name: agg.cell_table(df, spec.rows, spec.cols, name) for name in POLICIES}
    if tables[policy].empty:
        return None
    base = tables[policy]
    ys = sorted(base[spec.rows].unique())
    xs = sorted(base[spec.cols].unique())
    layers: dict[str, dict[tuple[object, object], charts.Cell]] = {}
    for name in POLICIES:
        t = tables[name].set_index([spec.rows, spec.cols])
        cells = {}
        for key in t.index:
            c = t.loc[key]
            rate = float(c["pass_rate"])
            tip = (f"{spec.rows}={key[0]}, {spec.cols}={key[1]} ({name}): pass {_pct(rate)} "
                   f"of {int(c['n'])}; warn {int(c['warn'])}, fail {int(c['fail'])}, "
                   f"inconclusive {int(c['inconclusive'])}; worst {c['worst_case']}")
            cells[key] = charts.Cell(None if np.isnan(rate) else rate,
                                     (_pct(rate, 0), f"n={int(c['n'])}"), tip)
        layers[name] = cells
    return charts.heatmap(spec.title, spec.rows, spec.cols, ys, xs, layers, policy, chart_id)


def distribution_html(df: pd.DataFrame) -> str | None:
    """ECDFs per output dtype: out MERE, out max abs error in multiples of the same-dtype
    baseline's, and the lse max abs error (a relative error of the softmax weights)."""
    panels = [("out_mere", "out: mean relative error (MERE)"),
              ("out_fa_ratio", "out: max abs err / same-dtype baseline's"),
              ("lse_max_abs", "lse: max abs err")]
    samples = [(t, agg.error_samples(df, m)) for m, t in panels]
    samples = [(t, s) for t, s in samples if s]
    if not samples:
        return None
    dtypes = sorted({d for _, s in samples for d in s})
    colours = {d: charts.PALETTE[i % len(charts.PALETTE)] for i, d in enumerate(dtypes)}
    return ("<div class='chart dist'>" + "".join(charts.ecdf(t, s, colours) for t, s in samples)
            + charts.legend(colours) + "<p class='note'>share of cases with an error &lt;= x"
            "</p></div>")


def trend_html(df: pd.DataFrame) -> str | None:
    """Pass rate per policy over runs (only with more than one run)."""
    t = agg.trend(df)
    if len(t) < 2:
        return None
    return "<div class='chart trend'>" + charts.trend(
        [str(r) for r in t["run_id"]], {name: [float(x) for x in t[name]] for name in POLICIES}
    ) + "</div>"


def _cards(df: pd.DataFrame, policy: str) -> str:
    h = agg.headline(df)
    cards = []
    for r in h.itertuples(index=False):
        cls = "card default" if r.policy == policy else "card"
        tag = " (selected)" if r.policy == policy else ""
        cards.append(
            f"<div class='{cls}' data-policy='{html.escape(r.policy)}'>"
            f"<div><b>{html.escape(r.policy)}</b>{tag}</div>"
            f"<div class='rate'>{_pct(r.pass_rate)}</div>"
            f"<div class='sub'>pass of {r.judged - r.inconclusive} decided: {r.warn} warn, "
            f"{r.fail} fail</div>"
            f"<div class='sub'>{r.inconclusive} inconclusive of {r.judged} judged"
            "</div>"
            f"<div class='sub'>same-dtype golden passes {_pct(r.baseline_pass_rate)}</div>"
            "</div>")
    return "<div class='cards headline'>" + "".join(cards) + "</div>"


def _num(v: object) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if isinstance(v, (float, np.floating)):
        return f"{v:.3g}"
    return html.escape(str(v))


#: Feature values that are the op's plain form; the worst table lists only the others.
PLAIN = {"quant": "none", "kv_source": "contiguous", "sparse_mode": 0, "mask": "none",
         "padding": "none", "pse": False, "rope": False, "sink": False, "actual_q": "absent",
         "actual_kv": "absent", "inner_precise": 0, "lse": False}


def _features(r: pd.Series) -> str:
    """One line per case: layout, dtypes, branch, shape, then every non-plain feature."""
    kv = r.get("kv_dtype")
    dt = f"{r.get('q_dtype')}" + (f"/{kv}" if kv != r.get("q_dtype") else "")
    shape = " ".join(f"{k}={_num(r.get(k))}" for k in ("B", "N", "KV_N", "S1", "S2", "D")
                     if k in r.index)
    extras = " ".join(f"{k}={_num(r.get(k))}" for k, plain in PLAIN.items()
                      if k in r.index and pd.notna(r.get(k)) and r.get(k) != plain)
    return (f"{_num(r.get('layout'))} {html.escape(dt)} -> {_num(r.get('out_dtype'))} "
            f"{_num(r.get('branch'))}<br>{shape}<br>{extras}")


def worst_table(df: pd.DataFrame, policy: str, n: int, table_id: str) -> str:
    """The worst-N cases as an HTML table (metrics, all verdicts, repro command)."""
    w = agg.worst_cases(agg.prepare(df), n, policy)
    if w.empty:
        return "<p>No judged cases.</p>"
    head = ("<tr><th>#</th><th>case / runner</th><th>features</th><th>verdict</th>"
            "<th>all policies</th><th>out max abs err @ index (actual vs golden)</th>"
            "<th>out err / baseline</th><th>out MERE</th><th>out cosine</th>"
            "<th>out ULP / LSB max</th><th>lse max abs err</th><th>repro</th></tr>")
    rows = []
    for i, (_, r) in enumerate(w.iterrows(), start=1):
        v = r.get(f"verdict_{policy}")
        reason = r.get(f"reason_{policy}") or ""
        badges = " ".join(
            f"<span class='{html.escape(str(r.get(f'verdict_{p}')))}'>"
            f"{POLICY_ABBR.get(p, p)}:{html.escape(str(r.get(f'verdict_{p}')))}</span>"
            for p in POLICIES)
        worst = (f"{_num(r.get('out_max_abs'))} @ {html.escape(str(r.get('out_worst_index', '')))}"
                 f" ({_num(r.get('out_worst_actual'))} vs {_num(r.get('out_worst_golden'))})")
        ulp = r.get("out_ulp_max") if pd.notna(r.get("out_ulp_max", np.nan)) else r.get(
            "out_lsb_max")
        rows.append(
            f"<tr class='{html.escape(str(v))}'><td>{i}</td>"
            f"<td><code>{html.escape(str(r.get('case_id')))}</code><br>"
            f"{html.escape(str(r.get('runner')))}</td>"
            f"<td>{_features(r)}</td>"
            f"<td><b>{html.escape(str(v))}</b><br>{html.escape(str(reason))}</td>"
            f"<td>{badges}</td><td>{worst}</td><td>{_num(r.get('out_fa_ratio'))}</td>"
            f"<td>{_num(r.get('out_mere'))}</td><td>{_num(r.get('out_cosine'))}</td>"
            f"<td>{_num(ulp)}</td><td>{_num(r.get('lse_max_abs'))}</td>"
            f"<td>{command(r.get('repro', ''))}</td></tr>")
    return (f"<table id='{table_id}' class='worst'>{head}" + "".join(rows) + "</table>")


def signatures_table(df: pd.DataFrame, table_id: str, triage: Triage | None = None,
                     fixed_after: int = sig.FIXED_AFTER) -> str:
    """Failure signatures (`reports.signatures`): one row per distinct failure, across runs,
    marked new / known / regressed against the triage file, and possibly fixed."""
    t = sig.signatures(df, triage)
    fixed = sig.possibly_fixed(df, fixed_after)
    if t.empty and not fixed:
        return "<p>No failures.</p>"
    head = ("<tr><th>signature</th><th>triage</th><th>rows</th><th>cases</th><th>runs</th>"
            "<th>first seen</th><th>last seen</th><th>minimal case (elements)</th>"
            "<th>repro</th></tr>")
    rows = "".join(
        f"<tr class='{'fail' if is_wrong_result(r['kind']) else 'error'}' "
        f"data-signature='{html.escape(str(r['signature']))}' "
        f"data-triage='{html.escape(str(r['triage']))}'>"
        f"<td><b>{html.escape(str(r['signature']))}</b></td><td>{_triage_cell(r)}</td>"
        f"<td>{int(r['count'])}</td>"
        f"<td>{int(r['cases'])}</td><td>{int(r['runs'])}</td>"
        f"<td>{html.escape(str(r['first_seen']))}</td><td>{html.escape(str(r['last_seen']))}</td>"
        f"<td><code>{html.escape(str(r['minimal_case']))}</code> ({_num(r['minimal_size'])}"
        f"{', shrunk' if r['minimal_shrunk'] else ''})</td>"
        f"<td>{command(r['repro'])}</td></tr>"
        for _, r in t.iterrows())
    table = f"<table id='{table_id}' class='signatures'>{head}{rows}</table>" if rows else ""
    if fixed:
        table += (f"<p>Possibly fixed (every replay of its bundles passed on the last "
                  f"{fixed_after} nights):</p><ul id='{table_id}-fixed'>" + "".join(
                      f"<li data-signature='{html.escape(s)}'><b>{html.escape(s)}</b>: "
                      f"{command(repro)}</li>" for s, repro in fixed.items()) + "</ul>")
    return table


def _triage_cell(r: pd.Series) -> str:
    mark = html.escape(str(r["triage"]))
    if not r["ticket"]:
        return f"<b>{mark}</b>"
    ticket = html.escape(str(r["ticket"]))
    link = f"<a href='{ticket}'>{ticket}</a>" if ticket.startswith(("http://", "https://")) \
        else ticket
    return f"<b>{mark}</b> ({link}, {html.escape(str(r['status']))})"


def nights_table(df: pd.DataFrame, triage: Triage | None, fixed_after: int) -> str:
    """Per night: distinct failing signatures new, known, regressed, and those possibly
    fixed as of that night; with several nights, the trend across them."""
    t = sig.night_counts(df, triage, fixed_after)
    if t.empty:
        return ""
    head = ("<tr><th>night (run)</th><th>new</th><th>known</th><th>regressed</th>"
            "<th>possibly fixed</th></tr>")
    rows = "".join(f"<tr data-run='{html.escape(str(r['run_id']))}'><td>"
                   f"{html.escape(str(r['run_id']))}</td><td>{int(r['new'])}</td>"
                   f"<td>{int(r['known'])}</td><td>{int(r['regressed'])}</td>"
                   f"<td>{int(r['possibly_fixed'])}</td></tr>" for _, r in t.iterrows())
    return f"<table id='nights' class='throughput'>{head}{rows}</table>"


def problems_table(df: pd.DataFrame) -> str:
    p = agg.problems(df)
    if p.empty:
        return "<p>No runner errors, crashes, timeouts or harness failures.</p>"
    rows = "".join(
        f"<tr><td><code>{html.escape(str(r.get('case_id')))}</code></td>"
        f"<td>{html.escape(str(r.get('runner')))}</td><td>{html.escape(str(r.get('outcome')))}</td>"
        f"<td>{html.escape(str(r.get('error', ''))[:300])}</td>"
        f"<td>{command(r.get('repro', ''))}</td></tr>"
        for _, r in p.head(50).iterrows())
    return ("<table class='problems'><tr><th>case</th><th>runner</th><th>outcome</th>"
            f"<th>error</th><th>repro</th></tr>{rows}</table>")


def unsupported_table(df: pd.DataFrame) -> str | None:
    """Unsupported cases per reason (`agg.unsupported_reasons`); None when there are none."""
    t = agg.unsupported_reasons(df)
    if t.empty:
        return None
    rows = "".join(f"<tr><td>{html.escape(str(r['reason']))}</td><td>{int(r['count'])}</td>"
                   "</tr>" for _, r in t.iterrows())
    return ("<p class='note'>Cases the runner cannot express, by its reason (numbers in the "
            "reason shown as N).</p><table class='unsupported'><tr><th>reason</th>"
            f"<th>cases</th></tr>{rows}</table>")


def relations_table(df: pd.DataFrame, table_id: str) -> str:
    """Metamorphic relations as an HTML table, failing ones first (`agg.relation_table`)."""
    t = agg.relation_table(df)
    if t.empty:
        return "<p>No metamorphic relation was checked.</p>"
    head = ("<tr><th>relation</th><th>cases</th><th>pass</th><th>fail</th><th>error</th>"
            "<th>unsupported</th><th>worst diff / allowance</th><th>worst failing case</th>"
            "<th>why</th><th>repro</th></tr>")
    rows = []
    for _, r in t.iterrows():
        cls = "fail" if r["marked"] else ("pass" if r["cases"] > r["unsupported"] else "")
        case = (f"<code>{html.escape(str(r['worst_case']))}</code><br>"
                f"{html.escape(str(r['worst_variant']))}" if r["worst_case"] else "-")
        counts = "".join(f"<td>{int(r[k])}</td>"
                         for k in ("cases", "pass", "fail", "error", "unsupported"))
        rows.append(
            f"<tr class='{cls}' data-relation='{html.escape(str(r['relation']))}'>"
            f"<td><b>{html.escape(str(r['relation']))}</b></td>{counts}"
            f"<td>{_num(r['worst_ratio'])}</td><td>{case}</td>"
            f"<td>{html.escape(str(r['worst_detail'])[:300])}</td>"
            f"<td><code>{html.escape(str(r['worst_repro']))}</code></td></tr>")
    note = ("<p class='note'>Each relation runs a case and an equivalent rearranged call on "
            "the same runner; a case counts once per relation (fail if any partner failed). "
            "worst diff / allowance is the largest measured attention_out difference over the "
            "relation's tolerance among judged partners (above 1 fails).</p>")
    return f"{note}<table id='{table_id}' class='relations'>{head}" + "".join(rows) + "</table>"


def throughput_table(df: pd.DataFrame) -> str | None:
    """Cases per minute, the workers' busy share and where their time went, per run
    attempt and shard (`agg.throughput`); None without timing columns."""
    t = agg.throughput(df)
    if t.empty:
        return None
    stages = "".join(f"<th>{s}</th>" for s in agg.STAGES)
    head = ("<tr><th>run</th><th>attempt</th><th>shard</th><th>cases</th><th>workers</th>"
            f"<th>wall</th><th>cases / min</th><th>busy share</th>{stages}</tr>")
    rows = []
    for _, r in t.iterrows():
        shares = "".join(f"<td>{_pct(r[f'share_{s}'], 0)}</td>" for s in agg.STAGES)
        rows.append(
            f"<tr><td><code>{html.escape(str(r.get('run_id', '-')))}</code></td>"
            f"<td>{_num(r.get('attempt'))}</td><td>{_num(r.get('shard'))}</td>"
            f"<td>{int(r['cases'])}</td><td>{int(r['workers'])}</td>"
            f"<td>{r['wall_s']:.1f}s</td><td class='rate'>{_num(r['cases_per_min'])}</td>"
            f"<td class='busy'>{_pct(r['busy_share'], 0)}</td>{shares}</tr>")
    note = ("<p class='note'>Busy share: the workers' case time summed over workers x wall "
            "(1 = no worker ever waited). Stage columns: each stage's share of the case time "
            "(generate, materialise, golden pair, runner, diff; the rest is transfers "
            "between processes and bundles).</p>")
    return f"{note}<table class='throughput'>{head}" + "".join(rows) + "</table>"


def environments_table(df: pd.DataFrame) -> str | None:
    """Each distinct environment of the rows (library versions, OpenBLAS core, CPU
    architecture; `agg.environments`), with its rows and run directories and shards; a
    value that differs between recorded environments is marked. None without rows."""
    envs = agg.environments(df)
    if envs.empty:
        return None
    keys = [c for c in envs.columns if c not in (agg.ENVIRONMENT, "rows", "where")] \
        or [agg.ENVIRONMENT]
    recorded = envs[envs[agg.ENVIRONMENT] != agg.NOT_RECORDED]
    differ = {k for k in keys if k in recorded and recorded[k].nunique(dropna=False) > 1}
    head = "<tr>" + "".join(f"<th>{html.escape(k)}</th>" for k in keys) \
        + "<th>rows</th><th>run dir and shards</th></tr>"
    rows = []
    for _, r in envs.iterrows():
        if r[agg.ENVIRONMENT] == agg.NOT_RECORDED:
            cells = f"<td colspan={len(keys)}>{agg.NOT_RECORDED}</td>"
        else:
            cells = "".join(f"<td{' class=differs' if k in differ else ''}>"
                            f"{html.escape(str(r[k]))}</td>" for k in keys)
        rows.append(f"<tr>{cells}<td>{int(r['rows'])}</td>"
                    f"<td><code>{html.escape(str(r['where']))}</code></td></tr>")
    note = ("<p class='note'>The environment each row's case was materialised and judged "
            "in, recorded with the digest of its inputs (a repro whose inputs differ names "
            "the versions that moved). Marked: a value that differs between environments."
            "</p>")
    return f"{note}<table id='environments' class='environments'>{head}" + "".join(rows) \
        + "</table>"


def _section(df: pd.DataFrame, key: str, policy: str, worst_n: int,
             raw: pd.DataFrame | None = None, triage: Triage | None = None,
             fixed_after: int = sig.FIXED_AFTER) -> str:
    """One tab: `df` counts each call once per run and runner (`agg.dedupe_calls`); `raw`
    (every row, default `df`) gives the throughput, which counts the work done."""
    parts = [_cards(df, policy)]
    out = agg.outcomes(df)
    parts.append("<p>Outcomes: " + ", ".join(f"{html.escape(str(k))} {v}"
                                             for k, v in out.items())
                 + f". Functional failures (fail under every policy): "
                 f"<b>{len(agg.functional_failures(df))}</b>.</p>")
    shown, single = [], []
    for spec in agg.HEATMAPS:
        cells = agg.cell_table(df, spec.rows, spec.cols, policy)
        if len(cells) == 1:
            single.append(f"{spec.rows}={cells.iloc[0][spec.rows]}, "
                          f"{spec.cols}={cells.iloc[0][spec.cols]}")
        elif len(cells) > 1:
            shown.append(heatmap_html(df, spec, policy, f"{key}-heat-{spec.rows}-{spec.cols}"))
    if shown or single:
        parts.append("<h2>Pass rate per feature cell</h2><div class='grid heatmaps'>")
        parts += [h for h in shown if h]
        parts.append("</div>")
    if single:
        parts.append("<p class='note'>One cell only (every judged case has the same value): "
                     + "; ".join(html.escape(x) for x in single) + ".</p>")
    dist = distribution_html(df)
    if dist is not None:
        parts.append("<h2>Error distributions per output dtype</h2>" + dist)
    tr = trend_html(df)
    if tr is not None:
        parts.append("<h2>Pass rate over runs</h2>" + tr)
    if seq_report.has_sequences(df) and key == "t0":
        parts.append("<h2>Call sequences: pass rate per step position</h2>"
                     + seq_report.position_table(df, policy))
    parts.append("<h2>Failure signatures</h2>" + signatures_table(
        df, "signatures" if key == "t0" else f"signatures-{key}", triage, fixed_after))
    parts.append(f"<h2>Worst cases (top {worst_n}, {html.escape(policy)})</h2>")
    parts.append(worst_table(df, policy, worst_n, "worst" if key == "t0" else f"worst-{key}"))
    if agg.has_relations(df):
        parts.append("<h2>Metamorphic relations</h2>" + relations_table(
            df, "relations" if key == "t0" else f"relations-{key}"))
    parts.append("<h2>Runner errors, crashes, timeouts, harness failures</h2>"
                 + problems_table(df))
    unsupported = unsupported_table(df)
    if unsupported is not None:
        parts.append("<h2>Unsupported cases by reason</h2>" + unsupported)
    speed = throughput_table(df if raw is None else raw)
    if speed is not None:
        parts.append("<h2>Throughput</h2>" + speed)
    return "\n".join(parts)


def _policy_notes() -> str:
    items = "".join(
        f"<li><b>{html.escape(name)}</b>{' (default)' if name == DEFAULT_POLICY else ''}: "
        f"{html.escape(' '.join((fn.__doc__ or '').split()))}</li>"
        for name, fn in POLICIES.items())
    return ("<h2>Policies</h2><ul class='note'>" + items + "</ul><p class='note'>Functional "
            "failures (shape, NaN/Inf on one side, a non-exact invalid row) fail under every "
            "policy. A case is inconclusive when every miss is one the same-dtype golden "
            "shares (an int8 output of an ill-conditioned float attention): the fp64 truth "
            "cannot decide it, so pass rates leave it out. Absolute-threshold policies judge "
            "the output dtype as much as the kernel: "
            "bf16 rounding alone gives relative errors up to 2^-9 (about 2e-3), above the "
            "thousandth rule's 1e-3; each card shows how the same-dtype golden itself fares."
            "</p>")


def render(df: pd.DataFrame, out: str | Path, title: str = "fia-fuzz precision dashboard",
           policy: str = DEFAULT_POLICY, worst_n: int = agg.WORST_N,
           triage: Triage | None = None, fixed_after: int = sig.FIXED_AFTER) -> Path:
    """Write the dashboard of `df` to `out` and return its path; failing signatures are
    marked against `triage` (none: all new)."""
    agg.verdict_col(policy)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = agg.prepare(df)
    df = agg.dedupe_calls(raw)  # a call given with explicit defaults counts once per run
    runs = agg.run_order(df)
    tabs = list(agg.by_runner(df))
    raw_tabs = dict(agg.by_runner(raw))
    summary = (f"{len(df)} results from {len(runs) or 1} run(s) on "
               f"{len(agg.runners(df))} runner(s); verdicts under <b>{html.escape(policy)}</b>"
               f" (select another policy in each heatmap).")
    body = [f"<h1>{html.escape(title)}</h1>", f"<p id='headline'>{summary}</p>"]
    if len(tabs) > 1:
        body.append("<div class='tabs'>" + "".join(
            f"<button onclick='showTab({i})' class='{'active' if i == 0 else ''}'>"
            f"{html.escape(name)}</button>" for i, (name, _) in enumerate(tabs)) + "</div>")
    for i, (name, part) in enumerate(tabs):
        body.append(f"<section class='tab{' active' if i == 0 else ''}' "
                    f"data-runner={json.dumps(name)}>")
        body.append(_section(part, f"t{i}", policy, worst_n, raw_tabs.get(name), triage,
                             fixed_after))
        body.append("</section>")
    nights = nights_table(raw, triage, fixed_after)
    if nights:   # over every runner: a night's failures, whichever backend showed them
        body.append("<h2>Failures per night: new, known, regressed, possibly fixed</h2>"
                    + nights)
    envs = environments_table(raw)
    if envs is not None:
        body.append("<h2>Environments</h2>" + envs)
    body.append(_policy_notes())
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style>"
            f"<script>{TAB_JS}{charts.PICK_JS}</script></head><body>"
            + "\n".join(body) + "</body></html>")
    out.write_text(page, encoding="utf-8")
    return out
