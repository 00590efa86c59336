"""Chunks of a flat array that are nodes of NumPy's pairwise-summation tree.

The differ makes a dozen passes over each output. Over a whole array of
millions of float64 elements every pass goes to memory (and every fresh work
array to the kernel's page faults); over a chunk of at most `CHUNK` elements
the work arrays stay in the CPU cache. The sums must stay NumPy's: np.sum of
a contiguous float64 array adds pairwise, halving the range (the first half
rounded down to a multiple of 8) down to pieces of at most 128 elements. A
chunk that is a node of that tree, summed by np.sum, gives that node's partial
sum exactly, so adding the chunks' sums along the tree (`tree_sum`) gives
np.sum of the whole array bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

#: Most elements per chunk: a few float64 work arrays of it fit a core's L2 cache.
CHUNK = 1 << 15


def _halves(n: int) -> tuple[int, int]:
    """NumPy's pairwise split of n elements (n > 128)."""
    half = n // 2
    half -= half % 8
    return half, n - half


def split(n: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    """(start, stop) of the tree nodes of at most `chunk` (>= 128) elements covering
    range(n), in order."""
    out: list[tuple[int, int]] = []

    def walk(start: int, size: int) -> None:
        if size <= chunk:
            if size:
                out.append((start, start + size))
            return
        left, right = _halves(size)
        walk(start, left)
        walk(start + left, right)
    walk(0, n)
    return out


def tree_sum(parts: Sequence[float], n: int, chunk: int = CHUNK) -> float:
    """np.sum of an array of n float64 elements from the np.sum of each of its `split`
    chunks, in order."""
    it: Iterator[float] = iter(parts)

    def walk(size: int) -> float:
        if size <= chunk:
            return float(next(it)) if size else 0.0
        left, right = _halves(size)
        return walk(left) + walk(right)
    return walk(n)
