"""A crash, an abort, a hang and an exception in the runner are recorded, and the campaign
finishes every other case.

Robust on a loaded machine: the case timeout is far above what a case takes on a
2-core host loaded several times over (a few seconds), and the hang cell hangs once,
so that timeout is waited out once.
"""

from pathlib import Path

import runner_doubles
from runner_doubles import STREAM_SEED

from fia_fuzz.campaign.bundles import load_bundle
from fia_fuzz.cli import main
from fia_fuzz.op.digest import input_digest
from fia_fuzz.reports import read_results

#: The machinery under test, on the simple cases every backend here expresses.
PLAIN = ("--filter", "plain=true")
HANG_CELL = ("BSND", "bfloat16")


def test_faults_become_rows_and_the_other_cases_finish(tmp_path, monkeypatch) -> None:
    out = tmp_path / "run"
    monkeypatch.setenv(runner_doubles.HANG_ONCE_ENV, str(tmp_path / "hung"))
    assert main(["campaign", *PLAIN, *STREAM_SEED, "--runner", "test-double-faulty",
                 "--max-cases", "30",
                 "--case-timeout", "20s", "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 30 and df["case_id"].is_unique
    expect = {("BSH", "float16"): "crashed", ("BSH", "bfloat16"): "crashed",
              ("BSND", "float16"): "error"}
    hang_rows = df[(df["layout"] == HANG_CELL[0]) & (df["q_dtype"] == HANG_CELL[1])]
    assert len(hang_rows) >= 2  # the hang, and a case of its cell that runs after it
    first = hang_rows.sort_values("timestamp").iloc[0]["case_id"]
    for _, row in df.iterrows():
        want = "timeout" if row["case_id"] == first else \
            expect.get((row["layout"], row["q_dtype"]), "ok")
        assert row["outcome"] == want, row
    assert {"crashed", "timeout", "error", "ok"} <= set(df["outcome"])
    assert "no result after 20s; worker killed" in df.set_index("case_id").loc[first, "error"]
    errors = df[df["outcome"] == "error"]["error"]
    assert all("ValueError: injected exception" in e for e in errors)
    crashes = set(df[df["outcome"] == "crashed"]["error"])
    assert crashes <= {"worker died with SIGSEGV", "worker died with SIGABRT"}
    bundles = {p.name for p in (out / "bundles").iterdir()}
    failed = df[df["outcome"] != "ok"]
    # the first bundles of each signature (at most 3); every other failing row points to
    # its signature's first bundle
    assert bundles <= set(failed["case_id"])
    per_signature = failed.groupby("signature")["case_id"].apply(lambda ids: len(set(ids) &
                                                                             bundles))
    assert per_signature.between(1, 3).all(), per_signature
    pointed = failed[~failed["case_id"].isin(bundles)]
    assert all((Path(p) / "case.json").exists() for p in pointed.get("signature_bundle", []))
    # a crashed or hung case's bundle records its input digest all the same
    for cid in set(df[df["outcome"].isin(["crashed", "timeout"])]["case_id"]) & bundles:
        b = load_bundle(out / "bundles" / cid)
        assert b.recorded.digest == input_digest(b.case.call()) == b.metrics["input_digest"]
