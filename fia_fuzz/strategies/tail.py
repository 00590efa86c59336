"""The attributes every strategy family sets last, after its shapes and features.

A module of its own so that families.py and workloads.py (which families.py
registers) share it without importing each other.
"""

from __future__ import annotations

import math

from fia_fuzz.op import args
from fia_fuzz.op.args import core, rope
from fia_fuzz.strategies import fills
from fia_fuzz.strategies.draft import Draft


def common_tail(dr: Draft, inner: tuple[int, ...], lse: tuple[bool, ...] = (False, True)
                ) -> None:
    """Draw lse, inner_precise (from `inner`), scale, heads and layout attributes, the q/k/v
    fills, then the arguments' documented special values (op/args `special`): the same
    last step for every family."""
    ch = dr.ch
    if ch.pick("lse", lse):
        dr.set("softmax_lse_flag", True)
    ip = ch.pick("inner_precise", inner)
    # the default 1 given explicitly or left out [MS inner_precise 默认值为1]
    if ip != 1 or dr.pick_form("inner_precise_form", {"absent": False,
                                                      "explicit_default": True}):
        dr.set("inner_precise", ip)
    d_total = dr.d + rope.extra_d(dr.params)
    dr.set("scale", core.scale(ch, (1.0 / math.sqrt(d_total), 1.0, 0.0625)))
    dr.set("num_heads", dr.n)
    # KV_N explicit, or for MHA absent, N or 0 (0 means N) [V4 numKeyValueHeads]
    kv_forms = {"KV_N": dr.kv_n} if dr.kv_n != dr.n else {"absent": None, "N": dr.n, "0": 0}
    kv_heads = dr.pick_form("num_key_value_heads_form", kv_forms)
    if kv_heads is not None:
        dr.set("num_key_value_heads", kv_heads)
    dr.set("input_layout", dr.layout)
    fills.qkv(dr)
    args.specials(dr)
