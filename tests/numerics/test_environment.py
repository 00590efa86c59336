"""The environment recorded beside a case's input digest: stable keys, versions read from
metadata once per process (torch_npu and torch never imported), and the versions that
differ between two environments named."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
import sys

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
