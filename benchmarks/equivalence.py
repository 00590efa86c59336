"""Materialisation and diff of this tree against a git revision's, over seeded nightly draws.

A speed change to `op/values.py` or `diff/` must keep the numbers: this
draws the nightly cases of `bench_campaign.py` with this tree, computes their
goldens and the torch-sdpa runner's output once (the device golden's where
the runner refuses), and hands the same arrays to a child process running
the package of revision REV (`git archive` into a temporary folder). Both
sides hash every materialised call (`Case.call()` of the same case JSON;
paged caches over 100 MB by their referenced blocks) and judge the same
outputs. Printed: each case whose hash differs, each metric that differs
with its relative size, and a summary line.

Run: .venv/bin/python benchmarks/equivalence.py --rev main [--cases 40] [--seed 18]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def call_digest(call: dict[str, Any]) -> str:
    """sha256 of a call's arguments (dtype, shape, bytes; big paged caches by referenced
    blocks, whose zero pages would otherwise all be mapped)."""
    h = hashlib.sha256()
    table = call.get("block_table")
    for k in sorted(call):
        for x in call[k] if isinstance(call[k], list) else [call[k]]:
            if not isinstance(x, np.ndarray):
                h.update(repr((k, x)).encode())
                continue
            if table is not None and x.nbytes > 1e8:
                ids = np.asarray(table).reshape(-1)
                x = x[np.unique(ids[ids >= 0])]
            h.update(f"{k} {x.dtype} {x.shape}".encode())
            h.update(np.ascontiguousarray(x).reshape(-1).view(np.uint8))
    return h.hexdigest()


def side(items_path: str, out_path: str) -> None:
    """Digests and judged rows of the pickled (case JSON, actual, truth, baseline) items."""
    from fia_fuzz.campaign.evaluate import judge_outputs
    from fia_fuzz.op.case import Case

    out = []
    with open(items_path, "rb") as f:
        items = pickle.load(f)
    for case_json, actual, truth, baseline in items:
        case = Case.from_json(case_json)
        out.append((call_digest(case.call()), judge_outputs(case, actual, truth, baseline)))
    with open(out_path, "wb") as f:
        pickle.dump(out, f)


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any, float]]:
    """(key, before, after, relative difference) of each value that differs."""
    out = []
    for k in sorted(set(a) | set(b)):
        u, v = a.get(k), b.get(k)
        if isinstance(u, float) and isinstance(v, float):
            if u == v or (math.isnan(u) and math.isnan(v)):
                continue
            out.append((k, u, v, abs(u - v) / max(abs(u), abs(v))))
        elif u != v:
            out.append((k, u, v, math.inf))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from bench_campaign import nightly_cases

    from fia_fuzz.campaign.evaluate import golden_pair
    from fia_fuzz.runners import get_runner

    runner = get_runner("torch-sdpa")
    with tempfile.TemporaryDirectory() as tmp:
        items, ids = [], []
        for _, case, _ in nightly_cases(args.cases, args.seed):
            ids.append(case.case_id)
            call = case.call()
            truth, baseline = golden_pair(call, case.rules)
            actual = runner.run(call) if runner.supports(case)[0] else baseline
            items.append((case.to_json(), actual, truth, baseline))
        items_path = os.path.join(tmp, "items.pkl")
        with open(items_path, "wb") as f:
            pickle.dump(items, f)
        del items
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.rev, "fia_fuzz"],
                                 capture_output=True, check=True).stdout
        tree = os.path.join(tmp, "tree")
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        for name, path in (("before", tree), ("after", ROOT)):
            subprocess.run([sys.executable, __file__, "--side", items_path,
                            os.path.join(tmp, name)], check=True,
                           env={**os.environ, "PYTHONPATH": path})
        with open(os.path.join(tmp, "before"), "rb") as f:
            before = pickle.load(f)
        with open(os.path.join(tmp, "after"), "rb") as f:
            after = pickle.load(f)
    hashes = values = 0
    worst = 0.0
    for i, ((h0, r0), (h1, r1)) in enumerate(zip(before, after, strict=True)):
        if h0 != h1:
            hashes += 1
            print(f"case {i} {ids[i]}: materialised call differs")
        for k, u, v, rel in differences(r0, r1):
            values += 1
            worst = max(worst, rel)
            print(f"case {i} {ids[i]} {k}: {u!r} -> {v!r} (relative {rel:.3g})")
    print(f"{len(before)} nightly cases against {args.rev}: {hashes} materialised calls "
          f"differ, {values} metric values differ, worst relative {worst:.3g}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--side":
        side(sys.argv[2], sys.argv[3])
    else:
        main()
