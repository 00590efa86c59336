"""Test doubles for `bench_campaign.py --failing-night`, named as such: never a backend.

Both are the golden model at device precision (as `runners.golden_runner.GoldenRunner`)
and both hash a sample of the inputs, so they cost the same per case.
`bench-double-failing-night` adds 1 to every output element of about FAIL_SHARE of the
cases (chosen by that hash: the same cases on every run), a planted systematic failure
such as a night on a new driver meets; `bench-double-passing-night` returns the golden's
outputs unchanged, the same campaign without failures. Loaded as plug-ins
(`night_doubles:failing_night`) with benchmarks/ on the path.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from fia_fuzz.runners.golden_runner import GoldenRunner

#: Share of cases the failing double breaks.
FAIL_SHARE = 0.3
#: Elements of each input the hash reads.
SAMPLE = 1024


def _planted(call: dict[str, Any]) -> bool:
    """Whether the call is one of the planted failures: a hash of SAMPLE elements spread
    over each of query, key and value, and their shapes."""
    h = hashlib.sha256()
    for name in ("query", "key", "value"):
        a = call.get(name)
        if isinstance(a, list):
            a = a[0] if a else None
        if a is None:
            continue
        flat = np.asarray(a).reshape(-1)
        h.update(repr(np.shape(a)).encode())
        h.update(np.ascontiguousarray(flat[:: max(1, flat.size // SAMPLE)]).tobytes())
    return int(h.hexdigest()[:8], 16) % 1000 < FAIL_SHARE * 1000


class PassingNightDouble(GoldenRunner):
    name = "bench-double-passing-night"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        _planted(call)  # the same work as the failing double's
        return super().run(call)


class FailingNightDouble(GoldenRunner):
    name = "bench-double-failing-night"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if _planted(call):
            out = (np.asarray(out).astype(np.float32) + 1.0).astype(np.asarray(out).dtype)
        return out, lse


def passing_night() -> PassingNightDouble:
    return PassingNightDouble()


def failing_night() -> FailingNightDouble:
    return FailingNightDouble()
