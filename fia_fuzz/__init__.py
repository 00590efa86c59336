"""fia-fuzz: test generation, fuzzing and precision measurement for Ascend FIA."""

__version__ = "0.1.0"
