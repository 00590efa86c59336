"""query, key, value and the attributes every call has: heads, scale.

The op's mandatory inputs [V4 query/key/value, numHeads, scaleValue]. Their
features (layout, dtypes, sizes, branch, GQA class, head dims, fills) are the
core of `op/features.py`; key/value may be a list of tensors (kv_list).
"""

from __future__ import annotations

from fia_fuzz.op.args.registry import ATTR, TENSOR, Arg, Param, register

ARG = register(Arg(
    name="core",
    params=(Param("query", TENSOR, roles=frozenset({"query_seq"})),
            Param("key", TENSOR, partner="value"), Param("value", TENSOR),
            Param("num_heads", ATTR, 1), Param("scale", ATTR, 1.0)),
    rules=("args", "dtype", "gqa", "dims", "kvlist"),
    golden=("fia_fuzz.golden.core",),
    runners=("fia_fuzz.runners.composition.attend",),
))
