"""Errors, availability, device binding and the prototype tables of the aclnn runners."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from aclnn_stub import OPS, SOURCE, Stub, prototype_params, read_log

from fia_fuzz.runners import get_runner
from fia_fuzz.runners.aclnn.prototypes import INTERFACES, OUTPUTS
from fia_fuzz.runners.aclnn.runner import AclnnError
from fia_fuzz.runners.base import DEVICE_INDEX_ENV
from fia_fuzz.runners.isolation import IsolatedRunner
from fia_fuzz.strategies.sample import draw_cases

NAMES = tuple(INTERFACES)


def _case(name: str, **filters):
    filters = {"branch": "decode", **filters} if name == "aclnn-ifa-v4" else filters
    runner = get_runner(name)
    return next(c for c in draw_cases(20, seed=3, kv_list=True, **filters)
                if runner.supports(c)[0])


@pytest.mark.parametrize("name", NAMES)
def test_absent_cann_is_a_clear_unavailable_reason(name: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "nowhere"))
    ok, why = get_runner(name).available()
    assert not ok
    assert why.startswith(f"{name}: libascendcl.so not found")
    assert "ASCEND_HOME_PATH" in why and "LD_LIBRARY_PATH" in why and "set_env.sh" in why
    with pytest.raises(AclnnError, match="libascendcl.so not found"):
        get_runner(name).run(_case(name).call())


@pytest.mark.parametrize("name", NAMES)
def test_the_stub_makes_every_runner_available(name: str, stub: Stub) -> None:
    assert get_runner(name).available() == (True, "")
    meta = get_runner(name).metadata()
    assert meta["api"] == OPS[name] and "libopapi.so" in meta["libraries"]


#: (function that fails, its status, what the error must say).
FAULTS = [
    ("{op}GetWorkspaceSize", 161002, "161002 (ACLNN_ERR_PARAM_INVALID)"),
    ("{op}GetWorkspaceSize", 161001, "161001 (ACLNN_ERR_PARAM_NULLPTR)"),
    ("{op}", 361001, "361001 (ACLNN_ERR_RUNTIME_ERROR)"),
    ("aclrtSynchronizeStream", 507035, "aclrtSynchronizeStream returned 507035"),
    ("aclrtMemcpy", 507899, "aclrtMemcpy"),
    ("aclrtMalloc", 207001, "aclrtMalloc"),
    ("aclCreateTensorList", 1, "aclCreateTensorList(key) returned NULL"),
    ("aclCreateTensor", 1, "aclCreateTensor(query) returned NULL"),
    ("aclrtCreateStream", 107002, "aclrtCreateStream returned 107002"),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fn,code,says", FAULTS)
def test_an_error_status_is_a_clear_error_with_nothing_leaked(
        name: str, fn: str, code: int, says: str, stub: Stub,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fn = fn.format(op=OPS[name])
    monkeypatch.setenv("STUB_ACL_FAIL", f"{fn}={code}")
    case = _case(name)
    stub.new_log(monkeypatch)
    with pytest.raises(AclnnError) as err:
        get_runner(name).run(case.call())
    message = str(err.value)
    assert message.startswith(f"{name}: ") and says in message, message
    if fn not in ("aclCreateTensor", "aclCreateTensorList"):
        assert f"stub: {fn} failed on request (status {code})" in message  # aclGetRecentErrMsg
    assert stub.live() == dict.fromkeys(stub.live(), 0) and stub.abuse() == 0


def test_a_workspace_that_cannot_be_allocated_frees_the_executor(
        stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inputs' allocations succeed, the workspace's fails: the executor
    GetWorkspaceSize returned is destroyed (aclDestroyAclOpExecutor), nothing leaks."""
    case = _case("aclnn-v4")
    log = stub.new_log(monkeypatch)
    monkeypatch.setenv("STUB_ACL_WORKSPACE", "123456")
    monkeypatch.setattr("fia_fuzz.runners.aclnn.runner._Session.malloc", _failing_at(123456))
    with pytest.raises(AclnnError, match=r"aclrtMalloc\(123456\)"):
        get_runner("aclnn-v4").run(case.call())
    assert [r["fn"] for r in read_log(log)].count("aclDestroyAclOpExecutor") == 1
    assert stub.live() == dict.fromkeys(stub.live(), 0) and stub.abuse() == 0


def _failing_at(size: int):
    from fia_fuzz.runners.aclnn import runner as mod

    real = mod._Session.malloc

    def malloc(self, nbytes):
        if nbytes == size:
            self.check(207001, f"aclrtMalloc({nbytes})")
        return real(self, nbytes)

    return malloc


def test_errors_come_back_from_the_isolation_worker_and_the_bound_device_is_set(
        stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    case = _case("aclnn-v4")
    log = stub.new_log(monkeypatch)
    monkeypatch.setenv("STUB_ACL_FAIL", f"{OPS['aclnn-v4']}GetWorkspaceSize=161002")
    runner = IsolatedRunner("aclnn-v4", timeout=120, device=3)
    try:
        with pytest.raises(RuntimeError, match=r"AclnnError: aclnn-v4: "
                           r"aclnnFusedInferAttentionScoreV4GetWorkspaceSize returned 161002 "
                           r"\(ACLNN_ERR_PARAM_INVALID\): EZ9999: stub"):
            runner.run(case.call())
        devices = [r["device"] for r in read_log(log) if r["fn"] == "aclrtSetDevice"]
        # the worker makes device 3 the only visible one (ASCEND_RT_VISIBLE_DEVICES=3)
        assert devices == [0]
        assert runner.metadata()["bound_device"] == "3"
    finally:
        runner.close()


def test_device_index_without_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = get_runner("aclnn-v4")
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv(DEVICE_INDEX_ENV, raising=False)
    assert runner.device_id() == 0
    monkeypatch.setenv(DEVICE_INDEX_ENV, "5")
    assert runner.device_id() == 5
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "5")
    assert runner.device_id() == 0


# ---- the tables against the prototypes ------------------------------------------------------

def _seeds() -> Path | None:
    root = Path(__file__).resolve().parents[3]
    candidates = [root.parent / "shared" / "seeds"]
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute",
                                 "--git-common-dir"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        candidates.append(Path(common).parent.parent / "shared" / "seeds")
    except (OSError, subprocess.CalledProcessError):
        pass
    return next((c for c in candidates if (c / "README.md").exists()), None)


SEED_FILES = {"aclnn-v2": "000_123638891055dff8.txt", "aclnn-v4": "001_930a6e6a96d7cc24.txt",
              "aclnn-ifa-v4": "002_d5416267547d618d.txt"}


def _table(name: str) -> list[tuple[str, str]]:
    return [(p.ctype, p.name) for p in INTERFACES[name].params]


@pytest.mark.parametrize("name", NAMES)
def test_each_table_is_the_stub_prototype(name: str) -> None:
    iface = INTERFACES[name]
    assert prototype_params(SOURCE.read_text(), iface.workspace_symbol) == _table(name)
    assert [p.canonical for p in iface.params if p.canonical in OUTPUTS][0] == "attention_out"


@pytest.mark.parametrize("name", NAMES)
def test_each_table_is_the_documented_prototype(name: str) -> None:
    seeds = _seeds()
    if seeds is None:
        pytest.skip("the vendor documents (shared/seeds) are not beside this checkout")
    text = (seeds / SEED_FILES[name]).read_text()
    assert prototype_params(text, INTERFACES[name].workspace_symbol) == _table(name)
