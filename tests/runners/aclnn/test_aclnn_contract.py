"""Contract test of the aclnn runners against the stub CANN library (a test double).

For a derandomised sample of drawn cases per interface (paged, tensor-list, NZ, quant,
rope, strided views, empty optionals...), what reached the library is checked against
the case (aclnn_stub.contract_problems): every tensor's shape, strides, offset, format,
dtype and the elements read through its view; every attribute, defaults included;
which optionals are NULL; the two phases in order; the outputs copied back; nothing
left alive.
"""

from __future__ import annotations

import time
from functools import cache

import pytest
from aclnn_stub import Stub, contract_problems, read_log

from fia_fuzz.op.case import Case
from fia_fuzz.runners import get_runner
from fia_fuzz.strategies.sample import draw_cases

#: (runner, filters, how many to draw): the sample's groups.
GROUPS: list[tuple[str, dict, int]] = [
    ("aclnn-v4", {}, 40),
    ("aclnn-v4", {"paged": True}, 10),
    ("aclnn-v4", {"kv_list": True}, 10),
    ("aclnn-v4", {"cache": "NZ"}, 8),
    ("aclnn-v4", {"full_quant": True}, 6),
    ("aclnn-v4", {"rope": True}, 8),
    ("aclnn-v4", {"view": "strided"}, 8),
    ("aclnn-v4", {"kv_dtype": "int4"}, 5),
    ("aclnn-v4", {"antiquant": "separate:1/1"}, 4),
    ("aclnn-v4", {"post_quant": True}, 5),
    ("aclnn-v4", {"lse": True}, 5),
    ("aclnn-v4", {"q_padding": True}, 4),
    ("aclnn-v4", {"prefix": True}, 4),
    ("aclnn-v4", {"empty": "kv"}, 3),
    ("aclnn-v4", {"layout": "TND"}, 4),
    ("aclnn-v2", {}, 40),
    ("aclnn-v2", {"paged": True}, 6),
    ("aclnn-v2", {"kv_list": True}, 6),
    ("aclnn-v2", {"view": "strided"}, 5),
    ("aclnn-v2", {"kv_padding": True}, 4),
    ("aclnn-ifa-v4", {"branch": "decode"}, 30),
    ("aclnn-ifa-v4", {"branch": "decode", "antiquant": "none", "lse": False}, 25),
    ("aclnn-ifa-v4", {"branch": "decode", "paged": True}, 8),
    ("aclnn-ifa-v4", {"branch": "decode", "kv_list": True}, 8),
    ("aclnn-ifa-v4", {"branch": "decode", "antiquant": "combined:0"}, 5),
    ("aclnn-ifa-v4", {"branch": "decode", "kv_padding": True}, 4),
    ("aclnn-ifa-v4", {"branch": "decode", "view": "strided"}, 4),
]
MIN_RUN = 200


@cache
def sample() -> tuple[tuple[str, Case], ...]:
    """(runner, case) for every drawn case the runner supports."""
    out = []
    for i, (name, filters, n) in enumerate(GROUPS):
        runner = get_runner(name)
        for case in draw_cases(n, seed=1000 + i, **filters):
            if runner.supports(case)[0]:
                out.append((name, case))
    return tuple(out)


def run_checked(stub: Stub, monkeypatch: pytest.MonkeyPatch, name: str, case: Case
                ) -> list[str]:
    """Run `case` on the runner against the stub; the contract problems found."""
    log = stub.new_log(monkeypatch)
    call = case.call()
    result = get_runner(name).run(call)
    return contract_problems(name, call, read_log(log), result, stub.live(), stub.abuse())


def test_the_runners_pass_the_contract_on_drawn_cases(stub: Stub,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = time.monotonic()
    cases = sample()
    by_runner = {n: sum(r == n for r, _ in cases) for n in ("aclnn-v2", "aclnn-v4",
                                                             "aclnn-ifa-v4")}
    assert len(cases) >= MIN_RUN and min(by_runner.values()) >= 40, by_runner
    failures = {}
    for name, case in cases:
        problems = run_checked(stub, monkeypatch, name, case)
        if problems:
            failures[f"{name} {case.case_id}"] = problems[:5]
    assert not failures, failures
    features = [c.features() for _, c in cases]
    reached = {"paged": any(f["paged"] for f in features),
               "kv_list": any(f["kv_list"] for f in features),
               "NZ": any(f["cache"] == "NZ" for f in features),
               "full_quant": any(f["full_quant"] for f in features),
               "rope": any(f["rope"] for f in features),
               "strided": any(f["view"] == "strided" for f in features),
               "int4": any(f["kv_dtype"] == "int4" for f in features),
               "antiquant": any(f["antiquant"] != "none" for f in features),
               "lse": any(f["lse"] for f in features),
               "no optionals": any(f["plain"] for f in features)}
    assert all(reached.values()), reached
    print(f"{len(cases)} cases {by_runner} in {time.monotonic() - t0:.1f}s")
