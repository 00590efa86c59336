"""The documented constraints of FIA, one module per concern.

Importing this package registers every rule in `fia_fuzz.spec.rules.RULES`;
the import order below is the evaluation order (arguments before shapes
before features), so the cheapest, most basic violation is reported first.
"""

# isort: off
from fia_fuzz.spec.rulebook import (  # noqa: F401
    arguments,
    dtypes,
    layouts,
    heads,
    dims,
    lengths,
    masks,
    pse,
    padding,
    kvlist,
    paged,
    prefix,
    antiquant,
    quant,
    rope,
    tnd,
    nz,
    outputs,
)
# isort: on
