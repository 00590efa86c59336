"""Command-line values of the campaign: shards, devices, durations, sizes; progress output."""

import io

import pytest

from fia_fuzz.campaign.config import (
    CampaignConfig,
    parse_devices,
    parse_duration,
    parse_shard,
    parse_size,
)
from fia_fuzz.campaign.progress import Progress
from fia_fuzz.cli import main


def test_parsers_accept_the_documented_forms() -> None:
    assert parse_shard("3/8") == (3, 8)
    assert parse_devices("0-3,6") == (0, 1, 2, 3, 6)
    assert parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    assert parse_size("32G") == 32 << 30


@pytest.mark.parametrize("bad", ["8/8", "1", "-1/2", "a/b", "0/0"])
def test_bad_shard_is_refused_with_the_value(bad: str) -> None:
    with pytest.raises(ValueError, match="--shard"):
        parse_shard(bad)


def test_bad_command_lines_exit_with_a_message(tmp_path, capsys) -> None:
    assert main(["campaign", "--max-cases", "1", "--shard", "2/2", "--out", str(tmp_path)]) == 2
    assert "--shard '2/2'" in capsys.readouterr().err
    assert main(["campaign", "--max-cases", "1", "--devices", "x", "--out", str(tmp_path)]) == 2
    assert "--devices" in capsys.readouterr().err


def test_same_command_same_fingerprint_other_shard_other_run() -> None:
    a = CampaignConfig(max_cases=5, shard=0, shards=2)
    assert a.fingerprint() == CampaignConfig(max_cases=5, shard=0, shards=2).fingerprint()
    assert a.fingerprint() != CampaignConfig(max_cases=5, shard=1, shards=2).fingerprint()
    assert CampaignConfig(devices=(4, 5)).device_of(3) == 5


def test_progress_prints_plain_lines_when_not_a_terminal() -> None:
    buf = io.StringIO()
    p = Progress(budget_s=60, max_cases=None, stream=buf, log_every=0)
    p.update({"type": "case", "outcome": "ok", "verdict": "pass"})
    p.update({"type": "case", "outcome": "crashed", "verdict": None})
    p.close()
    lines = buf.getvalue().splitlines()
    assert "\r" not in buf.getvalue() and len(lines) == 3
    assert "2 cases | pass 1 warn 0 fail 0 | crashed 1 |" in lines[-1] and "left" in lines[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_one_line_on_a_terminal() -> None:
    term = _Terminal()
    p = Progress(budget_s=None, max_cases=10, stream=term)
    p.update({"type": "case", "outcome": "ok", "verdict": "fail"})
    p.message("a failing cell")
    p.close()
    text = term.getvalue()
    assert text.startswith("\r1 cases/10 | pass 0 warn 0 fail 1 |") and "elapsed" in text
    assert "a failing cell\n" in text and text.endswith("\n")
