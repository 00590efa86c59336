"""Draw rate of the nightly stream with pair aims on and off, as a ratio.

With aims on, a stream's draws are seeded walks of the construction, half of them pinning
the pairs the stream has not carried yet (strategies/pair_aims.py: up to PAIR_TRIES walks
per aim); off (`--no-pair-aims`), the profile's own mix built from Hypothesis's choices.
Prints draws/s of `draw_cases` (one stream, as `coverage --pairs` draws it) with aims on
and off (both measured here, in this process, alternating), their ratio, and how many
feasible pairs the aimed stream left uncovered.

    .venv/bin/python benchmarks/bench_pair_aims.py [DRAWS] [RULES]
"""

from __future__ import annotations

import sys
import time

from fia_fuzz.op.case import Case
from fia_fuzz.strategies import pair_aims, pair_coverage, pairs
from fia_fuzz.strategies.sample import draw_cases


def rate(n: int, rules: str, aimed: bool, seed: int) -> tuple[float, list[Case]]:
    start = time.perf_counter()
    with pair_aims.unaimed(not aimed):
        drawn = draw_cases(n, seed, "nightly", rules=rules)
    return n / (time.perf_counter() - start), drawn


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rules = sys.argv[2] if len(sys.argv) > 2 else "docs"
    draw_cases(20, 99, "nightly", rules=rules)  # warm-up: imports, the stored schedule
    on, off, left = [], [], []
    for seed in (1, 2):
        r, drawn = rate(n, rules, True, seed)
        on.append(r)
        cov = pair_coverage.measure([c.features() for c in drawn], pairs.load(rules))
        left.append(len(cov.uncovered))
        off.append(rate(n, rules, False, seed)[0])
    a, b = sum(on) / len(on), sum(off) / len(off)
    print(f"nightly draws/s, rules {rules}, {n} draws x 2 seeds: pair aims on {a:.0f}, "
          f"off {b:.0f}; on/off = {a / b:.2f}; feasible pairs left uncovered (on): {left}")


if __name__ == "__main__":
    main()
