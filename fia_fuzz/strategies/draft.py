"""A case under construction and the size budget (tensor shapes: op/geometry.py).

Draws happen in dependency order (family and layout, then heads and head
dims, then B and lengths within the budget, then the features that constrain
each other); the Draft carries what later steps need to know about earlier
ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from fia_fuzz.op.edges import EMPTY_SHARES, LONG_KV, NUMEL_CLASSES, numel_class
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.choices import Chooser, Dead
from fia_fuzz.strategies.sizes import (
    ROUTE_TILES,
    TILES,
    heads_cap,
    kv_length,
    length,
    units_aim,
)


@dataclass(frozen=True)
class Profile:
    """Size budget of one draw (fia-semantics.md §10 limits stay far above it).

    max_elements bounds the elements of query+key+value, max_scores the score
    matrix B*N*S1*S2, max_flops the 2*B*N*S1*S2*(D+Dv) of the two matmuls.
    long_seq is the longest query a "long prefill" (S1 > 2048) draw may have, long_kv the
    longest KV a long-KV draw (B*N under SPLIT_BN, sizes.long_kv) may take: production
    decodes over 4K-128K keys [production-calls.md], within the element budget.
    cache_reach lists (with repeats as weights) where a paged BnBsH/BnNBsD cache's
    referenced blocks may sit: "near" the start, or past 2^24 / 2^31 / 2^32 elements in a
    lazy cache whose host cost follows the referenced lengths (geometry.referenced_blocks).
    workload_weight is the draw weight of the production patterns (strategies/
    workloads.py) beside cases.FAMILY_WEIGHTS, whose weights sum to 12.
    values_share: an unfiltered draw takes a value of the `values` axis other than
    "finite" (NaN/Inf, overflow, subnormals, ties: strategies/values.py) once in
    values_share + 1 draws; 0 (smoke) never, and draws nothing for it.
    specials: draw the documented special values of the arguments (a default spelled out
    explicitly, a sentinel given, a zero meaning another argument's: each argument's
    `special` draw, op/args); False (smoke) draws none unless a filter pins one, and
    makes no decision for them, so smoke's stream stays as it was.
    route_aims: sizes also aim at the Atlas A2 routes' thresholds (strategies/sizes.py
    ROUTE_TILES, ROUTE_UNITS: the V3 and decode kernels' 4096/8192 S2 tiles, B x KV heads
    one unit off the cube cores and on either side of the flash-decode split); False
    (smoke) makes no decision for them, so smoke's stream stays as it was.
    core_batch: where above max_batch, the largest batch a draw putting B on or past the
    cube cores takes (the batch_class axis, op/edges.py; sizes.batch), 0 for none.
    pair_aims: a stream's unfiltered draws are seeded walks, a share of them pinning the
    values of feature pairs the stream has not carried yet (strategies/pair_aims.py);
    False (smoke) makes no decision for them.
    """

    max_batch: int
    max_heads: int
    max_seq: int
    long_seq: int
    long_kv: int
    max_elements: int
    max_scores: int
    max_flops: int
    cache_reach: tuple[str, ...] = ("near",)
    workload_weight: int = 1
    values_share: int = 0
    specials: bool = False
    route_aims: bool = False
    core_batch: int = 0
    pair_aims: bool = False


PROFILES: dict[str, Profile] = {
    "smoke": Profile(max_batch=4, max_heads=64, max_seq=256, long_seq=4096, long_kv=4096,
                     max_elements=1 << 19, max_scores=1 << 19, max_flops=1 << 28),
    "nightly": Profile(max_batch=16, max_heads=128, max_seq=2048, long_seq=16384, long_kv=65536,
                       max_elements=1 << 23, max_scores=1 << 24, max_flops=1 << 33,
                       cache_reach=("near",) * 6 + ("2^24", "2^31", "2^32"),
                       workload_weight=5, values_share=11, specials=True, route_aims=True,
                       core_batch=32, pair_aims=True),
    "stress": Profile(max_batch=64, max_heads=256, max_seq=16384, long_seq=65536, long_kv=262144,
                      max_elements=1 << 27, max_scores=1 << 28, max_flops=1 << 38,
                      cache_reach=("near",) * 2 + ("2^31", "2^32", "2^32"), workload_weight=6,
                      values_share=11, specials=True, route_aims=True, pair_aims=True),
}

#: The budget of a far draw (a lazy cache referenced past 2^24, 2^31 or 2^32 elements): the
#: nightly budget, so the host memory of the case (materialised call, golden fp64 and
#: device precision, torch-sdpa) stays under 1 GiB however large the stress profile's
#: draws (benchmarks/bench_far_memory.py).
FAR_BUDGET = PROFILES["nightly"]
#: A documented special value is drawn once in SPECIAL_WEIGHT + 1 draws where it applies
#: (Draft.pick_special).
SPECIAL_WEIGHT = 3


#: Element budget of a draw filtered to numel_class "<2^16": a quarter of 2^16, as a paged
#: cache's largest block size may take EDGE_SLACK (4) times the budget (paged.block_size)
SMALL_BUDGET = (1 << 16) // 4


def pinned_profile(prof: Profile, pins: dict[str, Any]) -> Profile:
    """`prof`, or under a numel_class filter for tensors below 2^16 its budgets cut to
    SMALL_BUDGET (every size draw fits its tensors to them, so the class comes from
    construction) and its caches near."""
    if pins.get("numel_class") != NUMEL_CLASSES[0]:
        return prof
    return replace(prof, max_elements=min(prof.max_elements, SMALL_BUDGET),
                   max_scores=min(prof.max_scores, SMALL_BUDGET), cache_reach=("near",))


def numel_allows(ch: Chooser, numel: int) -> bool:
    """Whether a tensor of `numel` elements fits the numel_class filter (a class past it
    would be the case's: the class is its largest tensor's); True where none pins it."""
    pin = ch.pins.get("numel_class")
    return pin is None or NUMEL_CLASSES.index(numel_class(numel)) <= NUMEL_CLASSES.index(pin)


def far_profile(prof: Profile) -> Profile:
    """`prof` with its element, score and FLOP budgets capped at FAR_BUDGET's."""
    return replace(prof, max_elements=min(prof.max_elements, FAR_BUDGET.max_elements),
                   max_scores=min(prof.max_scores, FAR_BUDGET.max_scores),
                   max_flops=min(prof.max_flops, FAR_BUDGET.max_flops))


