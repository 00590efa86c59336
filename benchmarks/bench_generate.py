"""How fast the campaign's stream draws cases, against the smoke stream in the same process.

Draws as a campaign partition's stream rounds do (campaign/partition.py): the stream's
strategy (`stream_strategy`, i.e. `recorded_cases(profile, rules)`) under Hypothesis, in
rounds of `round_size` examples seeded `derive_seed(seed, "round", r)`, generate phase
only, module constants fixed (strategies/seeded.py). Each stream is drawn --repeat times
per seed, alternating with its peer, so load from other processes falls on both alike.

Printed per stream: draws per CPU-second (process CPU time: on a shared machine, wall
time mostly measures the other processes; compare CPU figures) and per wall-second,
Hypothesis decisions per draw (a machine-independent measure of the work the stream
asks of Hypothesis), the CPU milliseconds of `case.features()` per drawn case (what
each row then needs; not part of the draw rate), and the digest of the stream's case
ids per seed (the same digest before and after a change: the change kept the stream).
Then the ratio of --profile's draw rate to the peer's (smoke: the stream no speed work
may change, so it stands for the machine).

Run: .venv/bin/python benchmarks/bench_generate.py [--profile nightly] [--peer smoke]
     [--rules docs] [--cases 300] [--seeds 0 1 2] [--repeat 1] [--ids DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path

from hypothesis import Phase, given
from hypothesis import seed as hseed

from fia_fuzz.campaign.config import CampaignConfig
from fia_fuzz.campaign.partition import _settings, derive_seed, stream_strategy
from fia_fuzz.op.case import Case
from fia_fuzz.strategies import pair_aims
from fia_fuzz.strategies.seeded import fixed_constants


def draw_stream(cfg: CampaignConfig, count: int) -> tuple[list[Case], int, float, float]:
    """(the first `count` cases of the stream, decisions they took, CPU s, wall s)."""
    strategy = stream_strategy(cfg)
    drawn: list[Case] = []
    decisions = [0]
    c0, t0 = time.process_time(), time.perf_counter()
    rnd = 0
    with pair_aims.stream(cfg.rules):  # one stream across rounds, as a campaign's
        while len(drawn) < count:
            @hseed(derive_seed(cfg.seed, "round", rnd))
            @_settings(cfg, [Phase.generate])
            @given(strategy)
            def step(d: tuple) -> None:
                case, choices, _ = d
                case.case_id  # noqa: B018  (the campaign keys every draw by it)
                drawn.append(case)
                decisions[0] += len(choices or ())

            with fixed_constants():
                step()
            rnd += 1
    return (drawn[:count], decisions[0], time.process_time() - c0,
            time.perf_counter() - t0)


def stream_digest(cases: list[Case]) -> str:
    return hashlib.sha256("\n".join(c.case_id for c in cases).encode()).hexdigest()[:16]


def features_ms(cases: list[Case]) -> float:
    """CPU ms per case of `features()` on fresh copies (a drawn case may hold them already)."""
    fresh = [Case(params=c.params, fills=c.fills, seed=c.seed, rules=c.rules) for c in cases]
    c0 = time.process_time()
    for c in fresh:
        c.features()
    return 1e3 * (time.process_time() - c0) / max(1, len(fresh))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="nightly")
    parser.add_argument("--peer", default="smoke")
    parser.add_argument("--rules", default="docs")
    parser.add_argument("--cases", type=int, default=300, help="draws per stream and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ids", type=Path, help="write each stream's case ids here")
    args = parser.parse_args()

    streams = list(dict.fromkeys((args.profile, args.peer)))
    cpu = dict.fromkeys(streams, 0.0)
    wall = dict.fromkeys(streams, 0.0)
    draws = dict.fromkeys(streams, 0)
    decisions = dict.fromkeys(streams, 0)
    feats: dict[str, list[float]] = {s: [] for s in streams}
    digests: dict[str, list[str]] = {s: [] for s in streams}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    for seed in args.seeds:
        for rep in range(args.repeat):
            for name in streams:
                cfg = CampaignConfig(profile=name, rules=args.rules, seed=seed)
                cases, n_dec, c, w = draw_stream(cfg, args.cases)
                cpu[name] += c
                wall[name] += w
                draws[name] += len(cases)
                decisions[name] += n_dec
                if rep == 0:
                    feats[name].append(features_ms(cases))
                    digests[name].append(f"seed {seed} {stream_digest(cases)}")
                    if args.ids:
                        args.ids.mkdir(parents=True, exist_ok=True)
                        (args.ids / f"{name}-{args.rules}-{seed}.txt").write_text(
                            "".join(f"{x.case_id}\n" for x in cases))
    print(f"load average {os.getloadavg()[0]:.1f} at end; {args.cases} draws per stream and "
          f"seed, seeds {args.seeds}, {args.repeat} time(s) each, rules {args.rules}")
    for name in streams:
        n = draws[name]
        print(f"  {name:<8} {n / cpu[name]:7.1f} draws/CPU-s {n / wall[name]:7.1f} draws/wall-s"
              f"  {decisions[name] / n:6.1f} decisions/draw"
              f"  features {sum(feats[name]) / len(feats[name]):.2f} CPU-ms/case"
              f"  ids: {', '.join(digests[name])}")
    if len(streams) == 2:
        rate = {s: draws[s] / cpu[s] for s in streams}
        print(f"  {args.profile} / {args.peer} draw rate (CPU): "
              f"{rate[args.profile] / rate[args.peer]:.2f}x")


if __name__ == "__main__":
    main()
