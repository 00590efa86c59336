"""The environment that decides a case's bits: the libraries that materialise, narrow and
compute it, the OpenBLAS core and the CPU architecture, as one small dict.

Every result row, campaign case file and bundle records it beside the case's input
digest, so a repro whose inputs differ can name what moved. Versions are read from the
installed distributions' metadata, never by importing them: torch_npu without the Ascend
toolkit breaks `import torch`, and torch costs seconds to import.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys
from collections.abc import Mapping

from fia_fuzz.numerics.blas import blas_core, blas_version

#: Distributions whose version is recorded, by the key they are recorded under.
DISTRIBUTIONS = {"numpy": "numpy", "ml_dtypes": "ml_dtypes", "torch": "torch",
                 "torch_npu": "torch_npu", "mindspore": "mindspore", "numba": "numba"}
#: Every key of `environment()`, in the order it is shown.
KEYS = ("python", *DISTRIBUTIONS, "openblas", "openblas_core", "machine")


def _version(distribution: str) -> str | None:
    """The installed distribution's version; without metadata (a build installed from
    source), the module's own `__version__` if something already imported it, else None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        found = getattr(sys.modules.get(distribution), "__version__", None)
        return None if found is None else str(found)


@functools.lru_cache(maxsize=1)
def _environment() -> tuple[tuple[str, str | None], ...]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    found.update((key, _version(dist)) for key, dist in DISTRIBUTIONS.items())
    found.update(openblas=blas_version(), openblas_core=blas_core(),
                 machine=platform.machine() or None)
    return tuple((k, found[k]) for k in KEYS)


def environment() -> dict[str, str | None]:
    """{key: version or name} for `KEYS` (None: absent or unknown), computed once per
    process; a fresh dict each call."""
    return dict(_environment())


def differences(recorded: Mapping[str, object], here: Mapping[str, object] | None = None
                ) -> list[str]:
    """'key recorded -> here' for each recorded key whose value differs from this
    environment's (`here`, default `environment()`; None shows as absent); keys the record
    lacks are not compared."""
    here = environment() if here is None else here
    keys = (*KEYS, *sorted(set(recorded) - set(KEYS)))
    return [f"{k} {_shown(recorded[k])} -> {_shown(here.get(k))}" for k in keys
            if k in recorded and recorded[k] != here.get(k)]


def _shown(value: object) -> str:
    return "absent" if value is None else str(value)
