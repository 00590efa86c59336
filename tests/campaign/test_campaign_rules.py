"""--rules: a campaign draws and judges under a rule profile and records it in every row;
negative rows tell a device-profile acceptance from a finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fia_fuzz.campaign.accepted import ACCEPTED
from fia_fuzz.campaign.device_worker import (
    ACCEPTED_BY_PROFILE,
    REJECTED_AGAINST_PROFILE,
    negative_task,
)
from fia_fuzz.cli import main
from fia_fuzz.files.cases import InputError, check_case
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.reports import read_results
from fia_fuzz.rules.profiles.atlas_a2_examples import DECODE, TND, call
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.runners.isolation import runner_ref

pytest.importorskip("torch")


def test_campaign_under_the_device_profile_records_it(tmp_path: Path) -> None:
    out = tmp_path / "a2"
    assert main(["campaign", "--runner", "torch-sdpa", "--rules", "atlas-a2", "--max-cases", "6",
                 "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 6 and set(df["rules"]) == {"atlas-a2"}
    assert all(Case.from_json(j).rules == "atlas-a2" for j in df["case_json"])
    assert set(df["outcome"]) == {"ok"}


def test_negative_row_accepted_by_the_device_profile_is_not_a_finding() -> None:
    ref = runner_ref("torch-sdpa")
    legal_on_a2 = Case(params=call(TND, sparse_mode=3, atten_mask=TensorSpec((2048, 2048), "bool"),
                                   actual_seq_lengths_kv=[2, 20]))
    row = negative_task(ref, legal_on_a2.to_json(), "atlas-a2")
    assert row["broken_rules"] == "tnd.causal_lengths" and row["profile_broken_rules"] == ""
    assert row["outcome"] == ACCEPTED_BY_PROFILE
    illegal_on_both = Case(params=call(DECODE, inner_precise=7))
    row = negative_task(ref, illegal_on_both.to_json(), "atlas-a2")
    assert row["profile_broken_rules"] == "precise.range"
    assert row["outcome"] in ACCEPTED  # torch-sdpa ignores inner_precise: a finding
    row = negative_task(ref, legal_on_a2.to_json())
    assert row["outcome"] in ACCEPTED and row["rules"] == "docs"
    # the golden runner in negative mode judges by the docs, so it rejects this call:
    # against the device profile that is a contradiction, not the hoped-for rejection
    row = negative_task(runner_ref("golden"), legal_on_a2.to_json(), "atlas-a2")
    assert row["outcome"] == REJECTED_AGAINST_PROFILE and "tnd.causal_lengths" in row["error"]


def test_validate_and_coverage_take_rules(tmp_path: Path, capsys) -> None:
    p = tmp_path / "call.json"
    p.write_text(Case(params=call(DECODE, inner_precise=2)).to_json())
    assert main(["validate", str(p)]) == 1
    assert "precise.decode_01" in capsys.readouterr().out
    assert main(["validate", str(p), "--rules", "atlas-a2"]) == 0
    assert "legal (rules atlas-a2)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(p), "--rules", "atlas-a9"])
    assert exc.value.code == 2
    main(["coverage", "--cases", "40", "--rules", "atlas-a2"])
    text = capsys.readouterr().out
    assert "regions only atlas-a2 admits:" in text and "none (all legal)" in text


def test_case_json_keeps_docs_ids_and_carries_a_device_profile() -> None:
    docs = Case(params=call(DECODE))
    assert "rules" not in json.loads(docs.to_json())
    a2 = Case(params=call(DECODE), rules="atlas-a2")
    assert json.loads(a2.to_json())["rules"] == "atlas-a2" and a2.case_id != docs.case_id
    assert Case.from_json(a2.to_json()) == a2
    with pytest.raises(ValueError, match="unknown rule profile"):
        case_violations(Case(params=call(DECODE), rules="nope"))
    doc = json.loads(a2.to_json()) | {"rules": "nope"}
    with pytest.raises(InputError, match="rules: unknown rule profile 'nope'"):
        check_case(doc, "case.json")


def test_negative_campaign_under_the_device_profile_classifies_rows(tmp_path: Path) -> None:
    out = tmp_path / "neg"
    assert main(["campaign", "--runner", "torch-sdpa", "--negative", "--rules", "atlas-a2",
                 "--max-cases", "6", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == 6 and set(df["rules"]) == {"atlas-a2"}
    assert set(df["outcome"]) <= {*ACCEPTED, "rejected", ACCEPTED_BY_PROFILE}
    device_ok = df[df["outcome"] == ACCEPTED_BY_PROFILE]
    assert (device_ok["profile_broken_rules"] == "").all()
    assert (device_ok["broken_rules"] != "").all()


def test_golden_runner_computes_what_a_device_profile_admits() -> None:
    from fia_fuzz.campaign.evaluate import evaluate
    from fia_fuzz.runners import get_runner

    case = Case(params=call(DECODE, inner_precise=2), rules="atlas-a2")
    row = evaluate(case, get_runner("golden"))
    assert row["outcome"] == "ok" and row["verdict"] == "pass"
