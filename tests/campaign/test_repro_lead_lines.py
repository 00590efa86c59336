"""repro's first lines are what a kernel engineer reads: the verdict with the case's cell,
and for a non-finite failure an element whose finiteness differs (as `report --issue`)."""

import io
from pathlib import Path

from fia_fuzz.campaign.repro import headline, reproduce

NAN_BUNDLE = Path(__file__).parents[1] / "data" / "bundles" / "nan-query-flash"


def test_the_nan_bundle_leads_with_its_cell_and_a_nan_turned_finite() -> None:
    out = io.StringIO()
    assert reproduce(str(NAN_BUNDLE), None, [], stream=out) == 1
    lines = out.getvalue().splitlines()
    verdict = next(i for i, ln in enumerate(lines) if ln.startswith("verdict:"))
    assert lines[verdict] == "verdict: fail  (BNSD/bfloat16/prefill nonfinite:nan_to_finite: out)"
    assert lines[verdict + 1].startswith("worst element: out(0, 0, 1, 0) = 0, golden NaN "
                                         "(finiteness differs at 16 of 32 elements)")


def test_a_finite_failure_names_its_largest_error_and_a_pass_no_signature() -> None:
    row = {"outcome": "ok", "verdict": "fail", "layout": "BSH", "q_dtype": "float16",
           "branch": "decode", "out_worst_index": "(0, 0, 3)", "out_worst_actual": 1.5,
           "out_worst_golden": 1.0, "out_max_abs": 0.5}
    lines = headline(row)
    assert lines[0] == "verdict: fail  (BSH/float16/decode fail: worst element: one tile)"
    assert lines[1] == "worst element: out(0, 0, 3) = 1.5, golden 1.0 (max abs error 0.5)"
    assert headline({"outcome": "ok", "verdict": "pass"}) == ["verdict: pass"]
