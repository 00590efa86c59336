"""repro_aclnn.c: a bundle from an aclnn runner holds a standalone C program that rebuilds
the call from raw files, runs the two phases and compares with the stored golden. Here it
is compiled against the stub (headers in include/, test doubles) and run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from aclnn_stub import INCLUDE, compiler, contract_problems, read_log

from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.runners import get_runner
from fia_fuzz.strategies.sample import draw_cases

#: (runner, filters): one bundle each.
BUNDLES = [
    ("aclnn-v4", {"paged": True, "lse": True}),
    ("aclnn-v4", {"view": "strided"}),
    ("aclnn-v4", {"cache": "NZ"}),
    ("aclnn-v2", {"kv_list": True}),
    ("aclnn-ifa-v4", {"branch": "decode", "paged": True}),
]


def _case(runner: str, filters: dict):
    r = get_runner(runner)
    return next(c for c in draw_cases(15, seed=21, **filters) if r.supports(c)[0])


def _outputs(case) -> dict[str, np.ndarray]:
    call = case.call()
    fp64 = npu_fused_infer_attention_score(**call, precision="fp64")
    device = npu_fused_infer_attention_score(**call)
    return {"attention_out": device[0], "softmax_lse": device[1],
            "attention_out_fp64": fp64[0], "softmax_lse_fp64": fp64[1],
            "attention_out_device": device[0], "softmax_lse_device": device[1]}


def _build(bundle: Path, stub_home: Path, cc: str | None, lang: list[str]) -> Path:
    assert cc is not None
    exe = bundle / "repro_aclnn"
    lib = stub_home / "lib64"
    subprocess.run([cc, *lang, "repro_aclnn.c", "-o", str(exe), "-Wall", "-Werror",
                    f"-I{INCLUDE}", f"-L{lib}", "-lascendcl", "-lnnopbase", "-lopapi", "-lm",
                    f"-Wl,-rpath,{lib}"], cwd=bundle, check=True, capture_output=True,
                   text=True)
    return exe


@pytest.mark.parametrize("runner,filters", BUNDLES,
                         ids=[f"{r}-{'-'.join(map(str, f.values()))}" for r, f in BUNDLES])
def test_the_bundle_program_compiles_runs_and_compares(runner: str, filters: dict,
                                                       stub_home: Path, tmp_path: Path) -> None:
    cc = compiler()
    case = _case(runner, filters)
    outputs = _outputs(case)
    bundle = write_bundle(tmp_path / "run", case, {"runner": runner, "runner_spec": runner},
                          outputs)
    text = (bundle / "repro_aclnn.c").read_text()
    assert '#include "acl/acl.h"' in text and "CHECK_RET" in text and "GetWorkspaceSize" in text
    assert "repro_aclnn" in (bundle / "repro.txt").read_text()
    exe = _build(bundle, stub_home, cc, [])
    env = {**os.environ, "STUB_ACL_LOG": str(tmp_path / "pass.jsonl")}
    # the stub "computes" the golden (its launch copies these bytes to the outputs): PASS
    out_file, lse_file = tmp_path / "out.bin", tmp_path / "lse.bin"
    out_file.write_bytes(np.ascontiguousarray(outputs["attention_out_device"]).tobytes())
    lse_file.write_bytes(np.ascontiguousarray(outputs["softmax_lse_device"]).tobytes())
    env.update(STUB_ACL_OUT_FILE=str(out_file), STUB_ACL_LSE_FILE=str(lse_file))
    done = subprocess.run([str(exe)], cwd=bundle, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("PASS"), done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("attention_out: "))
    assert line.endswith("-> ok")
    log = read_log(tmp_path / "pass.jsonl")
    final = [r for r in log if r["fn"] == "aclFinalize"]
    assert final and final[0]["abuse"] == 0
    call = case.call()
    problems = contract_problems(runner, call, log, None, final[0]["live"], final[0]["abuse"])
    assert not problems, problems  # the program passed what the runner passes
    # the stub's byte pattern instead of the golden: FAIL, exit 1
    env.pop("STUB_ACL_OUT_FILE")
    env["STUB_ACL_LOG"] = str(tmp_path / "fail.jsonl")
    done = subprocess.run([str(exe)], cwd=bundle, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stdout.rstrip().endswith("FAIL"), done.stdout
    assert "attention_out: " in done.stdout and "-> FAIL" in done.stdout
    # an error status: exit 2 with the library's message
    env["STUB_ACL_FAIL"] = "aclnnFusedInferAttentionScoreV4GetWorkspaceSize=161002," \
        "aclnnFusedInferAttentionScoreV2GetWorkspaceSize=161002," \
        "aclnnIncreFlashAttentionV4GetWorkspaceSize=161002"
    done = subprocess.run([str(exe)], cwd=bundle, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "ERROR: 161002: EZ9999: stub" in done.stdout, done.stdout


def test_the_program_is_also_valid_cpp(stub_home: Path, tmp_path: Path) -> None:
    """The documents' examples are C++: the same file compiles as C++ too."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no C++ compiler")
    case = _case("aclnn-v4", {"kv_list": True})
    bundle = write_bundle(tmp_path / "run", case, {"runner": "aclnn-v4"}, None)
    exe = _build(bundle, stub_home, gxx, ["-x", "c++"])
    done = subprocess.run([str(exe)], cwd=bundle, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "STUB_ACL_LOG": str(tmp_path / "log.jsonl")})
    assert done.returncode == 0 and "no stored golden" in done.stdout, done.stdout


def test_other_runners_get_no_c_program(tmp_path: Path) -> None:
    case = _case("aclnn-v4", {})
    bundle = write_bundle(tmp_path / "run", case, {"runner": "torch-sdpa"}, None)
    assert not (bundle / "repro_aclnn.c").exists() and not (bundle / "aclnn").exists()
