"""Rule profiles: the documented rules, or a chip's own argument checks over them.

A profile is data: a name, the documented rules it drops (`removed`, each
with the reason), the documented rules it swaps for its own (`replaced`:
doc id -> device id, so both ids stay visible), the rules it adds (`added`)
and an optional shortcut (`accept_when`: a check that, once the argument
rules `args.*` pass, accepts the call without the rest, as a device that
returns early). `docs` is the documented model, unchanged; a new chip is a
new module registering one more Profile here, with no change to the engine.
"""

from fia_fuzz.rules.profiles import (
    a2_routes,  # noqa: F401  (registers the route features)
    atlas_a2,  # noqa: F401  (registers atlas-a2)
)
from fia_fuzz.rules.profiles.profile import (
    DEFAULT,
    PROFILES,
    Profile,
    all_rules,
    get,
    names,
    register,
)

__all__ = ["DEFAULT", "PROFILES", "Profile", "all_rules", "get", "names", "register"]
