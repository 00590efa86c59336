"""Shared test settings: a fast Hypothesis profile for CI, a thorough one for campaigns."""

import os

from hypothesis import HealthCheck, settings

# CI is derandomised so a red run reproduces and a green one is not luck of the draw;
# the thorough profile explores fresh examples each time.
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FIA_HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header(config) -> str:
    """The machine kind golden outputs are checked on, and whether its bits are pinned
    (tests/golden/test_golden_pinned.py)."""
    import json
    from pathlib import Path

    from fia_fuzz.numerics.environment import machine_kind

    digests = Path(__file__).parent / "golden" / "pinned_cases" / "digests.json"
    kind = machine_kind()
    pinned = kind in json.loads(digests.read_text())["golden"]
    return (f"golden machine kind: {kind} ("
            + ("recorded: golden bits checked)" if pinned else
               "not recorded: golden bits not pinned, checked within the cross-kind bound)"))
