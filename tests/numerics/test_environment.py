"""The environment recorded beside a case's input digest: stable keys, versions read from
metadata once per process (torch_npu and torch never imported), and the versions that
differ between two environments named."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys

import pytest

from fia_fuzz.numerics import environment as env_mod
from fia_fuzz.numerics.blas import blas_core, blas_version
from fia_fuzz.numerics.environment import KEYS, differences, environment


def test_keys_and_values_are_this_process_s() -> None:
    env = environment()
    assert tuple(env) == KEYS == ("python", "numpy", "ml_dtypes", "torch", "torch_npu",
                                  "mindspore", "numba", "openblas", "openblas_core",
                                  "numpy_simd", "numba_target", "machine")
    assert env["python"] == platform.python_version()
    assert env["numpy"] == importlib.metadata.version("numpy")
    assert env["ml_dtypes"] == importlib.metadata.version("ml_dtypes")
    assert env["openblas_core"] == blas_core()
    assert env["openblas"] == blas_version() and (blas_version() or "0")[0].isdigit()
    assert env["machine"] == platform.machine()
    assert all(v is None or isinstance(v, str) for v in env.values())
    json.dumps(env)  # a row and a case file hold it as JSON


def test_computed_once_per_process(monkeypatch) -> None:
    first = environment()
    monkeypatch.setattr(env_mod.importlib.metadata, "version", lambda name: "moved")
    assert environment() == first
    environment()["numpy"] = "edited"  # each call gives a fresh dict
    assert environment() == first


def test_reading_it_imports_neither_torch_nor_torch_npu() -> None:
    code = ("import sys; from fia_fuzz.numerics.environment import environment; "
            "e = environment(); print(e['torch'] is not None, "
            "'torch' in sys.modules, 'torch_npu' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    has_torch = importlib.metadata.version("torch") is not None
    assert res.stdout.split() == [str(has_torch), "False", "False"]


def test_a_build_without_metadata_is_read_from_its_imported_module(monkeypatch) -> None:
    def no_metadata(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(env_mod.importlib.metadata, "version", no_metadata)
    monkeypatch.setitem(sys.modules, "torch_npu", type(sys)("torch_npu"))
    sys.modules["torch_npu"].__version__ = "2.5.1.post2"
    assert env_mod._version("torch_npu") == "2.5.1.post2"
    monkeypatch.delitem(sys.modules, "torch_npu")
    assert env_mod._version("torch_npu") is None  # never imported for it


def test_differences_name_each_moved_version() -> None:
    here = {**environment(), "numpy": "2.4.6", "ml_dtypes": "0.7.0", "torch_npu": None}
    recorded = {**here, "numpy": "1.26.4", "ml_dtypes": "0.5.4", "torch_npu": "2.5.1"}
    assert differences(recorded, here) == ["numpy 1.26.4 -> 2.4.6", "ml_dtypes 0.5.4 -> 0.7.0",
                                           "torch_npu 2.5.1 -> absent"]
    assert differences(here, here) == []
    # a key the record lacks is not compared; one this fia-fuzz does not know is
    assert differences({"numpy": here["numpy"], "cuda": "12.4"}, here) == ["cuda 12.4 -> absent"]


def _kind_in_subprocess(**env: str) -> list[str]:
    code = ("from fia_fuzz.numerics.environment import environment, machine_kind; "
            "e = environment(); print(e['numpy_simd'], e['numba_target'], machine_kind())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env={**os.environ, **env})
    return res.stdout.split(maxsplit=2)


def test_the_machine_kind_names_what_decides_the_golden_s_bits() -> None:
    env = environment()
    kind = env_mod.machine_kind()
    assert kind == (f"{env['machine']}/{env['openblas_core']}/OpenBLAS {env['openblas']}/"
                    f"numpy {env['numpy']} {env['numpy_simd']}/numba {env['numba']} "
                    f"{env['numba_target']}")
    assert env_mod.machine_kind({**env, "numpy_simd": None}) is None  # an older record


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 targets")
def test_numpy_s_simd_target_and_numba_s_vector_target_move_the_kind() -> None:
    """NumPy's dispatch target follows NPY_DISABLE_CPU_FEATURES (its float32 log's bits
    do); numba's target is its CPU's name unless AVX-512 is known to be off."""
    simd, numba, kind = _kind_in_subprocess()
    assert (numba == "no-avx512") == ("-avx512f" in llvmlite_features().split(","))
    if simd == "X86_V3":
        assert _kind_in_subprocess(NPY_DISABLE_CPU_FEATURES="X86_V3")[0] == "X86_V2"
    assert _kind_in_subprocess(NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="")[1] == "haswell"
    assert _kind_in_subprocess(NUMBA_CPU_NAME="haswell",
                               NUMBA_CPU_FEATURES="-avx512f")[1] == "no-avx512"


def llvmlite_features() -> str:
    import llvmlite.binding as ll

    return ll.get_host_cpu_features().flatten()
