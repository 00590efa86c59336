"""docs/rules.md is generated from the registry and must be current."""

from pathlib import Path

from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.ruledoc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_committed_rule_table_is_current() -> None:
    assert DOC.read_text() == render(), \
        "regenerate: python -m fia_fuzz.rules.ruledoc > docs/rules.md"


def test_every_rule_is_in_the_table() -> None:
    text = render()
    assert all(f"| `{rid}` |" in text for rid in RULES)
