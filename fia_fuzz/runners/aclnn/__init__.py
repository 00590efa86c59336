"""The op's aclnn C interfaces (V2, V4, IncreFlashAttention V4) as runners, via ctypes."""

from fia_fuzz.runners.aclnn import runner  # noqa: F401  (registration)
