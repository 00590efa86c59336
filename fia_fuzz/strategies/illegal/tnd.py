"""Breakers of the `tnd.*` rules: packed TND/NTD layouts (rulebook/tnd.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.tnd import HEAD_DIMS, T_MAX
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    grow_blocks,
    head_dims,
    layout,
    q_layout,
    query_seq,
    split_blocks,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import Breaker, searched


def _tnd_layout_by_d(draw: st.DrawFn, case: Case) -> Change:
    """D != 512: TND read as TND_NTD, or NTD_TND read as plain NTD (same tensors)."""
    return {"input_layout": "TND_NTD" if layout(case) == "TND" else "NTD"}


def _tnd_t_max(draw: st.DrawFn, case: Case) -> Change:
    """One batch of T above 1M query tokens (just past, 2^21 or 2^24), one head, the drawn D
    and dtype."""
    q, v = case.params["query"], case.params["value"]
    d, dv = q.shape[-1], v.shape[-1]
    t = draw(st.sampled_from([T_MAX + draw(st.integers(1, 64)), 1 << 21, 1 << 24]))
    s2 = draw(st.integers(t + 1, t + 16)) if case.params.get("sparse_mode") == 3 else 16
    lay = q_layout(case)
    out: Change = {"query": TensorSpec((t, 1, d) if lay == "TND" else (1, t, d), q.dtype),
                   "key": TensorSpec((s2, 1, d) if lay == "TND" else (1, s2, d), q.dtype),
                   "value": TensorSpec((s2, 1, dv) if lay == "TND" else (1, s2, dv), q.dtype),
                   "num_heads": 1, "num_key_value_heads": 1,
                   "actual_seq_lengths": [t], "actual_seq_lengths_kv": [s2]}
    return out


def _tnd_dtype(draw: st.DrawFn, case: Case) -> Change:
    return {n: with_dtype(case.params[n], "float16") for n in ("query", "key", "value")}


def _tnd_causal(draw: st.DrawFn, case: Case) -> Change:
    """Sparse 3: one batch's query 1 to 2x+1 tokens longer than its KV (act_q <= act_kv is
    required; paged KV lengths are per batch, others cumulative)."""
    cq = case.params["actual_seq_lengths"]
    ckv = case.params["actual_seq_lengths_kv"]
    q_lens = [b - a for a, b in zip([0, *cq], cq, strict=False)]
    kv_lens = list(ckv[:len(q_lens)]) if case.params.get("block_table") is not None \
        else [b - a for a, b in zip([0, *ckv], ckv, strict=False)]
    j = draw(st.integers(0, len(q_lens) - 1))
    q_lens[j] = kv_lens[j] + draw(st.integers(1, kv_lens[j] + 1))
    total, cum = 0, []
    for n in q_lens:
        total += n
        cum.append(total)
    return {**query_seq(case, total), "actual_seq_lengths": cum}


#: Head dims around the packed tables (multiples of 16, so the float alignment holds): just
#: past 128 and 192 on both sides, and far from them up to the 512 limit.
ODD_DIMS = (64, 256, 112, 144, 176, 208, 16, 96, 320, 448)


def _tnd_head_dims(draw: st.DrawFn, case: Case) -> Change:
    """Q_D = K_D and V_D off the layout's table: with rope (whose query D must stay 128) V_D
    only; otherwise either or both (paged: both, the caches share a shape), or the 192/192
    pair where G > 1 or the KV is paged."""
    v = case.view()
    if v.rope:
        return head_dims(case, v.D, draw(st.sampled_from((*ODD_DIMS, 192))))
    shared = v.G > 1 or v.paged     # where the table's V_D 192 is not allowed
    if layout(case) == "TND" and shared and draw(st.booleans()):
        return head_dims(case, 192, 192)
    d = draw(st.sampled_from((*ODD_DIMS, 128, 192)))
    if v.paged:     # paged key and value caches share one shape (paged.kv_shape_match)
        dv = d
    else:
        dv = draw(st.sampled_from((*ODD_DIMS, 128, 192) if d in (128, 192)
                                  else (d, *ODD_DIMS)))
    if (d, dv) in HEAD_DIMS[layout(case)] and not (dv == 192 and shared):
        reject()
    return head_dims(case, d, dv)


def _tnd_block_size(draw: st.DrawFn, case: Case) -> Change:
    """256 or 384 slots: larger blocks from 128, 512 split into 256."""
    if int(case.params["block_size"]) == 512:
        return split_blocks(case, 2)
    return grow_blocks(case, draw(st.sampled_from([256, 384])))


def _tnd_d512_rope(draw: st.DrawFn, case: Case) -> Change:
    """Rope dropped; MLA's N = 128 (G 128) would also break GQA's G <= 64, so not from it."""
    if case.params["num_heads"] > 64:
        reject()
    return {"query_rope": DELETE, "key_rope": DELETE}


#: Host-sized: T above 1M tokens.
NOT_MATERIALISABLE = {"tnd.t_max"}

BREAKERS: dict[str, Breaker] = {
    "tnd.layout_by_d": Breaker(_tnd_layout_by_d, {"layout": "TND", "rope_d": "none"},
                               alt=({"layout": "NTD_TND", "rope_d": "none"},)),
    "tnd.t_max": Breaker(_tnd_t_max, {"layout": "TND", "paged": False, "rope": False},
                         alt=({"layout": "NTD_TND", "paged": False, "rope": False},)),
    "tnd.dtype_bf16": Breaker(_tnd_dtype, {"layout": "TND", "rope_d": "none"},
                              alt=({"layout": "NTD_TND", "rope_d": "none"},)),
    "tnd.causal_lengths": Breaker(_tnd_causal, {"layout": "TND", "sparse_mode": 3,
                                                "rope_d": "none"},
                                  alt=({"layout": "NTD_TND", "sparse_mode": 3},)),
    "tnd.block_size": Breaker(_tnd_block_size, {"layout": "TND", "paged": True,
                                                "rope": False}),
    # without rope an NZ cache is the GQA NZ configuration, whose nz.* rules would fire
    "tnd.d512_needs_rope": Breaker(_tnd_d512_rope, {"rope_d": "512", "layout": "TND",
                                                    "cache": "BnBsH"},
                                   alt=({"rope_d": "512", "layout": "TND", "cache": "BnNBsD"},
                                        {"rope_d": "512", "layout": "TND_NTD",
                                         "cache": "BnBsH"})),
    "tnd.sparse": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False}, "add:atten_mask",
        alt=({"layout": "NTD_TND"},)),
    "tnd.head_dims": Breaker(_tnd_head_dims, {"layout": "TND", "rope_d": "none"},
                             alt=({"layout": "NTD_TND", "rope_d": "none"},
                                  {"layout": "TND", "paged": True, "rope_d": "none"},
                                  {"rope_d": "128"})),
    "tnd.rope_not_paged": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
        "add:query_rope"),
    "tnd.no_extras": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False}, "add:pse_shift",
        alt=({"layout": "NTD_TND"},)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "tnd.causal_lengths": ("first", "last"),
}