@dataclass
class Draft:
    """Everything decided so far about the case being drawn."""

    prof: Profile
    ch: Chooser
    params: dict[str, Any] = field(default_factory=dict)
    fills: dict[str, dict[str, Any]] = field(default_factory=dict)
    layout: str = "BNSD"       # the input_layout attribute
    q_layout: str = "BNSD"     # layout of query (and of contiguous key/value)
    out_layout: str = "BNSD"
    q_dtype: str = "float16"
    kv_dtype: str = "float16"
    decode: bool = False
    b: int = 1
    n: int = 1
    kv_n: int = 1
    d: int = 64
    dv: int = 64
    s1: int = 1
    s2: int = 1                # key/value S (for paged: table width * block size)
    prefix_s: int = 0          # shared-prefix S, counted in mask/pse S2
    q_lens: list[int] = field(default_factory=list)   # effective per-batch lengths
    kv_lens: list[int] = field(default_factory=list)
    int8_out: bool = False
    int8_offset: bool = False
    paged: bool = False
    lazy: bool = False         # paged caches hold data in their referenced blocks only
    reach: str = "near"        # where a lazy cache's referenced blocks sit (paged.reach)
    kv_list: bool = False
    padded: bool = False
    long: bool = False         # a long-KV draw: B*N under SPLIT_BN, KV up to long_kv

    def set(self, name: str, value: Any) -> None:
        self.params[name] = value

    @property
    def branch(self) -> str:
        """The branch the argument forms of op/forms.py are qualified with."""
        return "decode" if self.decode else "prefill"

    def pick_form(self, axis: str, options: dict[str, Any],
                  weights: dict[str, int] | None = None) -> Any:
        """The value of the option whose form (a op/forms.py axis value) is picked;
        `weights` (default 1) make forms that share their draws with few others as common
        as those that share them with many."""
        if len(options) == 1:
            return options[self.ch.fixed(axis, next(iter(options)))]
        return options[self.ch.pick(axis, weighted(tuple(options), weights or {}))]

    def pick_special(self, axis: str, usual: str, options: dict[str, Any],
                     weight: int = SPECIAL_WEIGHT) -> Any:
        """The value of form `usual` or of a documented special form of `axis` (`options`:
        form -> value, the usual one among them): drawn where the profile draws specials
        (the usual form `weight` times as often as each special one), or where a filter
        pins `axis`; elsewhere the usual value, drawing nothing."""
        if not self.prof.specials and axis not in self.ch.pins:
            return options[usual]
        return self.pick_form(axis, {usual: options[usual], **options}, {usual: weight})

    @property
    def s2_total(self) -> int:
        """KV positions a mask or pse must cover: prefix plus key S [V4 pseShift, SEM §6]."""
        return self.s2 + self.prefix_s


