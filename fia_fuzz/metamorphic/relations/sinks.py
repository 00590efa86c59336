"""Learnable sinks vs one extra key column [fia-semantics.md §5, v2 learnable_sink].

A sink adds exp(sink[n] - m) to head n's softmax denominator and nothing to
the numerator. A key column with score sink[n] and a zero value row does the
same: the partner appends, right after each batch's valid keys, a zero key
and value row, and a pse_shift column holding sink[n] (pse is added to the
scaled scores and has the query's dtype [SEM §5], so the sink must be exactly
representable in it).
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    keep_legal,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.masks import batch_mask
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, NO_BAND, from_bnsd, to_bnsd

SINK_TOLERANCE = Tolerance(2, "a sink enters the row sum after the row max, a key column "
                              "enters the max, so exp() runs on differently shifted scores "
                              "and rounds differently")
#: Not modelled here: KV forms where one appended row is not a plain insert, and
#: quantised KV (a zero int8 row does not dequantise to zero with an offset).
NOT_MODELLED = ("block_table", "key_shared_prefix", "query_padding_size", "kv_padding_size",
                "antiquant_scale", "key_antiquant_scale", "key_rope", "dequant_scale1")


def _insert(x: np.ndarray, at: list[int], value: float | bool, axis: int) -> np.ndarray:
    """x (B, ...) with one slice of `value` inserted at index at[b] of `axis` in batch b."""
    ax = axis - 1
    parts = []
    for i, k in enumerate(at):
        xi = x[i]
        shape = list(xi.shape)
        shape[ax] = 1
        cut = [np.take(xi, np.arange(k), ax), np.full(shape, value, x.dtype),
               np.take(xi, np.arange(k, xi.shape[ax]), ax)]
        parts.append(np.concatenate(cut, axis=ax))
    return np.ascontiguousarray(np.stack(parts))


@relation("sink_column", "learnable sinks equal an extra zero-value key column scored sink[n]",
          "fia-semantics.md §5 (learnable_sink); seed 004 learnable_sink",
          (SINK_TOLERANCE,))
def sinks_vs_extra_column(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if call.get("learnable_sink") is None:
        raise NotApplicable("no learnable_sink")
    if v.in_layout not in DENSE_LAYOUTS or v.is_kv_list:
        raise NotApplicable("needs dense, non-list KV")
    require_absent(call, NOT_MODELLED, "not modelled with sinks")
    mode = int(v.attrs["sparse_mode"])
    if mode not in (0, 1) and not v.decode:
        raise NotApplicable(f"sparse_mode {mode} anchors on S2, which the extra column moves")
    if call.get("atten_mask") is not None and mode == 0 and (
            v.attrs["pre_tokens"] != NO_BAND or v.attrs["next_tokens"] != NO_BAND):
        raise NotApplicable("a band may mask the extra column")
    q_dtype = call["query"].dtype
    sink = np.asarray(call["learnable_sink"]).reshape(-1)
    if not np.array_equal(sink.astype(q_dtype).astype(np.float64), sink.astype(np.float64)):
        raise NotApplicable(f"sink values are not exact in the pse dtype {q_dtype}")
    act_kv = list(v.act_kv)
    if 0 in act_kv:
        raise NotApplicable("a batch with no key has output 0 and lse +inf whatever its sink")
    b, n, s1 = v.B, v.N, v.S1
    new = dict(call, actual_seq_lengths_kv=[a + 1 for a in act_kv])
    new.pop("learnable_sink")
    for name in ("key", "value"):
        x = to_bnsd(call[name], v.in_layout, v.KV_N)
        new[name] = from_bnsd(_insert(x, act_kv, 0.0, axis=2), v.in_layout)
    pse = call.get("pse_shift")
    base = np.zeros((b, n, s1, v.S2), q_dtype) if pse is None else np.broadcast_to(
        pse[..., :s1, :v.S2], (b, n, s1, v.S2))
    new["pse_shift"] = _insert(base, act_kv, 0.0, axis=3)
    for i, k in enumerate(act_kv):
        new["pse_shift"][i, :, :, k] = sink.astype(q_dtype)[:, None]
    mask = call.get("atten_mask")
    if mask is not None:
        rows = np.stack([batch_mask(mask, i, b, v.decode)[:s1, :v.S2] for i in range(b)])
        new["atten_mask"] = _insert(rows[:, None], act_kv, False, axis=3)
    return keep_legal([Partner("extra-column", new, SINK_TOLERANCE)], case.rules)
