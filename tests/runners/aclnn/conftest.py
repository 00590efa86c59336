"""The stub CANN library, compiled once per test session (skipped without a C compiler)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aclnn_stub import Stub, build, compiler


@pytest.fixture(scope="session")
def stub_home(tmp_path_factory: pytest.TempPathFactory):
    if compiler() is None:
        pytest.skip("no C compiler to build the stub CANN library")
    return build(tmp_path_factory.mktemp("stub-cann"))


@pytest.fixture
def stub(stub_home, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    s = Stub(stub_home, tmp_path / "logs")
    s.env(monkeypatch)
    s.reset()
    yield s
