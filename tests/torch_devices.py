"""The devices a torch runner test runs on: the CPU always, CUDA where torch sees a GPU.

Tests never assume the device: a test that runs a torch runner names it with
`torch_runner(name, device)` and takes `device` from `DEVICES`, whose CUDA
entry is marked `cuda` (`pytest -m cuda` selects it on a GPU machine) and
skips where `torch.cuda.is_available()` is False.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest


def cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


CUDA = pytest.mark.cuda
NO_CUDA = pytest.mark.skipif(not cuda_available(), reason="no CUDA device (torch.cuda)")
#: Parametrize a test over these (`@pytest.mark.parametrize("device", DEVICES)`).
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=[CUDA, NO_CUDA])]


def torch_runner(name: str, device: str) -> Any:
    """The torch runner `name` (torch-sdpa, torch-math) on `device`, whatever torch sees."""
    from fia_fuzz.runners import get_runner

    runner = get_runner(name)
    return type(runner)(device=device)
