"""Which failing cases get a full bundle, and how many bytes a run's bundles may take.

A night with one common failure meets it in thousands of cases: their bundles would be
near-identical and would take most of the night's time and disk. So a run writes full
bundles for the first K failures of each signature (`--bundles-per-signature`) and for
each shrunk minimal case; every other failing row keeps its case, input digest,
statistics and worst elements in the results, and `signature_bundle`, the directory of
its signature's first bundle (`fia-fuzz repro CASE_ID` and `report --issue CASE_ID` work
on such a row: its inputs rebuild bit for bit from its case).

The K are the run's, not a worker's: every worker of every attempt (and every host that
shares OUT) claims a slot by creating `OUT/state/bundle-claims/<run_id>/<signature
digest>.<i>` for the first free i < K, a file that appears whole or not at all (a
temporary file, linked to its name), holding the case id. A claim whose bundle was not
written is given back (`release`); one a kill left without its bundle is dropped when the
run resumes (`drop_unfinished`). A shrunk minimal case is recorded there too
(`always-<case_id>`), so a resume knows every bundle of the run.

The byte budget (`--bundle-budget`, DEFAULT_BUDGET) is per run and host: a counter its
workers share (multiprocessing values, as `state.Claims`), starting on a resume from what
the run's bundles already take (`run_bytes`). A bundle that would pass it is not written
(it is measured in its temporary directory, which is then removed: never half a bundle),
the first such prints one line, and the campaign runs on; shrunk minimal cases are
always written, and counted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fia_fuzz.campaign.bundles import BUNDLES, dir_bytes
from fia_fuzz.campaign.config import size_text

#: Where a run's claims live, under OUT/state/.
CLAIMS = "bundle-claims"
#: Full bundles per failure signature and run, by default.
PER_SIGNATURE = 3
#: Bundle bytes a run may write on one host, by default: room for K bundles of a few
#: hundred signatures at tens of MB each (a large case's inputs, outputs and goldens),
#: small beside the disk of a host that runs a night.
DEFAULT_BUDGET = 16 << 30
_ALWAYS = "always-"


def signature_key(signature: str) -> str:
    """A signature as a file name (its SHA-256, 16 hex digits)."""
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def claims_dir(out: str | os.PathLike[str], run_id: str) -> Path:
    return Path(out) / "state" / CLAIMS / run_id


def _claimed(claim: Path) -> str:
    try:
        return claim.read_text().strip()
    except FileNotFoundError:
        return ""


def run_bytes(out: str | os.PathLike[str], run_id: str) -> int:
    """What the bundles the run `run_id` has written take on disk."""
    d = claims_dir(out, run_id)
    names = {_claimed(c) for c in d.iterdir()} if d.is_dir() else set()
    return sum(dir_bytes(Path(out) / BUNDLES / n) for n in names if n)


def drop_unfinished(out: str | os.PathLike[str], run_id: str) -> int:
    """Give back the run's claims whose bundle does not exist (a kill cut its write
    short); how many."""
    d = claims_dir(out, run_id)
    gone = 0
    for c in sorted(d.iterdir()) if d.is_dir() else []:
        name = _claimed(c)
        if not name or not (Path(out) / BUNDLES / name / "case.json").exists():
            c.unlink(missing_ok=True)
            gone += 1
    return gone


class BundleQuota:
    """One worker's view of its run's bundle slots and byte budget (see the module doc).

    `spent` and `announced` are the host's shared multiprocessing values (None: this
    worker's own, for one worker); `report` gets the one line the budget prints.
    """

    def __init__(self, out: str | os.PathLike[str], run_id: str, per_signature: int,
                 budget: int | None, spent: Any = None, announced: Any = None,
                 report: Callable[[dict[str, Any]], None] | None = None):
        self.out = Path(out)
        self.dir = claims_dir(out, run_id)
        self.per_signature = per_signature
        self.budget = budget
        if spent is None:
            import multiprocessing as mp

            spent, announced = mp.Value("q", run_bytes(out, run_id)), mp.Value("b", 0)
        self.spent, self.announced = spent, announced
        self.report = report

    def _create(self, name: str, case_id: str) -> Path | None:
        """The claim file `name` holding `case_id`, or None when it exists already."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".claim-", dir=self.dir)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(case_id)
            os.link(tmp, self.dir / name)
        except FileExistsError:
            return None
        finally:
            os.unlink(tmp)
        return self.dir / name

    def claim(self, signature: str, case_id: str) -> Path | None:
        """A slot for `case_id`'s full bundle among its signature's K, or None when the K
        are taken."""
        key = signature_key(signature)
        for i in range(self.per_signature):
            made = self._create(f"{key}.{i}", case_id)
            if made is not None:
                return made
            if _claimed(self.dir / f"{key}.{i}") == case_id:
                return self.dir / f"{key}.{i}"  # the same case again (a resume, a replay)
        return None

    def always(self, case_id: str) -> Path:
        """The record of a bundle written whatever the K (a shrunk minimal case)."""
        return self._create(_ALWAYS + case_id, case_id) or self.dir / (_ALWAYS + case_id)

    def release(self, claim: Path) -> None:
        """Give a slot back: its bundle was not written."""
        claim.unlink(missing_ok=True)

    def first(self, signature: str) -> str:
        """The directory of the signature's first bundle ('' when it has none yet)."""
        name = _claimed(self.dir / f"{signature_key(signature)}.0")
        return str(self.out / BUNDLES / name) if name else ""

    @property
    def exhausted(self) -> bool:
        """Whether the budget has refused a bundle (no slot is claimed after that)."""
        return bool(self.announced.value)

    def admit(self, nbytes: int, always: bool = False) -> bool:
        """Whether a bundle of `nbytes` may be written (counted when it may); False past
        the budget and from then on (the first refusal prints one line), True for a
        bundle written `always`."""
        with self.spent.get_lock():
            fits = self.budget is None or (not self.announced.value
                                           and self.spent.value + nbytes <= self.budget)
            if always or fits:
                self.spent.value += nbytes
                return True
            first = not self.announced.value
            self.announced.value = 1
        if first and self.report is not None:
            self.report({"type": "log", "text": (
                f"bundle budget reached: the run's bundles take {size_text(self.spent.value)} "
                f"of {size_text(self.budget)} (--bundle-budget); no more full bundles, the "
                "campaign goes on and every failing row keeps its case and statistics")})
        return False
