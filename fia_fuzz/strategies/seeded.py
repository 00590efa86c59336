"""Seeded draws that depend on the seed alone, not on what the process imported.

Hypothesis mixes into its number and string draws constants it collects from
every *local* module loaded so far (an editable install's sources and the
tests count; an installed wheel's do not). So one seed drew one case stream
before `import fia_fuzz.cli` and another after it, a test's draws changed with
the tests run before it, and a campaign's partitions, which must draw one
shared stream, could drift apart when their processes had loaded different
runner modules. While a seeded draw runs, `fixed_constants` leaves that pool
empty; Hypothesis's own global constants stay (fixed per Hypothesis version).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hypothesis.internal.conjecture import providers


def _no_local_constants() -> providers.Constants:
    return providers.Constants()


@contextlib.contextmanager
def fixed_constants() -> Iterator[None]:
    """Draws inside see no module constants (a no-op on a Hypothesis without the pool)."""
    saved = getattr(providers, "_get_local_constants", None)
    if saved is None:
        yield
        return
    providers._get_local_constants = _no_local_constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = saved
        providers.CONSTANTS_CACHE.cache.clear()
