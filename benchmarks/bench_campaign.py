"""Where a campaign's host-side time goes, per stage, against torch SDPA on the same data.

Cases: a fixed seeded list of nightly-profile draws (the campaign's own
construction, `strategies.cases.build`, driven by a seeded RandomChooser, so the
list does not depend on Hypothesis's database or version) plus the three shapes
of benchmarks/bench_golden.py as plain fp16 BNSD cases. Each case runs every stage in this
process, in campaign order: generate (the draw), materialise (`Case.call()`),
golden fp64, golden device, diff (`campaign.evaluate.judge_outputs` against the
torch-sdpa runner's output, or the device golden's where the runner refuses the
case; the runner is not host work and is not timed) and, as the yardstick,
torch.nn.functional.scaled_dot_product_attention in float32 on CPU on the
case's query/key/value as BNSD (dequantised KV where the case quantises it).

Printed: per stage its total wall and CPU seconds (process CPU time, all
threads: on a shared machine under load, wall time mostly measures the other
processes; each stage starts once no thread is left spinning from the stage
before, `settle`), each as a ratio to the yardstick's and as a share of the golden
pair (fp64 + device); the target is diff and materialise each <= 15% of the
pair. Then host-side cases per CPU-second (generate + materialise + goldens +
diff).

Run: .venv/bin/python benchmarks/bench_campaign.py [--cases 40] [--seed 18] [--no-shapes]
     [--repeat 1] [--verbose]
Each stage takes its best of --repeat runs per case; the load average is printed.

A failing night (`--failing-night [--budget 60] [--seed 3] [--workers 1]
[--bundles-per-signature 3]`): the
same nightly campaign (`fia-fuzz campaign --profile nightly --no-shrink`) twice at the
same time, so both meet the same load, on two test doubles that cost the same
(benchmarks/night_doubles.py): one planting a failure in about 30% of the cases, one
passing all. Printed: each run's cases per minute and their ratio (target >= 0.8),
and the bundle bytes per failing row beyond each signature's first bundles (median,
target <= 1 MB), beside the bytes of the first bundles and of the result rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.campaign.evaluate import judge_outputs
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.api import query_bnsd
from fia_fuzz.golden.kv import dequantise, load_kv
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.runners import get_runner
from fia_fuzz.strategies.cases import build
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES
from fia_fuzz.strategies.families import FAMILIES

HOST = ("generate", "materialise", "golden_fp64", "golden_device", "diff")
#: name -> (B, N, KV_N, S1, S2, D), the three shapes of benchmarks/bench_golden.py.
SHAPES = {
    "decode": (16, 32, 8, 1, 8192, 128),
    "gqa": (4, 32, 8, 512, 4096, 128),
    "prefill": (1, 8, 8, 2048, 2048, 128),
}


def nightly_cases(count: int, seed: int, illegal: list[str] | None = None
                  ) -> list[tuple[str, Case, float]]:
    """(label, case, seconds to draw it) for `count` seeded legal nightly draws.

    A draw its own rules reject (a strategy defect, which the campaign records as a
    golden error) is left out and its label and rules appended to `illegal`.
    """
    prof, out = PROFILES["nightly"], []
    i = 0
    while len(out) < count:
        t0 = time.perf_counter()
        try:
            case = build(RandomChooser(random.Random(seed * 100003 + i), {}), prof,
                         list(FAMILIES), {})
        except Dead:
            i += 1
            continue
        t_draw = time.perf_counter() - t0
        broken = case_violations(case)
        if broken and illegal is not None:
            illegal.append(f"nightly#{i} {case.case_id} {[v.rule for v in broken]}")
        if not broken:
            out.append((f"nightly#{i}", case, t_draw))
        i += 1
    return out


def shape_case(b: int, n: int, kvn: int, s1: int, s2: int, d: int) -> Case:
    """A plain fp16 BNSD case of the given sizes, lse on."""
    return Case(params={"query": TensorSpec((b, n, s1, d), "float16"),
                        "key": TensorSpec((b, kvn, s2, d), "float16"),
                        "value": TensorSpec((b, kvn, s2, d), "float16"),
                        "num_heads": n, "num_key_value_heads": kvn, "input_layout": "BNSD",
                        "scale": float(1 / np.sqrt(d)), "softmax_lse_flag": True}, seed=0)


def yardstick(case: Case, call: dict[str, Any]) -> Callable[[], Any]:
    """torch SDPA fp32 (CPU) over the case's BNSD query and (dequantised) key/value."""
    import torch

    view = case.view()
    kv = dequantise(load_kv(view, call), view, call, "device")
    k = kv.key if kv.key_rope is None else np.concatenate([kv.key, kv.key_rope], axis=-1)
    tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(x).astype(np.float32))
                  for x in (query_bnsd(view, call), k, kv.value))
    gqa = tq.shape[1] != tk.shape[1]
    scale = float(view.attrs["scale"])

    def run() -> Any:
        with torch.no_grad():
            return torch.nn.functional.scaled_dot_product_attention(
                tq, tk, tv, scale=scale, enable_gqa=gqa)
    return run


