"""num_key_value_heads: KV_N; 0 (the default) means N [V4 numKeyValueHeads].

Form `num_key_value_heads_form`: absent, 0, N (both MHA only) or KV_N.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, Arg, Param, register
from fia_fuzz.op.shape_forms import safe

NAME = "num_key_value_heads"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    if NAME not in case.params:
        return {"num_key_value_heads_form": "absent"}
    kv_n = case.params[NAME]
    return {"num_key_value_heads_form": "0" if kv_n == 0 else "N"
            if kv_n == safe(lambda: v.N) else "KV_N"}


ARG = register(Arg(
    name="kv_heads",
    params=(Param(NAME, ATTR, 0),),
    forms={"num_key_value_heads_form": ("absent", "0", "N", "KV_N")},
    implies={"num_key_value_heads_form": lambda v: {} if v == "KV_N" else {"gqa": "mha"}},
    form_of=form_of,
    rules=("gqa",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.golden_runner",),
))
