"""The one summary of scripts/device-check.sh: tests, campaign, metamorphic smoke, probe.

    python scripts/device_check_summary.py OUT_DIR [--workers K] [--budget SECONDS]

Reads OUT_DIR/tests.xml (or the pytest log), the campaign's and the metamorphic
smoke's result sets (OUT_DIR/campaign, OUT_DIR/metamorphic), the post-quant
probe's OUT_DIR/postquant.json and each stage's exit status (OUT_DIR/stages.txt);
writes OUT_DIR/device-check-summary.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def device() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {"cuda": False, "name": "no torch"}
    if not torch.cuda.is_available():
        import platform

        return {"cuda": False, "name": f"cpu ({platform.processor() or platform.machine()})",
                "torch": torch.__version__}
    props = torch.cuda.get_device_properties(0)
    return {"cuda": True, "name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
            "count": torch.cuda.device_count(), "torch": torch.__version__,
            "cuda_version": torch.version.cuda}


def tests(out: Path) -> dict[str, Any]:
    """passed/failed/skipped of the cuda-marked tests, the failures by name."""
    xml = out / "tests.xml"
    if xml.exists():
        counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        failed = []
        for case in ET.parse(xml).getroot().iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            if case.find("failure") is not None:
                counts["failed"] += 1
                failed.append(name)
            elif case.find("error") is not None:
                counts["errors"] += 1
                failed.append(name)
            elif case.find("skipped") is not None:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
        return {**counts, "failures": failed[:40]}
    log = out / "tests.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", text)}
    return {**counts, "note": "no junit xml (pytest did not finish: see tests.log)"}


def campaign(run: Path, workers: int, budget: float | None) -> dict[str, Any]:
    """Counts by outcome and verdict, throughput, the workers' busy share, failures by
    signature, from the run's results (journals included when the run was cut off)."""
    if not run.exists():
        return {"note": f"{run}: no run"}
    from fia_fuzz.reports import read_results

    df = read_results(run)
    if df.empty:
        return {"cases": 0, "note": "no results"}
    # The campaign's own summary (cases drawn, its wall time from start to end, the
    # workers' busy share) where it finished; else the rows (a run cut off).
    summary = run / "summary.json"
    own = json.loads(summary.read_text()) if summary.exists() else {}
    start = float((df["timestamp"] - df["t_case"].fillna(0)).min())
    wall = float(own.get("elapsed_s") or float(df["timestamp"].max()) - start)
    cases = int(own.get("cases") or len(df))
    busy = float(own.get("busy_s") or df["t_case"].fillna(0).sum())
    res: dict[str, Any] = {
        "cases": cases, "rows": int(len(df)), "wall_s": round(wall, 1), "workers": workers,
        "budget_s": budget,
        "cases_per_min": round(cases / wall * 60, 1) if wall > 0 else None,
        "busy_share": round(busy / (workers * wall), 3) if wall > 0 else None,
        "outcomes": _counts(df, "outcome"), "verdicts": _counts(df, "verdict"),
        "device_names": sorted(str(x) for x in df["meta_device_name"].dropna().unique())
        if "meta_device_name" in df else [],
        "devices": sorted(str(x) for x in df["meta_device"].dropna().unique())
        if "meta_device" in df else [],
    }
    for stage in ("t_generate", "t_materialise", "t_golden", "t_runner", "t_diff"):
        if stage in df:
            res.setdefault("seconds_by_stage", {})[stage] = round(float(df[stage].sum()), 1)
    if "signature" in df:
        fails = df[df["signature"].notna() & (df["signature"].astype(str) != "")]
        res["failures"] = [
            {"signature": str(sig), "rows": int(len(g)), "example": str(g["case_id"].iloc[0]),
             **({"out_lsb_max": round(float(g["out_lsb_max"].max()), 3)}
                if "out_lsb_max" in g and g["out_lsb_max"].notna().any() else {})}
            for sig, g in sorted(fails.groupby("signature"), key=lambda x: -len(x[1]))][:30]
    if "mm_outcome" in df:
        res["metamorphic"] = {"cases": _counts(df, "mm_outcome"),
                              **{k: int(df[k].fillna(0).sum())
                                 for k in ("mm_pass", "mm_fail", "mm_error", "mm_unsupported")
                                 if k in df},
                              "failed": sorted({str(x) for x in df["mm_failed"].dropna()
                                                if str(x)})[:20]}
    return res


def _counts(df: Any, col: str) -> dict[str, int]:
    if col not in df:
        return {}
    return {str(k): int(v) for k, v in df[col].fillna("none").value_counts().items()}


def stages(out: Path) -> dict[str, Any]:
    """stage -> {rc, seconds} (rc 124: the stage's timeout cut it off)."""
    res = {}
    f = out / "stages.txt"
    for line in (f.read_text().splitlines() if f.exists() else []):
        name, rc, secs = line.split()
        res[name] = {"rc": int(rc), "seconds": int(secs), **({"timed_out": True}
                                                              if rc in ("124", "137") else {})}
    return res


def probe(out: Path) -> dict[str, Any]:
    f = out / "postquant.json"
    if not f.exists():
        return {"note": "no probe output (see postquant.log)"}
    p = json.loads(f.read_text())
    return {k: p[k] for k in ("cell", "profile", "cases", "cuda", "device", "seconds",
                              "by_backend", "finding") if k in p}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--budget", type=float)
    ap.add_argument("--mm-workers", type=int, default=1)
    args = ap.parse_args(argv)
    out = Path(args.out)
    summary = {"device": device(), "stages": stages(out), "cuda_tests": tests(out),
               "campaign": campaign(out / "campaign", args.workers, args.budget),
               "metamorphic_smoke": campaign(out / "metamorphic", args.mm_workers, None),
               "postquant_probe": probe(out)}
    path = out / "device-check-summary.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(json.dumps(summary, indent=1, default=str))
    print(f"summary: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