def settle(limit: float = 0.2) -> None:
    """Wait (at most `limit` seconds) until no thread of this process burns CPU.

    torch's OpenMP threads spin for a few ms after each parallel op (here 2.5-4
    CPU-ms after one SDPA call); process CPU time would charge that to the next
    stage timed: materialise after the yardstick, the diff after the runner.
    """
    end, quiet = time.perf_counter() + limit, 0
    # 20 ms in a row without CPU: under load a spinning thread can wait that long for a core
    while quiet < 4 and time.perf_counter() < end:
        c0 = time.process_time()
        time.sleep(0.005)
        quiet = quiet + 1 if time.process_time() - c0 < 2e-4 else 0


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """(result, best wall seconds, CPU seconds of that best run) of `fn`, each run started
    once the process is quiet (`settle`)."""
    best, cpu, result = float("inf"), 0.0, None
    for _ in range(repeat):
        settle()
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return result, best, cpu


def measure(case: Case, t_generate: float, runner: Any, repeat: int
            ) -> dict[str, tuple[float, float]]:
    """stage -> (wall seconds, CPU seconds) of one case."""
    t = {"generate": (t_generate, t_generate)}
    call, *t["materialise"] = timed(case.call, repeat)
    truth, *t["golden_fp64"] = timed(
        lambda: npu_fused_infer_attention_score(**call, precision="fp64", rules=case.rules),
        repeat)
    baseline, *t["golden_device"] = timed(
        lambda: npu_fused_infer_attention_score(**call, precision="device", rules=case.rules),
        repeat)
    ok, _ = runner.supports(case)
    actual = runner.run(call) if ok else baseline
    _, *t["diff"] = timed(lambda: judge_outputs(case, actual, truth, baseline), repeat)
    _, *t["sdpa"] = timed(yardstick(case, call), repeat)
    return {k: (float(v[0]), float(v[1])) for k, v in t.items()}


