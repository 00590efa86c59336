"""The feature axes of `case.features()` that strategies must reach, each with its values.

One table serves three users: `cases(**filters)` validates filters against it,
the meta-tests check every value is reached, and `fia-fuzz coverage` prints
hit counts per value. Value order is the shrink order of the strategy (the
simplest value first).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.edges import SIZE_EDGES, TABLE_WIDTHS
from fia_fuzz.op.features import VALUES, WORKLOADS
from fia_fuzz.op.forms import FORM_AXES
from fia_fuzz.op.geometry import CACHE_FORMS

BOOL = (False, True)

AXES: dict[str, tuple[Any, ...]] = {
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
    "paged": BOOL,
    "cache": ("none", *CACHE_FORMS),
    "block_edge": ("none", "mid", "min", "max"),
    "cache_reach": ("near", "2^31", "2^32"),
    "table_unused": BOOL,
    "table_spare": BOOL,
    "table_shuffled": BOOL,
    "table_oversized": BOOL,
    "table_width": TABLE_WIDTHS,
    "sparse_mode": (0, 1, 2, 3, 4),
    "band": ("default", "small", "huge", "negative"),
    "mask": ("none", "bool", "int8", "uint8"),
    "mask_shape": ("none", "S1,S2", "B,S1,S2", "1,S1,S2", "B,1,S1,S2", "1,1,S1,S2",
                   "B,S2", "B,1,S2", "B,1,1,S2", "2048", "1,2048", "1,1,2048"),
    "mask_oversized": BOOL,
    "mask_fill": ("none", "bernoulli", "zeros", "nearly_full", "triu"),
    "pse": BOOL,
    "pse_batch": ("none", "B", "1"),
    "actual_q": ("absent", "one", "per_batch", "longer"),
    "actual_kv": ("absent", "one", "per_batch", "longer"),
    "act_zero": BOOL,
    "q_padding": BOOL,
    "kv_padding": BOOL,
    "prefix": BOOL,
    "prefix_len": ("none", "absent", "given"),
    "rope": BOOL,
    "rope_d": ("none", "128", "512"),
    "antiquant": ("none", "combined:0", "combined:1", "separate:0/0", "separate:1/1",
                  "separate:2/2", "separate:3/3", "separate:4/4", "separate:5/5",
                  "separate:0/1"),
    "kv_quant_sym": ("none", "sym", "asym"),
    "full_quant": BOOL,
    "deq_dtype": ("none", "float32", "uint64"),
    "post_quant": BOOL,
    "post_quant_form": ("none", "per_tensor", "per_channel"),
    "post_quant_offset": BOOL,
    "sink": BOOL,
    "lse": BOOL,
    "inner_precise": (1, 0, 2, 3),
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
    # one axis per optional argument: its documented forms per branch (op/forms.py)
    **FORM_AXES,
}

#: Axis values only the nightly and stress profiles draw: smoke keeps cases small (its
#: caches never reach past 2^31 elements); a filter for one needs profile="nightly".
LARGE_ONLY: frozenset[tuple[str, Any]] = frozenset({("cache_reach", "2^31"),
                                                    ("cache_reach", "2^32")})
#: Axis values unfiltered smoke draws never take (strategies/values.py: only profiles with a
#: values share draw them), though a smoke filter for one draws it.
FILTER_ONLY_IN_SMOKE: frozenset[tuple[str, Any]] = frozenset(
    ("values", v) for v in VALUES if v != "finite")
