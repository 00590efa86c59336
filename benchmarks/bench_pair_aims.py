"""Cost of pair aims per nightly draw, as a ratio against the same draws unaimed.

A pair-aimed draw pins its values as a filter does and draws again when a path cannot
carry them (strategies/pair_aims.py, PAIR_TRIES), so it must stay cheap next to an
unaimed draw. Prints draws/s of the nightly stream with aims on and off (both measured
here, in this process, alternating) and their ratio.

    .venv/bin/python benchmarks/bench_pair_aims.py [DRAWS] [RULES]
"""

from __future__ import annotations

import sys
import time

from fia_fuzz.strategies import pair_aims
from fia_fuzz.strategies.sample import draw_cases


def rate(n: int, rules: str, aimed: bool, seed: int) -> float:
    start = time.perf_counter()
    with pair_aims.unaimed(not aimed):
        draw_cases(n, seed, "nightly", rules=rules)
    return n / (time.perf_counter() - start)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rules = sys.argv[2] if len(sys.argv) > 2 else "docs"
    draw_cases(20, 99, "nightly", rules=rules)  # warm-up: imports, the stored schedule
    on, off = [], []
    for seed in (1, 2):
        on.append(rate(n, rules, True, seed))
        off.append(rate(n, rules, False, seed))
    a, b = sum(on) / len(on), sum(off) / len(off)
    print(f"nightly draws/s, rules {rules}, {n} draws x 2 seeds: pair aims on {a:.0f}, "
          f"off {b:.0f}; on/off = {a / b:.2f}")


if __name__ == "__main__":
    main()
