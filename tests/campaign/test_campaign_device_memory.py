"""Cases a device cannot hold (device_bytes over --device-memory) become `skipped` rows,
counted by the report, never failures and never lost."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fia_fuzz.cli import main
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.reports import read_results
from fia_fuzz.rules.profiles.atlas_a2 import DEVICE_MEMORY
from fia_fuzz.runners import get_runner

N = 16
LIMIT = 64 << 10  # smoke cases span a few KiB to a few MiB of device memory


def test_cases_over_the_device_memory_are_skipped_rows_and_counted(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--device-memory",
                 "64KiB", "--no-shrink", "--out", str(out)]) == 0
    assert "'skipped'" in capsys.readouterr().out  # the command's summary counts them
    df = read_results(out)
    assert len(df) == N and df["case_id"].is_unique
    big = df["device_bytes"] > LIMIT
    assert big.any() and (~big).any()
    assert set(df[big]["outcome"]) == {"skipped"}
    assert set(df[~big]["outcome"]) == {"ok"}
    for _, row in df[big].iterrows():
        assert f"device_bytes {row['device_bytes']}" in row["error"]
        assert "the device holds 64.00 KiB (--device-memory)" in row["error"]
        assert failure_kind(row.to_dict()) is None
    assert not (out / "bundles").exists() or not any((out / "bundles").iterdir())

    html, junit = tmp_path / "d.html", tmp_path / "j.xml"
    assert main(["report", str(out), "--html", str(html), "--junit", str(junit)]) == 0
    assert f"skipped {int(big.sum())}" in html.read_text()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("skipped", 0)) >= int(big.sum())
    assert suite.get("failures") == "0" and suite.get("errors") == "0"

    # the same command again: a finished run, so a new night; the skipped rows stay
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--device-memory",
                 "64KiB", "--no-shrink", "--out", str(out)]) == 0
    assert set(df["case_id"]) <= set(read_results(out)["case_id"])


def test_host_runners_skip_nothing_unless_told_and_npu_runners_assume_an_a2() -> None:
    assert get_runner("torch-sdpa").device_memory is None
    assert get_runner("golden").device_memory is None
    assert DEVICE_MEMORY == 64 << 30
    for name in ("npu", "npu-v2", "torchair", "mindspore"):
        assert get_runner(name).device_memory == DEVICE_MEMORY


def test_without_a_device_memory_nothing_is_skipped(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", "6", "--no-shrink",
                 "--out", str(out)]) == 0
    assert set(read_results(out)["outcome"]) == {"ok"}
