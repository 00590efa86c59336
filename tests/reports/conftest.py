"""The injected-error dataset, built once per session for the dashboard tests."""

import pytest
from injected_dataset import Injected, build_injected


@pytest.fixture(scope="session")
def injected(tmp_path_factory: pytest.TempPathFactory) -> Injected:
    return build_injected(tmp_path_factory.mktemp("injected"))
