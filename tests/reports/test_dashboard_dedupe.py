"""The dashboard counts a call once however its defaults were written (an attribute given
explicitly at its default is the call without it), lists unsupported cases by reason,
and gives every repro command a wrapping block with a copy button."""

import json
import re

import pandas as pd

from fia_fuzz.op.case import Case
from fia_fuzz.op.params import ATTR_DEFAULTS
from fia_fuzz.reports import aggregate as agg
from fia_fuzz.reports import render


def _with_explicit_defaults(row: pd.Series) -> pd.Series:
    """The same call with every absent attribute of a few given at its default."""
    doc = json.loads(row["case_json"])
    for name in ("sparse_mode", "scale", "block_size", "softmax_lse_flag"):
        if name not in doc["params"]:
            doc["params"][name] = ATTR_DEFAULTS[name]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    copy = row.copy()
    copy["case_json"], copy["case_id"] = text, Case.from_json(text).case_id
    return copy


def test_a_call_with_explicit_defaults_is_the_same_call() -> None:
    plain = {"params": {"num_heads": 4, "input_layout": "BNSD"}, "fills": {}, "seed": 3}
    explicit = {**plain, "params": {**plain["params"], "scale": 1.0, "sparse_mode": 0,
                                    "input_layout": "BNSD", "softmax_lse_flag": False}}
    other = {**plain, "params": {**plain["params"], "scale": 0.5}}
    key = agg.call_key(json.dumps(plain))
    assert agg.call_key(json.dumps(explicit)) == key
    assert agg.call_key(json.dumps(other)) != key
    assert agg.call_key(json.dumps({**plain, "seed": 4})) != key  # other data
    assert agg.call_key("not json", "abc") == "abc"


def test_worst_cases_and_counts_take_such_a_call_once(injected, tmp_path) -> None:
    df = injected.df
    first = df[(df["case_id"] == injected.worst_case)
               & (df["runner"] == "perturbing-golden-double")].iloc[0]
    twin = _with_explicit_defaults(first)
    assert twin["case_id"] != first["case_id"]
    doubled = pd.concat([df, twin.to_frame().T], ignore_index=True)

    worst = agg.worst_cases(doubled, n=10)
    assert worst["case_id"].isin([first["case_id"], twin["case_id"]]).sum() == 1
    assert agg.call_key(twin["case_json"]) == agg.call_key(first["case_json"])
    assert agg.dedupe_calls(agg.prepare(doubled)).shape[0] == len(agg.dedupe_calls(df))

    page = render(doubled, tmp_path / "d.html").read_text()
    table = re.search(r"<table id='worst'.*?</table>", page, re.S).group(0)
    listed = re.findall(r"<td><code>([0-9a-f]{16})</code>", table)
    assert listed.count(first["case_id"]) + listed.count(twin["case_id"]) == 1
    same = render(df, tmp_path / "e.html").read_text()
    outcomes = re.compile(r"<p>Outcomes: [^<]*")
    assert outcomes.findall(page) == outcomes.findall(same)  # counted once


def test_unsupported_cases_are_grouped_by_reason(tmp_path) -> None:
    reasons = (["torch-sdpa: int8 full quantisation"] * 3
               + ["device memory: the case needs 80.00 GiB, cuda has 12.50 GiB free",
                  "device memory: the case needs 96.00 GiB, cuda has 10.25 GiB free"])
    df = pd.DataFrame({"case_id": [f"{i:016x}" for i in range(6)], "runner": "torch-sdpa",
                       "outcome": ["unsupported"] * 5 + ["ok"], "error": reasons + [""],
                       "run_id": "r1"})
    table = agg.unsupported_reasons(df)
    assert table.to_dict("records") == [
        {"reason": "torch-sdpa: int8 full quantisation", "count": 3},
        {"reason": "device memory: the case needs N GiB, cuda has N GiB free", "count": 2}]
    page = render(df, tmp_path / "d.html").read_text()
    assert ("<tr><td>torch-sdpa: int8 full quantisation</td><td>3</td></tr>") in page


def test_repro_commands_wrap_and_have_a_copy_button(injected, tmp_path) -> None:
    page = render(injected.df, tmp_path / "d.html").read_text()
    table = re.search(r"<table id='worst'.*?</table>", page, re.S).group(0)
    cmds = re.findall(r"<div class='cmd'><code>(fia-fuzz repro [^<]*)</code><button "
                      r"class='copy'", table)
    assert len(cmds) == table.count("<tr class=") and cmds
    assert "overflow-wrap:anywhere" in page and "function copyCmd" in page
