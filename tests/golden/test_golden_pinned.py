"""Golden outputs of stored cases are pinned bit for bit, per machine kind.

The cases (`pinned_cases/*.json`, one per family and value regime) are files, not
draws, so a venv with another Hypothesis runs the same calls. Their inputs are pinned
on every machine and in every venv (`scripts/compat.sh` runs this at the oldest and the
newest library versions): no library decides a rounding of ours. The golden's outputs
depend on the BLAS kernels and NumPy's own ufuncs (its log, its float64 sums), so they
are pinned per machine kind: the CPU architecture, the OpenBLAS core and release, and
NumPy's release (numerics/blas.py, numerics/environment.py).

Record a new machine kind: `python tests/golden/test_golden_pinned.py` prints its
entry for `digests.json`.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fia_fuzz.campaign.evaluate import golden_pair
from fia_fuzz.numerics.blas import blas_core, blas_version
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest

pytestmark = pytest.mark.compat

HERE = Path(__file__).parent / "pinned_cases"
CASES = sorted(p.stem for p in HERE.glob("*.json") if p.name != "digests.json")
PINNED = json.loads((HERE / "digests.json").read_text())


def machine() -> str:
    """The machine kind golden bits are pinned for (see the module docstring)."""
    return f"{platform.machine()}/{blas_core()}/OpenBLAS {blas_version()}/numpy {np.__version__}"


def _update(h: Any, x: Any) -> None:
    if isinstance(x, (list, tuple)):
        h.update(f"[{len(x)}".encode())
        for item in x:
            _update(h, item)
    elif isinstance(x, np.ndarray):
        h.update(f"{x.dtype} {x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    else:
        h.update(repr(x).encode())


def digest(x: Any) -> str:
    h = hashlib.sha256()
    _update(h, x)
    return h.hexdigest()[:16]


def _call(name: str) -> dict[str, Any]:
    return Case.from_json((HERE / f"{name}.json").read_text()).call()


def digests(name: str) -> dict[str, str]:
    call = _call(name)
    truth, baseline = golden_pair(call)
    return {"inputs": input_digest(call), "fp64": digest(truth), "device": digest(baseline)}


def test_every_case_is_pinned() -> None:
    assert CASES and set(PINNED["inputs"]) == set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_inputs_are_pinned(name: str) -> None:
    assert input_digest(_call(name)) == PINNED["inputs"][name]


@pytest.mark.parametrize("name", CASES)
def test_golden_outputs_are_pinned_on_this_machine_kind(name: str) -> None:
    kind = machine()
    if kind not in PINNED["golden"]:
        pytest.fail(f"no golden digests for machine kind {kind!r} (known: "
                    f"{sorted(PINNED['golden'])}); record it: python {__file__}")
    got = digests(name)
    assert {k: got[k] for k in ("fp64", "device")} == PINNED["golden"][kind][name]


if __name__ == "__main__":  # print this machine kind's entry for digests.json
    entry = {n: digests(n) for n in CASES}
    json.dump({"inputs": {n: d["inputs"] for n, d in entry.items()},
               "golden": {machine(): {n: {k: d[k] for k in ("fp64", "device")}
                                      for n, d in entry.items()}}},
              sys.stdout, indent=1, sort_keys=True)
    print()