def weighted(options: tuple[Any, ...], weights: dict[Any, int]) -> tuple[Any, ...]:
    """`options`, then each again weights[option] - 1 times (default weight 1): a pick among
    them takes an option as often as its weight and still shrinks to the first; the repeats
    go last, as Hypothesis favours the first index of a pick beyond its share."""
    return options + tuple(x for x in options for _ in range(weights.get(x, 1) - 1))


def spec(shp: tuple[int, ...], dtype: str) -> TensorSpec:
    return TensorSpec(tuple(int(x) for x in shp), dtype)


def cap(lo: int, hi: int, budget: float) -> int:
    """The largest value in [lo, hi] within `budget` (lo when even lo is over it)."""
    return max(lo, min(hi, int(budget)))


def heads(dr: Draft, max_n: int, groups: tuple[int, ...], kv_fixed: int | None = None
          ) -> None:
    """N and KV_N with G = N/KV_N from `groups` (simplest first), honouring gqa/g_class pins;
    a draw aiming at a route's split (Chooser.aim) takes a KV_N that divides one of the
    work units it aims at (sizes.units_aim)."""
    ch = dr.ch
    gq = ch.pins.get("gqa")
    max_n = heads_cap(ch, max_n)
    opts = [g for g in groups if g <= max_n and ch.allows("g_class", g_class(g))
            and (gq is None or (gq == "mha") == (g == 1))]
    if kv_fixed is not None:
        opts = [g for g in opts if g * kv_fixed <= max_n and (gq != "gqa" or kv_fixed > 1)
                and (gq != "mqa" or kv_fixed == 1)]
    elif gq == "gqa":
        opts = [g for g in opts if 2 * g <= max_n]
    if units_aim(ch) and 1 in opts and ch.coin():  # odd unit counts need G = 1
        opts = [1]
    g = ch.pick("_g", opts)
    if kv_fixed is not None:
        kv_n = kv_fixed
    elif gq == "mqa":
        kv_n = 1
    else:
        lo = 2 if gq == "gqa" else 1
        hi = max(lo, max_n // g)
        aimed = [k for k in range(lo, hi + 1) if any(t % k == 0 for t in units_aim(ch))]
        kv_n = ch.one(aimed) if aimed else ch.int(lo, hi)
    dr.n, dr.kv_n = g * kv_n, kv_n


def g_class(g: int) -> str:
    return "1" if g == 1 else "2-8" if g <= 8 else "9-63" if g < 64 else "64"


def q_seq_bounds(dr: Draft, cls: str) -> tuple[int, int]:
    """Query S range of a q_seq class: decode, MTP, prefill, long prefill."""
    p = dr.prof
    return {"0": (0, 0), "1": (1, 1), "2-16": (2, 16), "17-2048": (17, min(2048, p.max_seq)),
            ">2048": (2049, p.long_seq)}[cls]


def aim_units(dr: Draft) -> int | None:
    """The KV heads whose multiples of B a profile that aims at routes puts on the routes'
    split thresholds (sizes.batch), None in the others (no decision drawn)."""
    return dr.kv_n if dr.prof.route_aims else None


def batch_cap(dr: Draft, s1: int, s2: int, hi: int) -> int:
    """Largest B whose smallest tensors and scores fit the budget."""
    p = dr.prof
    per_b = dr.n * s1 * dr.d + dr.kv_n * s2 * (dr.d + dr.dv)
    return cap(1, hi, min(p.max_elements / max(1, per_b),
                          p.max_scores / max(1, dr.n * s1 * max(1, s2))))


def s1_cap(dr: Draft, lo: int, hi: int, s2_floor: int = 1) -> int:
    """Largest query S whose tensors and scores (over at least `s2_floor` keys: a paged
    cache's one block) fit the budget; for a long-KV draw, short enough that LONG_KV keys
    still fit the score and FLOP budgets."""
    p = dr.prof
    rows = p.max_scores / (dr.b * dr.n * s2_floor)
    if dr.long:
        rows = min(rows * s2_floor / LONG_KV,
                   p.max_flops / (2 * dr.b * dr.n * LONG_KV * (dr.d + dr.dv)))
    return cap(lo, hi, min(p.max_elements / (2 * dr.b * dr.n * dr.d), rows))


def s2_cap(dr: Draft, lo: int, hi: int, s1: int) -> int:
    """Largest KV S fitting the elements, scores and FLOPs budget given B, N, S1."""
    p = dr.prof
    left = p.max_elements - dr.b * dr.n * s1 * dr.d
    rows = dr.b * dr.n * max(1, s1)
    return cap(lo, hi, min(left / (dr.b * dr.kv_n * (dr.d + dr.dv)), p.max_scores / rows,
                           p.max_flops / (2 * rows * (dr.d + dr.dv))))


def lengths(dr: Draft, feature: str, caps: list[int], forms: tuple[str, ...], lo: int = 0
            ) -> list[int] | None:
    """An actual_seq_lengths(_kv) list in one of the accepted forms [V4 actualSeqLengths].

    Absent, length 1 (same for every batch), length B, or longer than B (the
    extra entries are ignored). Each value is free (a shortfall below its cap,
    so it shrinks toward the full length; zeros are reachable) or at a kernel
    edge (strategies/sizes.py).
    """
    ch = dr.ch
    # a `values` filter on padding needs a length short of its cap
    short = ch.pins.get("values") in PADDING_VALUES
    if feature not in ch.pins:
        if feature == "actual_kv" and wants_empty(ch):  # only per-batch lengths empty one
            forms = tuple(f for f in forms if f in ("per_batch", "longer")) or forms
        if short:
            forms = tuple(f for f in forms if f != "absent") or forms
    form = ch.pick(feature, forms)
    if form == "absent":
        return None
    def draw(lo: int, hi: int) -> int:
        if feature == "actual_kv":
            x = kv_len(dr, lo, hi, top=True)
        elif "q_rows" in ch.pins:  # the class is the longest valid query's: keep the query's
            x = hi
        else:
            x = length(ch, lo, hi, top=True, tiles=sizes_tiles(dr), role="q")
        return hi - 1 if short and x == hi > lo else x

    if form == "one" and feature == "actual_kv" and lo == 0 and _all_empty(dr):
        return [0]
    if form == "one":
        top = min(caps)
        return [draw(lo, top)] if top >= lo else [lo]
    out = [draw(lo, c) if c >= lo else c for c in caps]
    if feature == "actual_kv" and lo == 0:
        out = empty_batches(dr, out)
    if form == "longer":
        out += [ch.int(0, max(caps)) for _ in range(ch.int(1, 2))]
    return out


#: `values` that place specials past the valid lengths (strategies/values.py)
PADDING_VALUES = ("nan_padding", "inf_padding")
#: A profile with route aims empties some batches' KV in one of EMPTY_EVERY per-batch KV
#: length draws (the empty_share axis, op/edges.py)
EMPTY_EVERY = 4


#: The fewest batches an empty_share takes (op/edges.py empty_share: two empty of at least
#: five for "few", of at least three for "half"), for B draws under such a filter
EMPTY_BATCHES_MIN = {"one": 2, "few": 5, "half": 3}


def empty_batch_lo(ch: Chooser) -> int:
    """The least B a draw takes: 1, or what an empty_share filter needs (EMPTY_BATCHES_MIN)."""
    return EMPTY_BATCHES_MIN.get(ch.pins.get("empty_share", "none"), 1)


def wants_empty(ch: Chooser) -> bool:
    """True when a filter needs a per-batch KV length of 0 (empty_share, act_zero)."""
    return ch.pins.get("empty_share", "none") != "none" or ch.pinned("act_zero", True)


def empty_batches(dr: Draft, lens: list[int]) -> list[int]:
    """Per-batch KV lengths with a share of them 0 (op/edges.py EMPTY_SHARES): drawn in
    profiles with route aims, steered by an empty_share (or act_zero) filter in any;
    smoke's unfiltered draws decide nothing here."""
    ch, b = dr.ch, len(lens)
    pin = ch.pins.get("empty_share")
    if pin is None and _all_empty(dr):
        pin = "all"
    if pin is None and "act_zero" in ch.pins:  # an empty batch carries a zero length
        pin = ch.one(tuple(s for s in EMPTY_SHARES[1:] if EMPTY_BATCHES_MIN.get(s, 1) <= b)) \
            if ch.pins["act_zero"] else "none"
    if pin is None and not dr.prof.route_aims:
        return lens
    if pin is None:
        share = ch.one(EMPTY_SHARES[1:]) if ch.int(0, EMPTY_EVERY - 1) == 0 else "none"
    else:
        share = pin
    counts = {"one": (1, 1 if b > 1 else 0), "few": (2, (b - 1) // 2),
              "half": (max(2, -(-b // 2)), b - 1), "all": (b, b)}.get(share)
    if counts is None or counts[0] > counts[1]:
        if pin not in (None, "none"):
            raise Dead(f"empty_share={pin!r}: no such share of {b} batches")
        return lens
    k, start = ch.int(*counts), ch.int(0, b - 1)
    # under a filter the other batches keep a key, so the share is the one drawn
    floor = 0 if pin is None else 1
    return [0 if (i - start) % b < k else max(floor, x) for i, x in enumerate(lens)]


def _all_empty(dr: Draft) -> bool:
    """Whether the filters need every batch's KV empty: empty_share "all", or a far cache
    whose reach reads "near" (no batch references a block of it, paged.reach)."""
    ch = dr.ch
    return ch.pinned("empty_share", "all") or (dr.reach != "near"
                                               and ch.pinned("cache_reach", "near"))


def kv_len(dr: Draft, lo: int, hi: int, top: bool = False) -> int:
    """A KV length in [lo, hi], free or at a kernel edge (strategies/sizes.py), LONG_KV+
    in a long-KV draw where hi allows."""
    return kv_length(dr.ch, lo, hi, top, dr.long, sizes_tiles(dr),
                     dr.n // dr.kv_n if dr.n and dr.kv_n else 1)


def sizes_tiles(dr: Draft) -> tuple[int, ...]:
    """The tiles a draw's lengths aim at: the routes' too where the profile aims at them."""
    return ROUTE_TILES if dr.prof.route_aims else TILES


def effective(values: list[int] | None, b: int, full: list[int]) -> list[int]:
    """Per-batch lengths the op uses: absent -> full, one -> broadcast, else first B."""
    if values is None:
        return list(full)
    if len(values) == 1:
        return values * b
    return values[:b]


def numel(shp: tuple[int, ...]) -> int:
    return math.prod(shp)


def dead_unless(ok: bool, why: str) -> None:
    if not ok:
        raise Dead(why)
