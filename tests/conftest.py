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
