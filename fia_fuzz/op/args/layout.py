"""input_layout: the query/KV layout and, after an underscore, the output's [V4 inputLayout].

BSH, BSND, BNSD, TND, NTD_TND, BNSD_BSND, TND_NTD and the *_NBSD forms; the
layout features (layout, in_layout, out_layout) are core features of
`op/features.py`.
"""

from __future__ import annotations

from fia_fuzz.op.args.registry import ATTR, Arg, Param, register

ARG = register(Arg(
    name="layout",
    params=(Param("input_layout", ATTR, "BSH"),),
    rules=("layout", "tnd"),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.geometry",),
))
