"""Threads for the golden: its own tile workers, with NumPy's BLAS held to one thread.

The attention step makes many small matmuls (one per head and tile). A
multi-threaded OpenBLAS splits each of them across threads that spin while
waiting; on a busy machine (a campaign runs one worker per core) every split
waits for a descheduled thread and the golden runs several times slower.
So while the golden computes, BLAS runs single-threaded and the golden
spreads whole tiles over its own threads instead (NumPy releases the GIL in
matmul and in ufunc loops). FIA_GOLDEN_THREADS sets the number of tile
threads (default: the CPU count, at most 8).

The kernels OpenBLAS runs are chosen when it loads (`blas_core`; the
environment's OPENBLAS_CORETYPE overrides its CPU detection) and they fix the
rounding of the golden's fp32 and fp64 matmuls: compare golden outputs bit for
bit only under the same core.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: (set, get) symbol names of the OpenBLAS builds NumPy ships or links.
_SYMBOLS = (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
            ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
            ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
            ("openblas_set_num_threads", "openblas_get_num_threads"))
#: Names of the function returning the core (kernel set) OpenBLAS chose, by build.
_CORENAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
              "openblas_get_corename64_", "openblas_get_corename")


def _openblas() -> tuple[Any, Any, Any] | None:
    """(set_num_threads, get_num_threads, get_corename or None) of the OpenBLAS loaded in
    this process, or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()
                     and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                corename = next((getattr(lib, n) for n in _CORENAMES if hasattr(lib, n)), None)
                if corename is not None:
                    corename.restype = ctypes.c_char_p
                return getattr(lib, set_name), getattr(lib, get_name), corename
    return None


_BLAS = _openblas()
#: The environment variable that sets the golden's tile threads.
THREADS_ENV = "FIA_GOLDEN_THREADS"


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the body with OpenBLAS on one thread, restoring its setting after."""
    if _BLAS is None:
        yield
        return
    set_threads, get_threads, _ = _BLAS
    before = int(get_threads())
    set_threads(1)
    try:
        yield
    finally:
        set_threads(before)


def blas_core() -> str | None:
    """The core whose kernels the loaded OpenBLAS runs (e.g. 'Haswell'), or None if unknown."""
    if _BLAS is None or _BLAS[2] is None:
        return None
    return _BLAS[2]().decode(errors="replace").strip() or None


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

