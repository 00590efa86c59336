"""The catalogue's relations; importing this package registers them in catalogue order."""

from fia_fuzz.metamorphic.relations import (  # noqa: F401, I001  (registration; catalogue order)
    layout,
    heads,
    paged,
    kvlist,
    padding,
    prefix,
    sparse,
    decode,
    sinks,
    api,
    batch,
    lengths,
    wrapper,
)
