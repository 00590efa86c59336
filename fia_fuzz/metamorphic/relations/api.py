"""Relations between API entry points and repeated calls of the same one.

v1 vs v2 [fia-semantics.md §1, seed 004]: the same call under the renamed v2
keywords. Eager vs TorchAir graph [seed 004]: the same call compiled. Both
run the partner on an API variant of the runner (see `fia_fuzz.metamorphic.
variants`). Run twice: the same call again on the same runner must give the
same bits and leave its inputs untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    relation,
    require_absent,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.op.case import Case

SAME_KERNEL = Tolerance(0, "both entry points launch the same aclnn kernel with the same "
                           "tiling inputs; only the front door differs")
DETERMINISM = Tolerance(0, "inference attention has no atomics or randomness: the same "
                           "call must give the same bits [V4 功能说明]")
#: Canonical inputs the v2 signature has no keyword for [seed 004 函数原型].
NOT_IN_V2 = ("query_padding_size", "kv_padding_size", "key_shared_prefix",
             "value_shared_prefix", "actual_shared_prefix_len", "antiquant_scale",
             "antiquant_offset", "dequant_scale1", "quant_scale1", "dequant_scale2")


def _copy(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, list):
        return [_copy(e) for e in x]
    return x


@relation("v1_v2", "the v1 and v2 entry points agree on every call both can express",
          "fia-semantics.md §1 (v2 renames); seed 004 函数原型", (SAME_KERNEL,))
def v1_vs_v2(case: Case, call: Call) -> list[Partner]:
    require_absent(call, NOT_IN_V2, "the v2 API has no keyword for")
    if call.get("antiquant_mode", 0) != 0:
        raise NotApplicable("the v2 API has no antiquant_mode (combined antiquant parameters)")
    return [Partner("v2", {k: _copy(v) for k, v in call.items()}, SAME_KERNEL, api="v2")]


@relation("eager_graph", "eager mode and TorchAir graph mode agree",
          "seed 004 (TorchAir graph mode); fia-semantics.md §1", (SAME_KERNEL,))
def eager_vs_graph(case: Case, call: Call) -> list[Partner]:
    if not call:
        raise NotApplicable("empty call")
    return [Partner("graph", {k: _copy(v) for k, v in call.items()}, SAME_KERNEL, api="graph")]


@relation("run_twice", "the same call twice gives the same bits and leaves its inputs intact",
          "V4 功能说明 (inference op, deterministic)", (DETERMINISM,))
def run_twice(case: Case, call: Call) -> list[Partner]:
    return [Partner("again", {k: _copy(v) for k, v in call.items()}, DETERMINISM,
                    inputs_unchanged=True)]
