"""Every verb, given bad input, exits 2 with one line saying what and where: no traceback.
`--debug` shows the traceback instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fia_fuzz.cli import main

CASE = {"params": {"query": {"shape": [1, 2, 64], "dtype": "float16"},
                   "key": {"shape": [1, 4, 64], "dtype": "float16"},
                   "value": {"shape": [1, 4, 64], "dtype": "float16"}, "num_heads": 1},
        "fills": {}, "seed": 0}


def _files(d: Path) -> dict[str, str]:
    """Bad files by name, written under `d`."""
    docs: dict[str, bytes] = {
        "malformed": b'{"params": {"query": ',
        "list": b"[1, 2, 3]",
        "no_params": json.dumps({"seed": 1}).encode(),
        "not_utf8": b'{"params": "\xff\xfe"}',
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "huge_list": json.dumps({**CASE, "params": {**CASE["params"],
                                                    "actual_seq_lengths": [1] * 5_000_000}}
                                ).encode(),
        "negative": json.dumps({**CASE, "params": {**CASE["params"], "query": {
            "shape": [1, -2, 64], "dtype": "float16"}}}).encode(),
        "absurd": json.dumps({**CASE, "params": {**CASE["params"], "query": {
            "shape": [1 << 20, 1 << 20, 1 << 20], "dtype": "float16"}}}).encode(),
        "bad_tensor": json.dumps({**CASE, "params": {**CASE["params"], "key": 3}}).encode(),
        "unknown_param": json.dumps({**CASE, "params": {**CASE["params"], "bogus": 1}}).encode(),
        "bad_seed": json.dumps({**CASE, "seed": "x"}).encode(),
        "big_int": json.dumps({**CASE, "params": {**CASE["params"],
                                                  "block_table": [[10 ** 30]]}}).encode(),
        "bogus_dist": json.dumps({**CASE, "fills": {"query": {"dist": "bogus"}}}).encode(),
        "nan_fill": json.dumps({**CASE, "fills": {"query": {"dist": "uniform",
                                                            "high": float("nan")}}}).encode(),
        "future": json.dumps({**CASE, "version": 999}).encode(),
        "bad_rules": json.dumps({**CASE, "rules": "nope"}).encode(),
        "bogus_task": json.dumps({"task": "bogus", "data": {
            "NPU.npu_fused_infer_attention_score.0.forward": {"input_args": []}}}).encode(),
    }
    out = {}
    for name, data in docs.items():
        (d / f"{name}.json").write_bytes(data)
        out[name] = str(d / f"{name}.json")
    out["missing"] = str(d / "missing.json")
    out["dir"] = str(d)
    (d / "run" / "results").mkdir(parents=True)
    (d / "run" / "results" / "x.parquet").write_bytes(b"not parquet")
    out["bad_run"] = str(d / "run")
    bundle = d / "bundle"
    bundle.mkdir()
    (bundle / "case.json").write_text(json.dumps(CASE))
    (bundle / "outputs.npz").write_bytes(bytes(range(256)) * 4)
    out["bad_npz_bundle"] = str(bundle)
    (d / "seeds").mkdir()
    out["empty_dir"] = str(d / "seeds")
    return out


CAMPAIGN = ["campaign", "--max-cases", "2", "--out", "{tmp}/out"]
TABLE = [
    # campaign: flags, names, budgets
    ("campaign-no-budget", ["campaign", "--out", "{tmp}/o"], "--max-cases"),
    ("campaign-runner", [*CAMPAIGN, "--runner", "no-such-runner"], "no-such-runner"),
    ("campaign-profile", [*CAMPAIGN, "--profile", "huge"], "huge"),
    ("campaign-filter-name", [*CAMPAIGN, "--filter", "colour=red"], "colour"),
    ("campaign-filter-value", [*CAMPAIGN, "--filter", "layout=XYZ"], "XYZ"),
    ("campaign-filter-form", [*CAMPAIGN, "--filter", "layout"], "FEATURE=VALUE"),
    ("campaign-budget", ["campaign", "--budget", "soon", "--out", "{tmp}/o"], "soon"),
    ("campaign-budget-zero", ["campaign", "--budget", "0s", "--out", "{tmp}/o"], "--budget"),
    ("campaign-max-cases", ["campaign", "--max-cases", "-3", "--out", "{tmp}/o"], "-3"),
    ("campaign-max-cases-text", ["campaign", "--max-cases", "ten"], "ten"),
    ("campaign-workers", [*CAMPAIGN, "--workers", "0"], "--workers"),
    ("campaign-shard", [*CAMPAIGN, "--shard", "3/2"], "3/2"),
    ("campaign-devices", [*CAMPAIGN, "--devices", "a-b"], "a-b"),
    ("campaign-memory", [*CAMPAIGN, "--memory-limit", "lots"], "lots"),
    ("campaign-device-memory", [*CAMPAIGN, "--device-memory", "lots"], "lots"),
    ("campaign-device-memory-zero", [*CAMPAIGN, "--device-memory", "0GiB"], "--device-memory"),
    ("campaign-device-memory-negative", [*CAMPAIGN, "--device-memory=-64GiB"],
     "--device-memory"),
    ("campaign-device-memory-inf", [*CAMPAIGN, "--device-memory", "infG"], "infG"),
    ("campaign-timeout", [*CAMPAIGN, "--case-timeout=-1s"], "-1s"),
    ("campaign-seed-missing", [*CAMPAIGN, "--seed-cases", "{tmp}/nope"], "nope"),
    ("campaign-seed-empty", [*CAMPAIGN, "--seed-cases", "{empty_dir}"], "no case files"),
    ("campaign-unknown-flag", [*CAMPAIGN, "--turbo"], "--turbo"),
    ("campaign-seed-negative", [*CAMPAIGN, "--seed", "-1"], "--seed: '-1'"),
    ("campaign-budget-negative", ["campaign", "--budget", "-5s", "--out", "{tmp}/o"], "-5s"),
    ("campaign-device-memory-as-typed", [*CAMPAIGN, "--device-memory=-1G"],
     "--device-memory -1G: must be positive"),
    ("campaign-out-file", ["campaign", "--max-cases", "2", "--out", "{list}"], "is a file"),
    ("campaign-fail-on", [*CAMPAIGN, "--fail-on", "fail,bogus"], "'bogus'"),
    ("campaign-negative-filter", [*CAMPAIGN, "--negative", "--filter", "layout=BSH"],
     "rule=ID only"),
    ("campaign-negative-rule", [*CAMPAIGN, "--negative", "--filter", "rule=bogus.rule"],
     "'bogus.rule' is not a rule id"),
    # report
    ("report-missing", ["report", "{tmp}/nope"], "nope"),
    ("report-empty", ["report", "{empty_dir}"], "no results"),
    ("report-policy", ["report", "{bad_run}", "--policy", "strict"], "strict"),
    ("report-parquet", ["report", "{bad_run}"], "x.parquet"),
    ("report-worst", ["report", "{bad_run}", "--worst", "-1"], "--worst"),
    ("report-file", ["report", "{list}"], "is a file, expected a run directory"),
    # repro
    ("repro-missing", ["repro", "{missing}"], "missing.json"),
    ("repro-malformed", ["repro", "{malformed}"], "not valid JSON"),
    ("repro-list", ["repro", "{list}"], "expected a case"),
    ("repro-no-params", ["repro", "{no_params}"], "without params"),
    ("repro-not-utf8", ["repro", "{not_utf8}"], "UTF-8"),
    ("repro-deep", ["repro", "{deep}"], "nest"),
    ("repro-huge-list", ["repro", "{huge_list}"], "items"),
    ("repro-negative", ["repro", "{negative}"], "query.shape"),
    ("repro-absurd", ["repro", "{absurd}"], "args.memory"),
    ("repro-bad-tensor", ["repro", "{bad_tensor}"], "key"),
    ("repro-unknown-param", ["repro", "{unknown_param}"], "bogus"),
    ("repro-bad-seed", ["repro", "{bad_seed}"], "seed"),
    ("repro-runner", ["repro", "{missing}", "--runner", "nope-runner"], "nope-runner"),
    ("repro-big-int", ["repro", "{big_int}"], "does not fit the int64"),
    ("repro-random-npz", ["repro", "{bad_npz_bundle}"], "outputs.npz: cannot read the stored "
     "outputs (not an .npz archive (no zip header))"),
    ("repro-bogus-dist", ["repro", "{bogus_dist}"], "fills.query.dist: unknown fill 'bogus'"),
    ("repro-nan-fill", ["repro", "{nan_fill}"], "fills.query.high: nan is not a finite"),
    ("repro-version", ["repro", "{future}"], "version: 999"),
    ("repro-rules", ["repro", "{bad_rules}"], "rules: unknown rule profile 'nope'"),
    ("repro-results-missing", ["repro", "0123456789abcdef", "--results", "{tmp}/nope"],
     "nope: no such directory"),
    # validate
    ("validate-missing", ["validate", "{missing}"], "no such file"),
    ("validate-dir", ["validate", "{dir}"], "directory"),
    ("validate-malformed", ["validate", "{malformed}"], "not valid JSON"),
    ("validate-list", ["validate", "{list}"], "expected a JSON object"),
    ("validate-deep", ["validate", "{deep}"], "nest"),
    ("validate-bad-tensor", ["validate", "{bad_tensor}"], "key"),
    ("validate-huge-list", ["validate", "{huge_list}"], "items"),
    # coverage
    ("coverage-cases", ["coverage", "--cases", "0"], "--cases"),
    ("coverage-filter", ["coverage", "--filter", "layout=XYZ"], "XYZ"),
    ("coverage-profile", ["coverage", "--profile", "big"], "big"),
    # import-msprobe
    ("import-missing", ["import-msprobe", "{missing}", "--out", "{tmp}/o"], "no such file"),
    ("import-malformed", ["import-msprobe", "{malformed}", "--out", "{tmp}/o"], "JSON"),
    ("import-list", ["import-msprobe", "{list}", "--out", "{tmp}/o"], "not an msprobe dump"),
    ("import-no-calls", ["import-msprobe", "{no_params}", "--out", "{tmp}/o"], "msprobe"),
    ("import-no-out", ["import-msprobe", "{list}"], "--out"),
    ("import-task", ["import-msprobe", "{bogus_task}", "--out", "{tmp}/o"], "task: 'bogus'"),
    ("coverage-seed", ["coverage", "--seed", "-2"], "--seed"),
    # no verb, unknown verb
    ("no-verb", [], "command"),
    ("unknown-verb", ["fuzz"], "fuzz"),
]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code if isinstance(exc.code, int) else 1
    err = capsys.readouterr().err
    return rc, [ln for ln in err.splitlines() if ln.strip()]


@pytest.mark.parametrize("name, argv, says", TABLE, ids=[t[0] for t in TABLE])
def test_bad_input_exits_2_with_one_line(name: str, argv: list[str], says: str,
                                         tmp_path: Path, capsys) -> None:
    files = _files(tmp_path)
    argv = [a.format(tmp=tmp_path, **files) for a in argv]
    rc, lines = _run(argv, capsys)
    assert rc == 2, (rc, lines)
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0] and says in lines[0], lines[0]


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    from fia_fuzz.files.cases import InputError

    with pytest.raises(InputError, match="not valid JSON"):
        main(["validate", str(bad), "--debug"])


def test_help_shows_defaults_exit_codes_and_the_runners(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["campaign", "--help"])
    text = capsys.readouterr().out
    assert "(default: runs/latest)" in text and "(default: torch-sdpa)" in text
    assert "exit status:" in text and "--fail-on" in text and "torch-math" in text
    assert main(["runners"]) == 0
    listed = capsys.readouterr().out
    assert "torch-sdpa  available" in listed and "npu  not available: " in listed
