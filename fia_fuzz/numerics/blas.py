"""OpenBLAS, as NumPy loaded it: its thread count held to one, and the kernel set it runs.

A multi-threaded OpenBLAS splits each matmul, and a long dot product, across
threads: on a busy machine every split waits for a descheduled thread, and a
dot product's last bits change with the thread count. The golden's many small
matmuls and the differ's chunk sums run under `single_threaded_blas`.

The kernels OpenBLAS runs are chosen when it loads (`blas_core`; the
environment's OPENBLAS_CORETYPE overrides its CPU detection) and they fix the
rounding of fp32 and fp64 matmuls: compare golden outputs bit for bit only
under the same core.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

import numpy  # noqa: F401  (loads the OpenBLAS this module finds among the process's maps)

#: (set, get) symbol names of the OpenBLAS builds NumPy ships or links.
_SYMBOLS = (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
            ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
            ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
            ("openblas_set_num_threads", "openblas_get_num_threads"))
#: Names of the function returning OpenBLAS's build string ("OpenBLAS 0.3.31 ..."), by build.
_CONFIGS = ("scipy_openblas_get_config64_", "scipy_openblas_get_config",
            "openblas_get_config64_", "openblas_get_config")
#: Names of the function returning the core (kernel set) OpenBLAS chose, by build.
_CORENAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
              "openblas_get_corename64_", "openblas_get_corename")


#: (prefix, suffix, integer bits) of the CBLAS names, by build: `<prefix>sgemm<suffix>`.
_CBLAS = (("scipy_cblas_", "64_", 64), ("scipy_cblas_", "", 32), ("cblas_", "64_", 64),
          ("cblas_", "", 32))


def _library() -> Any:
    """The OpenBLAS library NumPy loaded in this process (ctypes), or None: the one inside
    NumPy's package where there is one (torch may bring its own)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()
                     and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths, key=lambda p: ("numpy" not in p, p)):  # NumPy's own first
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(lib, set_name) for set_name, _ in _SYMBOLS):
            return lib
    return None


def _openblas(lib: Any) -> tuple[Any, Any, Any] | None:
    """(set_num_threads, get_num_threads, get_corename or None) of OpenBLAS, or None."""
    if lib is None:
        return None
    for set_name, get_name in _SYMBOLS:
        if hasattr(lib, set_name) and hasattr(lib, get_name):
            corename = next((getattr(lib, n) for n in _CORENAMES if hasattr(lib, n)), None)
            if corename is not None:
                corename.restype = ctypes.c_char_p
            return getattr(lib, set_name), getattr(lib, get_name), corename
    return None


_LIB = _library()
_BLAS = _openblas(_LIB)


def blas_addresses() -> tuple[tuple[int, int], tuple[int, int], int] | None:
    """((cblas_sgemm, cblas_sgemv), (cblas_dgemm, cblas_dgemv) addresses, integer bits) in
    the OpenBLAS NumPy's matmul calls, for compiled code that must make the same calls
    (golden/job.py), or None when that library or those names are not found."""
    for prefix, suffix, bits in _CBLAS:
        names = [f"{prefix}{t}{op}{suffix}" for t in "sd" for op in ("gemm", "gemv")]
        if _LIB is not None and all(hasattr(_LIB, n) for n in names):
            s_mm, s_mv, d_mm, d_mv = (ctypes.cast(getattr(_LIB, n), ctypes.c_void_p).value or 0
                                      for n in names)
            return (s_mm, s_mv), (d_mm, d_mv), bits
    return None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the body with OpenBLAS on one thread, restoring its setting after."""
    if _BLAS is None:
        yield
        return
    set_threads, get_threads, _ = _BLAS
    before = int(get_threads())
    set_threads(1)
    try:
        yield
    finally:
        set_threads(before)


def blas_version() -> str | None:
    """The loaded OpenBLAS's version (e.g. '0.3.31.188.0'), or None if unknown: its kernels,
    and so the golden's matmul bits, change between releases."""
    config = next((getattr(_LIB, n) for n in _CONFIGS if _LIB is not None and hasattr(_LIB, n)),
                  None)
    if config is None:
        return None
    config.restype = ctypes.c_char_p
    words = config().decode(errors="replace").split()
    return words[1] if len(words) > 1 and words[0] == "OpenBLAS" else None


def blas_core() -> str | None:
    """The core whose kernels the loaded OpenBLAS runs (e.g. 'Haswell'), or None if unknown."""
    if _BLAS is None or _BLAS[2] is None:
        return None
    return _BLAS[2]().decode(errors="replace").strip() or None
