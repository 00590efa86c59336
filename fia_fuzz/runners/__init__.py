"""One runner per real backend of the op, behind one small interface."""

from fia_fuzz.runners import (  # noqa: F401  (registration)
    aclnn,
    golden_runner,
    npu,
    torch_api,
    torch_math,
    torch_sdpa,
)
from fia_fuzz.runners.base import RUNNERS, Runner, RunnerSpecError, get_runner

__all__ = ["RUNNERS", "Runner", "RunnerSpecError", "get_runner"]
