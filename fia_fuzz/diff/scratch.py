"""Reusable float64 work arrays for the differ: one output's worth, kept between cases.

The diff's arithmetic is a few passes over each output; a fresh array of
millions of elements costs more than that in page faults (the kernel maps and
zeroes every page on first touch, erratically slower under memory pressure).
`take` lends a 1-D array from this thread's free list, `give` returns it. A
buffer is in one place at a time, so nothing lent can be overwritten behind
its borrower; one that is never given back is freed as usual. At most
`KEEP_BUFFERS` buffers of up to `KEEP_ELEMENTS` elements each stay allocated.
"""

from __future__ import annotations

import threading

import numpy as np

#: Largest buffer kept for reuse (64 MiB of float64); larger ones are freed when given.
KEEP_ELEMENTS = 1 << 23
#: Buffers kept per thread.
KEEP_BUFFERS = 8
_local = threading.local()


def _free() -> list[np.ndarray]:
    if not hasattr(_local, "free"):
        _local.free = []
    return _local.free


def take(n: int) -> np.ndarray:
    """A float64 array of `n` elements, contents undefined: the smallest free buffer that
    holds it, else a new one."""
    free = _free()
    fits = [i for i, b in enumerate(free) if b.size >= n]
    if not fits:
        return np.empty(n)
    i = min(fits, key=lambda j: free[j].size)
    return free.pop(i)[:n]


def give(*arrays: np.ndarray | None) -> None:
    """Return arrays from `take` (or views of them) for reuse."""
    free = _free()
    for a in arrays:
        if a is None:
            continue
        base = a if a.base is None else a.base
        if isinstance(base, np.ndarray) and base.dtype == np.float64 and base.ndim == 1 \
                and base.size <= KEEP_ELEMENTS and all(b is not base for b in free):
            free.append(base)
            if len(free) > KEEP_BUFFERS:
                del free[min(range(len(free)), key=lambda j: free[j].size)]
