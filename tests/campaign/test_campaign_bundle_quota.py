"""A night that fails often stays small: full bundles for the first K failures of each
signature (counted across workers and attempts), a byte budget that stops bundles and not
the campaign, and every other failing row as reproducible as a bundle."""

import multiprocessing as mp

import runner_doubles

from fia_fuzz.campaign.bundle_quota import BundleQuota, drop_unfinished, run_bytes
from fia_fuzz.campaign.config import CampaignConfig
from fia_fuzz.campaign.coordinator import run_campaign
from fia_fuzz.cli import main
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.reports import read_results


def _shared() -> tuple:
    return mp.Value("q", 0), mp.Value("b", 0)


def test_the_k_slots_of_a_signature_are_the_runs_across_workers_and_resumes(tmp_path) -> None:
    spent, announced = _shared()
    w0 = BundleQuota(tmp_path, "run", 2, None, spent, announced)
    w1 = BundleQuota(tmp_path, "run", 2, None, spent, announced)  # another worker
    assert w0.claim("sig A", "c1") is not None and w1.claim("sig A", "c2") is not None
    assert w0.claim("sig A", "c3") is None and w1.claim("sig A", "c4") is None
    assert w1.claim("sig B", "c5") is not None  # each signature its own K
    assert w1.first("sig A") == str(tmp_path / "bundles" / "c1")
    assert BundleQuota(tmp_path, "other-run", 2, None).claim("sig A", "c6") is not None
    # a resume: the bundle of c1 was written, those of c2 and c5 a kill cut short
    (tmp_path / "bundles" / "c1").mkdir(parents=True)
    (tmp_path / "bundles" / "c1" / "case.json").write_text("{}")
    assert drop_unfinished(tmp_path, "run") == 2
    assert run_bytes(tmp_path, "run") == 2
    again = BundleQuota(tmp_path, "run", 2, None)
    assert again.spent.value == 2
    assert again.claim("sig A", "c7") is not None and again.claim("sig A", "c8") is None


def test_the_byte_budget_refuses_bundles_in_one_line_and_counts_shrunk_ones(tmp_path) -> None:
    lines = []
    q = BundleQuota(tmp_path, "run", 3, 100, *_shared(), report=lines.append)
    assert q.admit(60) and not q.exhausted
    assert not q.admit(60) and not q.admit(1) and q.exhausted
    assert q.admit(500, always=True)  # a shrunk minimal case is always written
    assert q.spent.value == 560
    assert len(lines) == 1 and "bundle budget reached" in lines[0]["text"]


def test_a_failing_night_bundles_k_per_signature_and_reproduces_the_rest(tmp_path,
                                                                          capsys) -> None:
    out = tmp_path / "run"
    run_campaign(CampaignConfig(runner="test-double-perturbed-cell", max_cases=24, out=out,
                                seed=runner_doubles.SEED, shrink=False,
                                bundles_per_signature=1))
    df = read_results(out)
    failing = df[[failure_kind(r) is not None for r in df.to_dict("records")]]
    bundled = failing[failing["bundle"].notna()]
    rest = failing[failing["bundle"].isna()]
    assert len(rest) >= 1, "the test needs a signature met more than once"
    assert bundled["signature"].is_unique  # K = 1
    assert set(rest["signature"]) <= set(bundled["signature"])
    firsts = dict(zip(bundled["signature"], bundled["bundle"], strict=True))
    assert all(firsts[s] == p for s, p in zip(rest["signature"], rest["signature_bundle"],
                                              strict=True))
    assert {p.name for p in (out / "bundles").iterdir()} == set(bundled["case_id"])

    row = rest.iloc[0]
    capsys.readouterr()
    assert main(["repro", row["case_id"], "--results", str(out)]) == 1
    text = capsys.readouterr().out
    assert "input digest" in text and "the same as recorded" in text
    assert f"its signature's: {row['signature_bundle']}" in text
    assert "same diff as recorded by the campaign" in text
    assert main(["report", "--issue", row["case_id"], str(out)]) == 0
    body = capsys.readouterr().out
    assert f"result row of case `{row['case_id']}`" in body and row["signature_bundle"] in body
