"""Golden outputs of stored cases are pinned bit for bit per machine kind, and bounded on
any other.

The cases (`pinned_cases/*.json`, one per family and value regime) are files, not
draws, so a venv with another Hypothesis runs the same calls. Their inputs are pinned
on every machine and in every venv (`scripts/compat.sh` runs this at the oldest and the
newest library versions): no library decides a rounding of ours. The golden's outputs
depend on the machine kind (numerics/environment.py `machine_kind`: the CPU
architecture, the OpenBLAS core and release, NumPy's release and SIMD target, numba's
release and vector target), so `digests.json` pins them per recorded kind. On every
kind, recorded or not, they are also checked against `reference.npz` (a summary of
one kind's outputs) within the cross-kind bound (numerics/cross_kind.py); on a kind
nobody recorded that is the check, and the run warns that its bits are not pinned.

Record this machine kind (merged into `digests.json`; `--reference` also rewrites
`reference.npz`, after a change to the golden): `python tests/golden/test_golden_pinned.py`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fia_fuzz.campaign.evaluate import golden_pair
from fia_fuzz.numerics.cross_kind import bound, scale_and_gap, summary, summary_excess
from fia_fuzz.numerics.environment import machine_kind
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest

pytestmark = pytest.mark.compat

HERE = Path(__file__).parent / "pinned_cases"
CASES = sorted(p.stem for p in HERE.glob("*.json") if p.name != "digests.json")
DIGESTS = HERE / "digests.json"
REFERENCE = HERE / "reference.npz"
PINNED = json.loads(DIGESTS.read_text())
#: Output parts of a golden pair, and its two precisions (the device one's dtype is its own).
PARTS, TAGS = ("out", "lse"), ("fp64", "device")


def _update(h: Any, x: Any) -> None:
    if isinstance(x, (list, tuple)):
        h.update(f"[{len(x)}".encode())
        for item in x:
            _update(h, item)
    elif isinstance(x, np.ndarray):
        h.update(f"{x.dtype} {x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    else:
        h.update(repr(x).encode())


def digest(x: Any) -> str:
    h = hashlib.sha256()
    _update(h, x)
    return h.hexdigest()[:16]


def _call(name: str) -> dict[str, Any]:
    return Case.from_json((HERE / f"{name}.json").read_text()).call()


def golden(name: str) -> tuple[Any, Any]:
    """(fp64 golden, device-precision golden) of a stored case."""
    return golden_pair(_call(name))


def digests(pair: tuple[Any, Any]) -> dict[str, str]:
    truth, baseline = pair
    return {"fp64": digest(truth), "device": digest(baseline)}


def reference_entry(name: str, pair: tuple[Any, Any]) -> dict[str, np.ndarray]:
    """`reference.npz`'s arrays for one case: each output's summary per precision, and its
    scale and gap (numerics/cross_kind.py)."""
    entry: dict[str, np.ndarray] = {}
    for i, part in enumerate(PARTS):
        t, d = (np.asarray(x[i]) for x in pair)
        entry[f"{name}/{part}/scale_gap"] = np.array(scale_and_gap(t, d))
        for tag, x in zip(TAGS, (t, d), strict=True):
            entry.update({f"{name}/{part}/{tag}/{k}": v for k, v in summary(x).items()})
    return entry


def off_reference(name: str, pair: tuple[Any, Any], ref: Any) -> list[str]:
    """Each output of `pair` not within the cross-kind bound of the stored reference."""
    problems = []
    for i, part in enumerate(PARTS):
        scale, gap = ref[f"{name}/{part}/scale_gap"]
        gap = min(gap, scale_and_gap(pair[0][i], pair[1][i])[1])  # neither side widens it
        for tag, x in zip(TAGS, (pair[0][i], pair[1][i]), strict=True):
            x = np.asarray(x)
            limit = bound(None if tag == "fp64" else x.dtype, scale, gap)
            stored = {k: ref[f"{name}/{part}/{tag}/{k}"] for k in ("size", "counts", "stats",
                                                                  "samples")}
            why = summary_excess(x, stored, limit)
            if why:
                problems.append(f"{name} {tag} {part}: {why}")
    return problems


#: The arrays of a reference entry (`reference_entry`), and the shape each is read back in.
STATS = {"size": (-1,), "counts": (-1, 3), "stats": (-1, 3), "samples": (-1,),
         "scale_gap": (-1,)}


def _save_reference(entries: dict[str, np.ndarray], kind: str) -> None:
    """reference.npz: one row per entry of one array per statistic (NaN-padded, with its
    length), so the file holds a dozen arrays, not hundreds."""
    keys = sorted({k.rsplit("/", 1)[0] for k in entries})
    packed = {"kind": np.array(kind), "keys": np.array(keys)}
    for stat in STATS:
        rows = [entries.get(f"{k}/{stat}") for k in keys]
        flat = [np.zeros(0) if r is None else np.asarray(r, np.float64).reshape(-1)
                for r in rows]
        table = np.full((len(keys), max(r.size for r in flat)), np.nan)
        for i, r in enumerate(flat):
            table[i, :r.size] = r
        packed[stat] = table  # its length, -1 where the entry has no such statistic
        packed[f"{stat}_n"] = np.array([-1 if r is None else f.size
                                        for r, f in zip(rows, flat, strict=True)])
    np.savez_compressed(REFERENCE, **packed)


def _reference() -> dict[str, Any] | None:
    """reference.npz read back as {entry key: array} and its 'kind'."""
    if not REFERENCE.exists():
        return None
    with np.load(REFERENCE) as z:
        ref: dict[str, Any] = {"kind": str(z["kind"])}
        for i, key in enumerate(z["keys"]):
            for stat, shape in STATS.items():
                n = int(z[f"{stat}_n"][i])
                if n >= 0:
                    row = z[stat][i, :n].reshape(shape)
                    ref[f"{key}/{stat}"] = row.astype(np.int64) if stat in ("size", "counts") \
                        else row
    return ref


def test_every_case_is_pinned() -> None:
    assert CASES and set(PINNED["inputs"]) == set(CASES)
    ref = _reference()
    assert ref is not None and {k.split("/")[0] for k in ref} - {"kind"} == set(CASES)
    assert all(set(d) == set(CASES) for d in PINNED["golden"].values())


@pytest.mark.parametrize("name", CASES)
def test_inputs_are_pinned(name: str) -> None:
    assert input_digest(_call(name)) == PINNED["inputs"][name]


@pytest.mark.parametrize("name", CASES)
def test_golden_outputs_are_pinned_on_this_machine_kind(name: str) -> None:
    """Within the cross-kind bound of the reference on any kind, and bit for bit where
    this kind is recorded; elsewhere a warning names the kind."""
    kind, pair, ref = machine_kind(), golden(name), _reference()
    problems = off_reference(name, pair, ref)
    assert not problems, (f"golden outputs outside the cross-kind bound of the reference "
                          f"recorded on {ref['kind']} (here {kind}): {problems}")
    if kind in PINNED["golden"]:
        assert digests(pair) == PINNED["golden"][kind][name]
    else:
        warnings.warn(UserWarning(  # a builtin class: xdist's controller rebuilds it
            f"machine kind {kind!r} is not recorded: golden bits not pinned here, outputs "
            f"checked within the cross-kind bound of the reference recorded on "
            f"{ref['kind']}; record it: python tests/golden/test_golden_pinned.py"),
            stacklevel=1)


def test_the_bound_catches_a_golden_moved_past_it() -> None:
    """The reference check is not vacuous: a golden whose every element moved by a
    quarter of the output's scale times float32's epsilon, or one element by a
    thousandth of that scale, fails it on its fp64 precision."""
    name = "dense_bf16_decode"
    pair = golden(name)
    ref = {**reference_entry(name, pair), "kind": "this process"}
    assert off_reference(name, pair, ref) == []
    (out, lse), device = pair
    shifted = (out + np.float32(np.finfo(np.float32).eps) * np.abs(out).max() / 4, lse)
    assert off_reference(name, (shifted, device), ref) == [
        f"{name} fp64 out: " + off_reference(name, (shifted, device), ref)[0].split(": ", 1)[1]]
    one = out.copy()
    one.reshape(-1)[0] += np.abs(out).max() / 1000
    assert off_reference(name, ((one, lse), device), ref)  # element 0 is sampled


def record(reference: bool) -> str:
    """Merge this machine kind's digests into digests.json (and with `reference` rewrite
    reference.npz from it); the inputs must be those pinned, and its outputs within the
    bound of the reference. Returns the kind."""
    kind = machine_kind()
    if kind is None:
        raise SystemExit("this machine kind cannot be named (environment incomplete)")
    pairs = {n: golden(n) for n in CASES}
    moved = [n for n in CASES if input_digest(_call(n)) != PINNED["inputs"].get(n)]
    if moved and PINNED["inputs"]:
        raise SystemExit(f"inputs differ from those pinned: {moved}; not recording")
    if reference:
        _save_reference({k: v for n, pair in pairs.items()
                         for k, v in reference_entry(n, pair).items()}, kind)
    ref = _reference()
    off = [p for n, pair in pairs.items() for p in off_reference(n, pair, ref)]
    if off:
        raise SystemExit(f"outside the cross-kind bound of the reference: {off}; not recording")
    PINNED["inputs"] = {n: input_digest(_call(n)) for n in CASES}
    PINNED["golden"][kind] = {n: digests(pair) for n, pair in pairs.items()}
    DIGESTS.write_text(json.dumps(PINNED, indent=1, sort_keys=True) + "\n")
    return kind


if __name__ == "__main__":
    print(f"recorded golden digests for {record('--reference' in sys.argv[1:])}")
