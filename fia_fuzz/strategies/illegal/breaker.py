"""What a breaker is: a legal neighbourhood where a rule applies, and the change that breaks it.

A breaker is written (a `change` function in `illegal/<prefix>.py`) or
searched: `searched(base, mutation)` replays one named mutation of
`strategies/edits.py` that the breaker search found to break the rule alone
from `cases(**base)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.strategies.cases import cases
from fia_fuzz.strategies.choices import HypothesisChooser
from fia_fuzz.strategies.edits import MUTATIONS, Change, with_axis

#: Base filters shared by several prefixes' breakers.
PLAIN_BNSD = {"plain": True, "layout": "BNSD"}
#: Paged bases; breakers whose change a 5-D NZ cache's own rules would also catch pin
#: the cache form (gqa_nz draws NZ without rope).
PAGED = {"paged": True, "rope": False}
#: A paged BNSD decode without antiquant: the common base of paged, length and rope breakers.
PAGED_DECODE = {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode"}
#: One base per family, by its name in width.family, for breakers whose change holds in
#: every family (see `over_families`; EVERY_FAMILY adds layout kinds and forms).
FAMILY_BASE: dict[str, dict[str, Any]] = {
    "dense": PLAIN_BNSD, "antiquant": {"antiquant": "separate:1/1"},
    "full_quant": {"full_quant": True, "rope": False}, "packed": {"layout": "TND", "rope": False},
    "packed_mla": {"rope_d": "128"}, "mla": {"rope_d": "512"},
    "gqa_nz": {"cache": "NZ", "rope": False}}
#: Contiguous BNSD full-quant bases, for changes written on BNSD shapes (`edits.bnsd`; with
#: `follow_heads` where they move N or the value's D).
FULL_QUANT_BNSD = {**FAMILY_BASE["full_quant"], "layout": "BNSD", "paged": False}
#: Paged bases of the dense family (no antiquant, full quant or rope).
PAGED_DENSE = {"antiquant": "none", "full_quant": False, "rope": False, "paged": True}
#: One base per family and layout kind (dense plain, paged and BSH; antiquant combined,
#: separate and paged; full quant; packed, paged or not; packed MLA; MLA; NZ caches), for the
#: breakers of rules every call carries (an attribute's range), whose change holds anywhere.
EVERY_FAMILY = ({"plain": True, "layout": "BSH"},
                PAGED_DENSE, {"antiquant": "combined:0"}, FAMILY_BASE["antiquant"],
                {"antiquant": "separate:0/0", "paged": True},
                FAMILY_BASE["full_quant"], FAMILY_BASE["packed"], {"layout": "NTD_TND"},
                FAMILY_BASE["packed_mla"], FAMILY_BASE["mla"], FAMILY_BASE["gqa_nz"])
#: Contiguous BNSD bases of the int-KV families without the inputs sized by B, S or D
#: (lengths, mask, pse, prefix, post-quant), for changes that rewrite query, key and value
#: through edits.bnsd_qkv like those of the plain base: per-tensor antiquant, and full
#: quant (dense int8).
BARE_BNSD = {"layout": "BNSD", "paged": False, "kv_list": False, "pse": False, "mask": "none",
             "actual_q": "absent", "actual_kv": "absent", "prefix": False}
AQ_BNSD = {**BARE_BNSD, "antiquant": "separate:0/0"}
FQ_BNSD = {**BARE_BNSD, **FAMILY_BASE["full_quant"], "post_quant": False}
#: Host memory past which a broken case is host-sized: legal draws keep the golden pair under
#: 1 GiB (DEVELOPERS.md, Determinism), and a negative run must not allocate more. A change
#: that grows a tensor (mask.full_form's mask batch of 2048) can land past it from a large base.
HOST_SIZED = 1 << 30


def follow_heads(case: Case, n: int | None = None, dv: int | None = None) -> Change:
    """What follows query heads `n` or value head dim `dv` in a BNSD case (None: unchanged):
    pse_shift (B|1, N, S1, S2), and a per-channel quant_scale2/quant_offset2, (1, N, 1, Dv)
    or (N, Dv) for a BNSD output (strategies/quant.py post_quant)."""
    out: Change = {}
    pse = case.params.get("pse_shift")
    if pse is not None and n is not None:
        out["pse_shift"] = with_axis(pse, 1, n)
    for name in ("quant_scale2", "quant_offset2"):
        t = case.params.get(name)
        if t is None or t.numel == 1:
            continue
        if n is not None:
            t = with_axis(t, -3 if t.ndim == 4 else 0, n)
        if dv is not None:
            t = with_axis(t, -1, dv)
        out[name] = t
    return out


def host_sized(case: Case) -> bool:
    """Whether materialising `case` takes more host memory than HOST_SIZED."""
    return case.host_bytes() > HOST_SIZED


@dataclass(frozen=True)
class Breaker:
    """How to break one rule: a legal base case, then a change drawn from it.

    The base is `cases(**base)` or any of `cases(**alt[i])` (filters cannot say
    "one of these layouts"), drawn legal under the rule profile `rules` (a device
    profile's route breakers start from the regions only it admits). `routes` are
    bases pinned to the Atlas A2 routes the others miss (`spans.py`). `mutation` names
    the replayed mutation of a searched breaker (None: a written one).
    """

    change: Callable[[st.DrawFn, Case], Change]
    base: dict[str, Any] = field(default_factory=dict)
    alt: tuple[dict[str, Any], ...] = ()
    mutation: str | None = None
    rules: str = DEFAULT
    routes: tuple[dict[str, Any], ...] = ()

    def cases(self) -> st.SearchStrategy[Case]:
        """The legal cases this breaker starts from: half from its own bases, half from its
        route bases where it has any (built on first draw: `illegal_cases()` holds every
        breaker's bases and draws from a few)."""
        own = st.one_of([cases(rules=self.rules, **b) for b in (self.base, *self.alt)])
        if not self.routes:
            return own
        return st.one_of(own, st.one_of([st.deferred(lambda b=b: cases(rules=self.rules, **b))
                                         for b in self.routes]))


def searched(base: dict[str, Any], mutation: str,
             alt: tuple[dict[str, Any], ...] = (), also: tuple[str, ...] = ()) -> Breaker:
    """A breaker found by the search: replay the named mutation with Hypothesis draws, from
    `cases(**base)` or any of `cases(**alt[i])` (bases of other families where the same
    mutation breaks the rule alone); with `also`, one of `mutation` and those (the other
    sides of the rule's bound) is drawn each time."""
    names = (mutation, *also)

    def change(draw: st.DrawFn, case: Case) -> Change:
        name = draw(st.sampled_from(names)) if also else mutation
        out = MUTATIONS[name](HypothesisChooser(draw, {}), case)
        if out is None:
            reject()
        return out
    return Breaker(change, base, alt, mutation=mutation)


def over_families(change: Callable[[st.DrawFn, Case], Change], *order: str) -> Breaker:
    """A written breaker drawing a base of each family in `order` (FAMILY_BASE names)."""
    first, *rest = (FAMILY_BASE[f] for f in order)
    return Breaker(change, first, tuple(rest))
