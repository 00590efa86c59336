"""A seeded draw gives the same cases whatever the process imported before it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DRAW = """
import sys
sys.path.insert(0, {path!r})
if {extra}:
    import many_constants  # noqa: F401  (a local module full of numbers)
from fia_fuzz.strategies.sample import draw_cases
from fia_fuzz.strategies.illegal import BREAKERS
from fia_fuzz.strategies.illegal.width import breaks
print(*[c.case_id for c in draw_cases(80, seed=3, profile="nightly")])
rule = "paged.block_size_max"
print(*[b.broken.case_id for b in breaks(rule, BREAKERS[rule], 20, seed=3)])
"""


def _draw(tmp_path: Path, extra: bool) -> str:
    code = DRAW.format(path=str(tmp_path), extra=extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=tmp_path).stdout


def test_seeded_draws_ignore_the_constants_of_loaded_modules(tmp_path: Path) -> None:
    # Hypothesis mixes constants of every loaded local module into its draws; a module
    # full of lengths and head counts changed the stream before fixed_constants
    numbers = ", ".join(str(x) for x in (3, 7, 13, 17, 33, 65, 127, 129, 255, 257, 511, 513,
                                         1023, 1025, 2047, 2049, 4097, 8191, 40000))
    (tmp_path / "many_constants.py").write_text(f"SIZES = ({numbers})\nNAMES = ('BNSD', 'TND')\n")
    plain, loaded = _draw(tmp_path, False), _draw(tmp_path, True)
    assert plain.split() and plain == loaded
