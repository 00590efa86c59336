"""The feature axes of `case.features()` that strategies must reach, each with its values.

One table serves three users: `cases(**filters)` validates filters against it,
the meta-tests check every value is reached, and `fia-fuzz coverage` prints
hit counts per value. Value order is the shrink order of the strategy (the
simplest value first). The core axes are written here; each optional
argument's feature axes and form axes come from its module in
`fia_fuzz/op/args/` (derived, so an argument added there is an axis here).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op import args
from fia_fuzz.op.edges import BATCH_CLASSES, EMPTY_SHARES, NUMEL_CLASSES, SIZE_EDGES
from fia_fuzz.op.features import VALUES, WORKLOADS
from fia_fuzz.rules.profiles import a2_routes
from fia_fuzz.rules.profiles.a2_routes import sizes

BOOL = (False, True)

#: The axes of the call itself (layout, dtypes, sizes, fills, classifications of the whole).
CORE_AXES: dict[str, tuple[Any, ...]] = {
    "layout": ("BNSD", "BSND", "BSH", "BNSD_BSND", "TND", "NTD_TND", "TND_NTD",
               "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD"),
    "q_dtype": ("float16", "bfloat16", "int8"),
    "kv_dtype": ("float16", "bfloat16", "int8", "int4", "int32"),
    "out_dtype": ("float16", "bfloat16", "int8"),
    "branch": ("prefill", "decode"),
    "q_seq": ("2-16", "17-2048", "1", ">2048", "0"),
    "gqa": ("mha", "gqa", "mqa"),
    "g_class": ("1", "2-8", "9-63", "64"),
    "d_class": ("64-128", "<64", "129-256", "257-511", "512"),
    "dv": ("equal", "unequal"),
    "kv_list": BOOL,
    "empty": ("none", "query", "kv"),
    "q_dist": ("normal", "uniform", "outlier", "const_rows", "large", "negative", "positive",
               "int"),
    "k_dist": ("normal", "uniform", "outlier", "const_rows", "large", "negative", "int"),
    "v_dist": ("normal", "uniform", "outlier", "const_rows", "large", "negative", "int"),
    "logits": ("mixed", "all_negative"),
    "values": VALUES,
    "plain": BOOL,
    "view": ("contiguous", "strided"),
    "workload": WORKLOADS,
    "size_edge": SIZE_EDGES,
    # size classes where the host code branches (op/edges.py)
    "numel_class": NUMEL_CLASSES,
    "empty_share": EMPTY_SHARES,
    "batch_class": BATCH_CLASSES,
}

#: The Atlas A2 route a call takes, the (route, boundary) cell it sits on and its sizes
#: against the route's tiling (rules/profiles/a2_routes, its sizes.py; case.features()
#: reports them through op/features DERIVED).
ROUTE_AXES: dict[str, tuple[Any, ...]] = {
    "route": a2_routes.ROUTES,
    "route_edge": (a2_routes.FREE, *a2_routes.CELLS),
    "units_class": sizes.UNITS_CLASSES,
    "kv_tiles": sizes.KV_TILE_CLASSES,
    "q_rows": sizes.Q_ROW_CLASSES,
}

#: Every axis: the core ones, each argument's features, then one axis per argument form.
AXES: args.DerivedDict = args.DerivedDict(
    lambda: {**CORE_AXES, **ROUTE_AXES, **args.feature_axes(), **args.form_axes()})


#: Axis values only the nightly and stress profiles draw: smoke keeps cases small (its
#: caches never reach past 2^24 elements, no tensor past 2^24, no batch past 4, so no two
#: empty batches under half of them); a filter for one needs profile="nightly".
LARGE_ONLY: frozenset[tuple[str, Any]] = frozenset({
    ("cache_reach", "2^24"), ("cache_reach", "2^31"), ("cache_reach", "2^32"),
    ("numel_class", "2^24"),
    ("numel_class", "2^31"), ("numel_class", "2^32"), ("batch_class", "cores"),
    ("batch_class", "over"), ("empty_share", "few")})
#: Axis values unfiltered smoke draws never take (strategies/values.py: only profiles with a
#: values share draw them; the arguments' documented special values, op/args `specials`:
#: only profiles with `specials`), though a smoke filter for one draws it.
#: Nor one or half of the batches empty (strategies/draft.py `empty_batches`: only profiles
#: with route aims draw them; "few" needs five batches, LARGE_ONLY).
FILTER_ONLY_IN_SMOKE: frozenset[tuple[str, Any]] = frozenset(
    ("values", v) for v in VALUES if v != "finite") | args.special_forms() | frozenset(
    ("empty_share", v) for v in ("one", "half"))
#: Route values and cells the smoke stream need not reach: its stream is fixed, and the
#: routes are what the nightly profile aims at (Profile.route_aims, strategies/routes.py).
ROUTES_NOT_IN_SMOKE: frozenset[tuple[str, Any]] = frozenset(
    (axis, v) for axis, values in ROUTE_AXES.items() for v in values)
