"""Fixed chunks of a flat array, and the sum of their partial sums.

The differ makes a dozen passes over each output. Over a whole array of
millions of float64 elements every pass goes to memory (and every fresh work
array to the kernel's page faults); over a chunk of at most `CHUNK` elements
the work arrays stay in the CPU cache. Each chunk's sums are BLAS dot products
(one fused pass; `metrics.py` holds BLAS to one thread, so they do not depend
on the thread count) and `total` adds the chunks' partial sums correctly
rounded, so a metric depends only on the chunk size, never on the order the
partials come in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Most elements per chunk: a few float64 work arrays of it fit a core's L2 cache.
CHUNK = 1 << 15


def split(n: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    """(start, stop) of consecutive chunks of at most `chunk` elements covering range(n)."""
    return [(s, min(s + chunk, n)) for s in range(0, n, chunk)]


def total(parts: Sequence[float]) -> float:
    """The correctly rounded sum of the chunks' partial sums; inf or nan where a plain sum
    gives one (an actual with +inf in one chunk and -inf in another), which fsum raises on."""
    try:
        return math.fsum(parts)
    except (OverflowError, ValueError):
        return float(sum(parts))
