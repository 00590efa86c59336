"""One runner per real backend of the op, behind one small interface."""

from fia_fuzz.runners import golden_runner, npu, torch_sdpa  # noqa: F401  (registration)
from fia_fuzz.runners.base import RUNNERS, Runner, RunnerSpecError, get_runner

__all__ = ["RUNNERS", "Runner", "RunnerSpecError", "get_runner"]
