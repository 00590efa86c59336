import subprocess
import sys

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results


def test_campaign_then_report(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "torch-sdpa", "--max-cases", "12", "--out",
                 str(out), "--filter", "plain=true"]) == 0
    df = read_results(out)
    assert len(df) == 12
    assert set(df["outcome"]) == {"ok"}
    assert df["case_id"].is_unique
    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 0
    page = (tmp_path / "d.html").read_text()
    assert "pass rate by layout" in page and "Worst cases" in page


def test_module_entry_point_lists_commands() -> None:
    text = subprocess.run([sys.executable, "-m", "fia_fuzz", "--help"], capture_output=True,
                          text=True, check=True).stdout
    for cmd in ("campaign", "repro", "report", "validate", "coverage"):
        assert cmd in text
