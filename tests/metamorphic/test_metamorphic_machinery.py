"""The pieces under the relations: paging, comparison, the checker."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fia_fuzz.metamorphic import RELATIONS, Tolerance, check_relations, partner_id
from fia_fuzz.metamorphic.equality import EXACT_ADDRESSING, compare
from fia_fuzz.metamorphic.paging import block_table, garbage
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import cache_shape, page, paged_bnsd
from fia_fuzz.runners import Runner, get_runner

from .sources import make_case


def _ramp(*shape: int) -> np.ndarray:
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("form", ["BnBsH", "BnNBsD", "NZ"])
@pytest.mark.parametrize("shuffled", [False, True])
def test_page_unpage_round_trip(form: str, shuffled: bool) -> None:
    x = _ramp(3, 2, 40, 32).astype(np.float16)
    lens, bs = [40, 17, 0], 16
    need = 3 + 2 + 0 + 2
    order = np.array([5, 2, 6, 0, 3, 1, 4]) if shuffled else None
    table, blocks = block_table(lens, bs, order)
    assert blocks == need and table.shape == (3, 4)
    assert (table[1, 2:] == -1).all() and (table[2] == -1).all()
    shape = cache_shape(form, blocks, bs, 2, 32, "float16")
    cache = page(x, lens, table, bs, garbage(shape, "float16", 0, "t"))
    back = paged_bnsd(cache, 2, table, np.asarray(lens))
    for b, n in enumerate(lens):
        assert np.array_equal(back[b, :, :n], x[b, :, :n])
        assert not back[b, :, n:].any()


def test_compare_exact_and_tolerant() -> None:
    a = np.ones((2, 3), np.float16)
    lse = np.zeros((2, 1, 3, 1), np.float32)
    b = a.copy()
    b[0, 0] = np.nextafter(np.float16(1), np.float16(2))
    exact = compare((a, lse), (b, lse), EXACT_ADDRESSING, "float16", lse=True)
    assert exact["outcome"] == "fail" and exact["out_max_abs_diff"] == 2.0 ** -10
    loose = compare((a, lse), (b, lse), Tolerance(2, "test"), "float16", lse=True)
    assert loose["outcome"] == "pass" and loose["out_allowed"] == 2 * 2.0 ** -10


def test_compare_invalid_rows_are_exact_under_any_tolerance() -> None:
    out = np.zeros((1, 2), np.float16)
    lse = np.array([np.inf, 1.0], np.float32)
    wrong = np.array([1e30, 1.0], np.float32)
    row = compare((out, lse), (out, wrong), Tolerance(1000, "loose"), "float16", lse=True)
    assert row["outcome"] == "fail" and row["nonfinite_mismatch"] == 1
    shape = compare((out, lse), (out[:, :1], lse), Tolerance(1000, "loose"), "float16", True)
    assert shape["outcome"] == "fail" and "shapes differ" in shape["detail"]


def test_rows_name_relation_partner_and_expectation() -> None:
    case = make_case("BNSD", b=2)
    rows = check_relations(case, get_runner("golden"), include_not_applicable=True)
    assert {r["relation"] for r in rows} == set(RELATIONS)
    for r in rows:
        assert r["case_id"] == case.case_id and r["runner"] == "golden"
        if r["outcome"] == "pass":
            assert r["partner_id"] == partner_id(case, r["relation"], r["variant"])
            assert r["expected"] and r["tolerance_reason"]
            assert r["out_max_abs_diff"] <= r["out_allowed"]
    graph = [r for r in rows if r["relation"] == "eager_graph"]
    assert graph[0]["outcome"] == "unsupported" and "no graph variant" in graph[0]["detail"]


class RefusingDouble(Runner):
    """TEST DOUBLE: a backend that expresses nothing."""

    name = "refusing-double"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return False, "this double expresses no case"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("never called for an unsupported case")


def test_unsupported_source_is_recorded_not_raised() -> None:
    rows = check_relations(make_case("BNSD"), RefusingDouble(), ["run_twice", "layout"])
    assert rows and all(r["outcome"] == "unsupported" for r in rows)
    assert rows[0]["detail"] == "source: this double expresses no case"


def test_readme_lists_the_catalogue_as_it_is() -> None:
    from pathlib import Path

    import fia_fuzz.metamorphic as pkg
    from fia_fuzz.metamorphic.catalogue import describe_catalogue

    text = (Path(pkg.__file__).parent / "README.md").read_text()
    assert describe_catalogue() in text, "regenerate the table with describe_catalogue()"


def test_summary_columns_flag_any_failure() -> None:
    import json

    from fia_fuzz.metamorphic import summarise

    case = make_case("BNSD", b=2)
    rows = check_relations(case, get_runner("golden"), ["run_twice", "batch_perm"])
    ok = summarise(rows)
    assert ok["mm_outcome"] == "pass" and ok["mm_pass"] == 2 and ok["mm_worst_ratio"] == 0.0
    assert len(json.loads(ok["mm_rows"])) == 2
    broken = [dict(rows[0], outcome="fail", out_max_abs_diff=1e-3, detail="x")] + rows[1:]
    bad = summarise(broken)
    assert bad["mm_outcome"] == "fail" and bad["mm_fail"] == 1
    assert bad["mm_worst_ratio"] == float("inf") and bad["mm_failed"].startswith("run_twice/")
    assert summarise([])["mm_outcome"] == "none"
