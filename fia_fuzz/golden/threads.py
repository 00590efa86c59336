"""Threads for the golden: its own tile workers, with NumPy's BLAS held to one thread.

The attention step makes many small matmuls (one per head and tile). A
multi-threaded OpenBLAS splits each of them across threads that spin while
waiting; on a busy machine (a campaign runs one worker per core) every split
waits for a descheduled thread and the golden runs several times slower.
So while the golden computes, BLAS runs single-threaded
(`fia_fuzz.numerics.blas`) and the golden spreads whole tiles over its own
threads instead (NumPy releases the GIL in matmul and in ufunc loops).
FIA_GOLDEN_THREADS sets the number of tile threads (default: the CPU count, at
most 8).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fia_fuzz.numerics.blas import single_threaded_blas

#: The environment variable that sets the golden's tile threads.
THREADS_ENV = "FIA_GOLDEN_THREADS"


def tile_threads() -> int:
    """Number of threads the golden spreads tiles over (FIA_GOLDEN_THREADS, default CPUs)."""
    given = os.environ.get(THREADS_ENV)
    if given:
        return max(1, int(given))
    return max(1, min(8, os.cpu_count() or 1))


def run_all(work: Callable[[Any], None], tasks: Iterable[Any]) -> None:
    """work(task) for every task, on the tile threads, with single-threaded BLAS."""
    tasks = list(tasks)
    threads = min(tile_threads(), len(tasks))
    with single_threaded_blas():
        if threads <= 1:
            for task in tasks:
                work(task)
            return
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(work, tasks):
                pass

