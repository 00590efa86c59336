"""The environment that decides a case's bits: the libraries that materialise, narrow and
compute it, the OpenBLAS core, NumPy's SIMD target, numba's vector target and the CPU
architecture, as one small dict; and the machine kind golden outputs are pinned for.

Every result row, campaign case file and bundle records it beside the case's input
digest, so a repro whose inputs differ can name what moved. Versions are read from the
installed distributions' metadata, never by importing them: torch_npu without the Ascend
toolkit breaks `import torch`, and torch costs seconds to import (numba is imported, for
its compile target, as the golden imports it anyway).
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys
from collections.abc import Mapping

import numpy as np

from fia_fuzz.numerics.blas import blas_core, blas_version

#: Distributions whose version is recorded, by the key they are recorded under.
DISTRIBUTIONS = {"numpy": "numpy", "ml_dtypes": "ml_dtypes", "torch": "torch",
                 "torch_npu": "torch_npu", "mindspore": "mindspore", "numba": "numba"}
#: Every key of `environment()`, in the order it is shown.
KEYS = ("python", *DISTRIBUTIONS, "openblas", "openblas_core", "numpy_simd", "numba_target",
        "machine")
#: The keys whose values make up the machine kind (`machine_kind`).
KIND_KEYS = ("machine", "openblas_core", "openblas", "numpy", "numpy_simd", "numba",
             "numba_target")


def _version(distribution: str) -> str | None:
    """The installed distribution's version; without metadata (a build installed from
    source), the module's own `__version__` if something already imported it, else None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        found = getattr(sys.modules.get(distribution), "__version__", None)
        return None if found is None else str(found)


def numpy_simd() -> str | None:
    """The SIMD target NumPy's dispatch runs here (e.g. 'X86_V3', 'AVX512_SKX', 'ASIMDHP'):
    the last of its build's dispatch targets this CPU has and NPY_DISABLE_CPU_FEATURES
    leaves on, else its baseline's last. Its float32 log differs between targets, so
    the golden's lse bits do."""
    core = getattr(np, "_core", None) or np.core  # NumPy 2 renamed numpy.core
    umath = core._multiarray_umath
    on = getattr(umath, "__cpu_features__", {})
    found = [t for t in getattr(umath, "__cpu_dispatch__", ()) if on.get(t)]
    baseline = list(getattr(umath, "__cpu_baseline__", ()))
    return (found or baseline or [None])[-1]


def numba_target() -> str | None:
    """What of numba's compile target decides the golden's bits: 'no-avx512' for an
    x86-64 target without AVX-512 (its compiled loops run 256-bit vectors whatever the
    CPU name: generic with F16C, sandybridge, haswell, skylake and znver3 give the same
    golden bits), else the target CPU's name (NUMBA_CPU_NAME or the host's; an AVX-512
    CPU's tuning picks 256- or 512-bit vectors, which order the reassociated row sums)."""
    try:
        import llvmlite.binding as ll
        from numba.core import config
    except ImportError:
        return None
    features = config.CPU_FEATURES
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    if platform.machine() in ("x86_64", "AMD64") and "-avx512f" in features.split(","):
        return "no-avx512"
    return config.CPU_NAME or ll.get_host_cpu_name()


def machine_kind(env: Mapping[str, object] | None = None) -> str | None:
    """The machine kind golden outputs are pinned for, from `env` (default this
    process's environment), e.g. 'x86_64/Haswell/OpenBLAS 0.3.31.188.0/numpy 2.4.6
    X86_V3/numba 0.68.1 no-avx512'; None when `env` lacks one of `KIND_KEYS` (an
    environment recorded before they all were)."""
    env = environment() if env is None else env
    if any(env.get(k) is None for k in KIND_KEYS):
        return None
    v = {k: env[k] for k in KIND_KEYS}
    return (f"{v['machine']}/{v['openblas_core']}/OpenBLAS {v['openblas']}/numpy {v['numpy']} "
            f"{v['numpy_simd']}/numba {v['numba']} {v['numba_target']}")


@functools.lru_cache(maxsize=1)
def _environment() -> tuple[tuple[str, str | None], ...]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    found.update((key, _version(dist)) for key, dist in DISTRIBUTIONS.items())
    found.update(openblas=blas_version(), openblas_core=blas_core(),
                 numpy_simd=numpy_simd(), numba_target=numba_target(),
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
