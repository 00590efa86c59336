"""Shared test settings: a fast Hypothesis profile for CI, a thorough one for campaigns."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FIA_HYPOTHESIS_PROFILE", "ci"))
