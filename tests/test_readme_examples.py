"""The README's examples hold: its validate call.json prints what the README shows, and its
exit-status table names the statuses `cli.EXIT_CODES` (the --help text) names."""

import re
from pathlib import Path

from fia_fuzz.cli import EXIT_CODES, main

README = (Path(__file__).parents[1] / "README.md").read_text()


def test_the_validate_example_prints_what_the_readme_shows(tmp_path, capsys) -> None:
    call, shown = re.search(r"`call\.json`:\n\n```json\n(.*?)```\n\n`fia-fuzz validate "
                            r"call\.json` prints, with exit status 0:\n\n```\n(.*?)```",
                            README, re.S).groups()
    assert len(call.strip().splitlines()) == 3
    path = tmp_path / "call.json"
    path.write_text(call)
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == shown


def test_the_exit_status_table_matches_the_help() -> None:
    table = re.search(r"\| status \| meaning \|\n\| --- \| --- \|\n((?:\|.*\n)+)", README)
    statuses = [int(line.split("|")[1]) for line in table.group(1).splitlines()]
    assert statuses == [int(m) for m in re.findall(r"^  (\d)  ", EXIT_CODES, re.M)] == [
        0, 1, 2, 3, 4]