def _night(runner: str, out: Path, budget: float, seed: int, workers: int, per_signature: int
           ) -> subprocess.Popen[bytes]:
    """The nightly campaign on `runner`, started as its own command."""
    return subprocess.Popen(
        [sys.executable, "-m", "fia_fuzz", "campaign", "--runner", runner, "--profile",
         "nightly", "--budget", f"{budget:g}s", "--seed", str(seed), "--workers",
         str(workers), "--bundles-per-signature", str(per_signature), "--no-shrink",
         "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def failing_night(budget: float, seed: int, workers: int, per_signature: int) -> None:
    """The failing-night comparison (see the module doc)."""
    import pandas as pd

    from fia_fuzz.campaign.bundles import dir_bytes
    from fia_fuzz.diff.signature import failure_kind

    here = str(Path(__file__).parent)  # the doubles' module, for the campaigns' processes
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
          f"budget {budget:g}s each, seed {seed}, {workers} worker(s), {per_signature} "
          "bundle(s) per signature; the two campaigns "
          "run at the same time (the same load for both)")
    with tempfile.TemporaryDirectory() as tmp:
        outs = {name: Path(tmp) / name for name in ("passing", "failing")}
        procs = [_night(f"night_doubles:{name}_night", out, budget, seed, workers,
                        per_signature) for name, out in outs.items()]
        for p in procs:
            p.wait()
        summaries = {k: json.loads((out / "summary.json").read_text())
                     for k, out in outs.items()}
        rate = {k: s["cases_per_min"] for k, s in summaries.items()}
        for k, s in summaries.items():
            print(f"  {k:<8} {s['cases']:4d} cases in {s['elapsed_s']:5.1f}s: "
                  f"{rate[k]:6.1f} cases/min; verdicts {s['verdicts']}")
        print(f"  throughput with failures / without: "
              f"{rate['failing'] / max(rate['passing'], 1e-9):.2f}x (target >= 0.8)")
        out = outs["failing"]
        print(f"  load average {os.getloadavg()[0]:.1f} at end")
        df = pd.read_parquet(out / "results")
        failing = df[[failure_kind(r) is not None for r in df.to_dict("records")]]
        own = failing["bundle"].notna() if "bundle" in failing else \
            pd.Series(False, index=failing.index)
        first = failing[own]
        beyond = failing[~own]
        beyond_bytes = [dir_bytes(b) if isinstance(b, str) else 0
                        for b in beyond.get("bundle", pd.Series([None] * len(beyond)))]
        row_bytes = sum(p.stat().st_size for p in (out / "results").iterdir()) / max(1, len(df))
        print(f"  failing rows {len(failing)} of {len(df)} ({len(failing) / max(1, len(df)):.0%})"
              f", {failing['signature'].nunique() if len(failing) else 0} signature(s); "
              f"first bundles {len(first)}, "
              f"{sum(dir_bytes(b) for b in first['bundle']) / 1e6:.1f} MB")
        median = float(np.median(beyond_bytes)) if beyond_bytes else 0.0
        print(f"  bundle bytes per failing row beyond its signature's first bundles: median "
              f"{median / 1e6:.3f} MB over {len(beyond)} rows (target <= 1 MB); a result row "
              f"takes {row_bytes / 1e3:.1f} kB of parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failing-night", action="store_true",
                        help="instead: a nightly campaign with 30%% planted failures against "
                             "the same without failures")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds of each --failing-night campaign")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--bundles-per-signature", type=int, default=3,
                        help="of each --failing-night campaign (the campaign's default)")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None,
                        help="default 18 (stages), 3 (--failing-night)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-shapes", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="one line per case")
    args = parser.parse_args()
    if args.failing_night:
        failing_night(args.budget, 3 if args.seed is None else args.seed, args.workers,
                      args.bundles_per_signature)
        return
    import torch

    runner = get_runner("torch-sdpa")
    illegal: list[str] = []
    sets: dict[str, list[tuple[str, Case, float]]] = {
        "nightly": nightly_cases(args.cases, 18 if args.seed is None else args.seed, illegal)}
    if not args.no_shapes:
        sets["shapes"] = [(name, shape_case(*dims), 0.0) for name, dims in SHAPES.items()]
    print(f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at start; best of {args.repeat} per stage")
    for line in illegal:
        print(f"left out, illegal under its own rules: {line}")
    for set_name, items in sets.items():
        wall = dict.fromkeys((*HOST, "sdpa"), 0.0)
        cpu = dict.fromkeys((*HOST, "sdpa"), 0.0)
        for label, case, t_gen in items:
            t = measure(case, t_gen, runner, args.repeat)
            for k, (w, c) in t.items():
                wall[k] += w
                cpu[k] += c
            if args.verbose:
                print(f"  {label:<12} {case.case_id} " + " ".join(
                    f"{k} {w:.4f}/{c:.4f}" for k, (w, c) in t.items()))
        print(f"\n{set_name}: {len(items)} cases, load average {os.getloadavg()[0]:.1f} at end")
        print(f"  {'stage':<14} {'wall s':>8} {'/ SDPA':>7} {'/ pair':>7}   "
              f"{'CPU s':>8} {'/ SDPA':>7} {'/ pair':>7}")
        pair_w = wall["golden_fp64"] + wall["golden_device"]
        pair_c = cpu["golden_fp64"] + cpu["golden_device"]
        for k in (*HOST, "sdpa"):
            print(f"  {k:<14} {wall[k]:8.3f} {wall[k] / wall['sdpa']:6.2f}x "
                  f"{wall[k] / pair_w:7.1%}   {cpu[k]:8.3f} {cpu[k] / cpu['sdpa']:6.2f}x "
                  f"{cpu[k] / pair_c:7.1%}")
        host = sum(cpu[k] for k in HOST)
        print(f"  host-side cases per CPU-second: {len(items) / host:.2f} "
              f"({host:.2f} CPU-s for generate+materialise+goldens+diff)")
        print("  targets (nightly): diff <= 15% and materialise <= 15% of the golden pair")

if __name__ == "__main__":
    main()
