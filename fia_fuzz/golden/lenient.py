"""The golden without its legality check: an explicit route for calls the docs forbid.

`npu_fused_infer_attention_score` (the default) validates first and raises
IllegalCall. Negative campaigns need the arithmetic of an illegal call that a
backend accepted anyway (a dtype or layout the docs exclude whose math is
still clear), so this route computes the same pipeline without the check and
raises `Undefined` when there is no defined result: the computation itself
fails (shapes that do not fit together), or the call breaks a rule of
UNDEFINED_RULES, whose violation the pipeline could silently turn into
numbers (a negative length, lengths past the tensor or fewer than the batch,
windows past the data, a block table that does not cover the lengths).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.golden.api import _compute
from fia_fuzz.op.call import CallView
from fia_fuzz.rules.validate import validate

#: Rules whose violation leaves the op's result undefined (see the module doc).
UNDEFINED_RULES = frozenset({
    "lengths.q_count", "lengths.kv_count", "lengths.q_nonnegative", "lengths.kv_nonnegative",
    "lengths.q_max", "lengths.kv_max", "lengths.packed_required", "lengths.packed_monotonic",
    "lengths.packed_total", "padding.q_window", "padding.kv_window", "prefix.len_range",
    "paged.block_count", "paged.block_table_width", "paged.block_table_batch",
    "paged.kv_lengths_required", "quant.rows_not_computed",
})


class Undefined(ValueError):
    """The call has no defined result (why in the message)."""


def unchecked_golden(query: Any, key: Any, value: Any, *, precision: str = "device",
                     **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """The golden's (attention_out, softmax_lse) of a call, legal or not; Undefined when the
    call has no defined result."""
    call = {"query": query, "key": key, "value": value, **kwargs}
    broken = sorted({v.rule for v in validate(**call)} & UNDEFINED_RULES)
    if broken:
        raise Undefined(f"breaks {', '.join(broken)}: no defined result")
    try:
        return _compute(CallView(call), call, precision, "reference", "round_then_offset")
    except Exception as exc:  # shapes that do not fit: no arithmetic to compare with
        raise Undefined(f"the computation fails: {type(exc).__name__}: {exc}"[:500]) from exc
