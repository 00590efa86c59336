"""torch_npu wheels for the NPU contract tests: downloaded once per machine, never installed.

Installing torch_npu breaks `import torch` without the Ascend toolkit, so the
tests read files out of the wheel (a zip) instead. Wheels land in
`.cache/torch_npu/` at the repo root (git-ignored); a lock makes xdist workers
share one download. A failed download fails the test, or skips it when the
package index cannot be reached at all and CI is not set (CI has a network).
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "torch_npu"
#: The eager v1/v2 schemas (`- func:` lines).
YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
#: TorchAir's `air::npu_fused_infer_attention_score_v2`: schema (lib.define) and meta function.
TORCHAIR_V2 = "torch_npu/dynamo/torchair/ops/_npu_fused_infer_attention_score_v2.py"
#: torch_npu's meta functions (shape inference) of its eager ops.
META = "torch_npu/op_plugin/meta/_meta_registrations.py"


def _index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


def torch_npu_wheel(version: str) -> Path:
    """The torch_npu `version` wheel for this Python, downloaded on first use."""
    CACHE.mkdir(parents=True, exist_ok=True)
    pattern = f"torch_npu-{version}-*.whl"
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(CACHE.glob(pattern))
        if not found:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "--timeout", "60", f"torch-npu=={version}", "-d", str(CACHE)],
                capture_output=True, text=True, timeout=900)
            if done.returncode:
                if not os.environ.get("CI") and not _index_reachable():
                    pytest.skip(f"no network: cannot download torch-npu=={version}")
                pytest.fail(f"pip download torch-npu=={version} failed:\n"
                            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
            found = sorted(CACHE.glob(pattern))
    return found[0]


def yaml_schema(wheel: zipfile.ZipFile, op: str) -> str:
    """The `- func:` schema line of eager op `op` in the wheel's codegen yaml."""
    m = re.search(rf"^- func: ({op}\(.*\) -> .*)$", wheel.read(YAML).decode(), re.M)
    assert m, f"{op} not found in {YAML}"
    return m.group(1)
