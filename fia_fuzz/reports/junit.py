"""JUnit XML export, so CI systems list precision failures like test failures.

One <testsuite> per runner, one <testcase> per result row: a policy `fail`
is a <failure> (message = the reason, body = metrics and the repro
command), a runner error/crash/timeout an <error>, an unsupported case
<skipped>; a `warn` passes with the reason in <system-out>; an
`inconclusive` verdict (the fp64 truth cannot decide) is <skipped> with its reason.
A last <testsuite> "fia-fuzz.signatures" holds one <testcase> per failure
signature (`reports.signatures`): new, known or regressed against the triage file,
count, first/last seen, minimal case, repro.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from fia_fuzz.diff import DEFAULT_POLICY
from fia_fuzz.diff.signature import is_wrong_result
from fia_fuzz.reports import aggregate as agg
from fia_fuzz.reports import signatures as sig
from fia_fuzz.reports.triage import Triage

DETAIL_KEYS = ("out_dtype", "out_max_abs", "out_worst_index", "out_worst_actual",
               "out_worst_golden", "out_mere", "out_mare", "out_rmse", "out_cosine",
               "out_fa_ratio", "out_ulp_max", "out_lsb_max", "out_lsb_max_decisive",
               "lse_max_abs", "lse_fa_ratio", "functional")


def _classname(r: pd.Series) -> str:
    parts = [str(r.get(k)) for k in ("layout", "q_dtype", "branch") if pd.notna(r.get(k))]
    return ".".join(["fia", str(r.get("runner", "runner")), *parts])


def _details(r: pd.Series) -> str:
    lines = [f"{k} = {r.get(k)}" for k in DETAIL_KEYS
             if k in r.index and pd.notna(r.get(k)) and r.get(k) != ""]
    lines.append(f"repro: {r.get('repro', '')}")
    return "\n".join(lines)


def _signature_suite(root: ET.Element, df: pd.DataFrame, triage: Triage | None) -> None:
    t = sig.signatures(df, triage)
    suite = ET.SubElement(root, "testsuite", name="fia-fuzz.signatures", tests=str(len(t)),
                          failures=str(int(t["kind"].map(is_wrong_result).sum())),
                          errors=str(int((~t["kind"].map(is_wrong_result)).sum())),
                          skipped="0")
    for _, r in t.iterrows():
        tc = ET.SubElement(suite, "testcase", classname="fia.signature",
                           name=str(r["signature"]), time="0")
        tag = "failure" if is_wrong_result(r["kind"]) else "error"
        filed = f", {r['ticket']} ({r['status']})" if r["ticket"] else ""
        e = ET.SubElement(tc, tag, message=f"{r['triage']}{filed}: {r['count']} failing rows "
                          f"in {r['runs']} run(s)", type=str(r["kind"]))
        e.text = (f"cases: {r['cases']}; first seen {r['first_seen']} ({r['first_run']}), "
                  f"last seen {r['last_seen']} ({r['last_run']})\n"
                  f"minimal case: {r['minimal_case']} ({r['minimal_size']:g} elements"
                  f"{', shrunk' if r['minimal_shrunk'] else ''})\nrepro: {r['repro']}")


def write_junit(df: pd.DataFrame, path: str | Path, policy: str = DEFAULT_POLICY,
                triage: Triage | None = None) -> Path:
    """Write every row of `df` as a JUnit testcase judged by `policy`; returns the path.
    Each signature's testcase says whether it is new, known (and its ticket) or regressed
    against `triage`."""
    col = agg.verdict_col(policy)
    root = ET.Element("testsuites", name=f"fia-fuzz ({policy})")
    for runner in agg.runners(df) or ["-"]:
        part = df[df["runner"].astype(str) == runner] if "runner" in df else df
        suite = ET.SubElement(root, "testsuite", name=f"fia-fuzz.{runner}")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for _, r in part.iterrows():
            counts["tests"] += 1
            tc = ET.SubElement(suite, "testcase", classname=_classname(r),
                               name=str(r.get("case_id")),
                               time=f"{float(r.get('t_runner', 0) or 0):.6f}")
            outcome = r.get("outcome", "ok")
            verdict = r.get(col)
            if outcome in agg.PROBLEM_OUTCOMES:
                counts["errors"] += 1
                e = ET.SubElement(tc, "error", message=f"{outcome}: {r.get('error', '')}"[:500],
                                  type=str(outcome))
                e.text = f"repro: {r.get('repro', '')}"
            elif outcome == "unsupported" or verdict not in agg.VERDICTS:
                counts["skipped"] += 1
                ET.SubElement(tc, "skipped", message=str(r.get("error", "not judged"))[:500])
            elif verdict == "inconclusive":
                counts["skipped"] += 1
                ET.SubElement(tc, "skipped",
                              message=f"inconclusive: {r.get(f'reason_{policy}', '')}"[:500])
            elif verdict == "fail":
                counts["failures"] += 1
                f = ET.SubElement(tc, "failure", message=str(r.get(f"reason_{policy}", "")),
                                  type=f"precision:{policy}")
                f.text = _details(r)
            elif verdict == "warn":
                ET.SubElement(tc, "system-out").text = (
                    f"warn ({policy}): {r.get(f'reason_{policy}', '')}\n{_details(r)}")
        for k, v in counts.items():
            suite.set(k, str(v))
    _signature_suite(root, df, triage)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
