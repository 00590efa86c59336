"""Host memory of far stress draws: lazy caches referenced past 2^31 / 2^32 elements.

Draws N stress cases pinned to cache_reach 2^31 and 2^32 (alternating; seeded
random walks of the cases() construction) and runs each in a fresh subprocess:
materialise, the golden pair (fp64 + device precision, what a campaign
computes), then torch-sdpa, reading the process's peak RSS (VmHWM) after each
step, and judging torch-sdpa against the golden (flash-attention policy).
Prints one line per case, then the median and maximum peaks against the 1 GiB
bar, and the largest ratio of the golden's peak (over the process's start) to
the case's estimate (`Case.host_bytes()`).

Run: .venv/bin/python benchmarks/bench_far_memory.py [--cases 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.cases import build, families_for
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES

GIB = 1 << 30
REACHES = ("2^31", "2^32")

_CHILD = """
import json, sys
from fia_fuzz.campaign.evaluate import golden_pair, judge_outputs
from fia_fuzz.runners import get_runner
from fia_fuzz.op.case import Case
sys.path.insert(0, sys.argv[1])  # benchmarks/
from bench_golden import peak_rss_kib

def hwm():
    return peak_rss_kib() * 1024

case = Case.from_json(sys.stdin.read())
sdpa = get_runner("torch-sdpa")
start = hwm()
call = case.call()
materialised = hwm()
truth, base = golden_pair(call)
golden = hwm()
ok, why = sdpa.supports(case)
row = {"start": start, "materialised": materialised, "golden": golden, "supported": ok}
if ok:
    actual = sdpa.run(call)
    row["sdpa"] = hwm()
    row["verdict"] = judge_outputs(case, actual, truth, base)["verdict"]
print(json.dumps(row))
"""


def far_cases(n: int, seed: int) -> list[Case]:
    """n stress draws whose referenced cache blocks sit past 2^31 / 2^32 elements."""
    rng = random.Random(seed)
    out: list[Case] = []
    while len(out) < n:
        pins = {"cache_reach": REACHES[len(out) % 2]}
        try:
            out.append(build(RandomChooser(rng, pins), PROFILES["stress"], families_for(pins),
                             pins))
        except Dead:
            continue
    return out


def measure(case: Case) -> dict[str, object]:
    res = subprocess.run([sys.executable, "-c", _CHILD, os.path.dirname(os.path.abspath(__file__))],
                         input=case.to_json(), text=True, capture_output=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    mib = 1 << 20
    golden, whole, over, ratio = [], [], 0, []
    for i, case in enumerate(far_cases(args.cases, args.seed)):
        f = case.features()
        m = measure(case)
        golden.append(int(m["golden"]))
        whole.append(int(m.get("sdpa", m["golden"])))
        over += whole[-1] >= GIB
        ratio.append((golden[-1] - int(m["start"])) / case.host_bytes())
        print(f"{i:3d} {case.case_id} {f['workload'] if f['workload'] != 'none' else ''}"
              f" {f['layout']} B{f['B']} N{f['N']} S1={f['S1']} S2={f['S2']} D{f['D']}"
              f" reach {f['cache_reach']} device {case.device_bytes() / GIB:.1f} GiB"
              f" estimate {case.host_bytes() / mib:.0f} MiB | peak MiB: start"
              f" {m['start'] / mib:.0f} materialised {m['materialised'] / mib:.0f}"
              f" golden {m['golden'] / mib:.0f} sdpa "
              + (f"{m['sdpa'] / mib:.0f} {m['verdict']}" if m["supported"] else "unsupported"),
              flush=True)
    print(f"{len(golden)} far stress cases: golden pair peak median "
          f"{statistics.median(golden) / mib:.0f} MiB, max {max(golden) / mib:.0f} MiB; with "
          f"torch-sdpa median {statistics.median(whole) / mib:.0f} MiB, max "
          f"{max(whole) / mib:.0f} MiB; {over} at or over 1 GiB; golden peak over the "
          f"start at most {max(ratio):.1f}x the estimate; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
