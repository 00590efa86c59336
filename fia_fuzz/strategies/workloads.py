"""Production call patterns: the calls inference engines make, at production sizes.

Evidence: ../shared/production-calls.md. vLLM-ascend routes prefill, chunked
prefill, prefix-cache hits and decode through one TND call over a paged BnBsH
cache with sparse_mode 3; older engines issue the classic paged decode (BSH or
BNSD, block 128, ragged KV, an optional (B, S2)-shaped mask); sliding-window
models add a band; DeepSeek decodes MLA (N = 128 / TP) and speculates with
Q_S 2..4; int8 KV caches decode with antiquant. Heads come from the public
model geometries split by the tensor-parallel degree, lengths are ragged and
long (up to the profile's element budget, with kernel tile edges), and K/V (and
the packed query) may be views sliced from one fused buffer. Every draw is
legal by construction; `case.features()["workload"]` names the pattern
(op/case.py classifies any case, so a filter works as for every axis).
"""

from __future__ import annotations

from fia_fuzz.op.edges import SPLIT_BN
from fia_fuzz.op.features import MLA_PRODUCTION_HEADS, MTP_Q_S, WORKLOAD_PINS
from fia_fuzz.op.geometry import dense_shape, packed_shape
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies import masks, paged
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import (
    Draft,
    empty_batch_lo,
    empty_batches,
    g_class,
    kv_len,
    lengths,
    numel_allows,
    spec,
)
from fia_fuzz.strategies.sizes import (
    UNITS_Q_CAP,
    batch,
    heads_cap,
    length,
    long_kv,
    query_span,
)
from fia_fuzz.strategies.tail import common_tail

#: Public model head geometries (N, KV_N, D) [production-calls.md, model table].
MODELS = ((32, 32, 128), (32, 8, 128), (64, 8, 128), (128, 8, 128), (28, 4, 128),
          (40, 8, 128), (64, 8, 128), (32, 4, 128), (64, 4, 128), (16, 2, 256), (32, 2, 128),
          (16, 8, 256), (32, 32, 96), (128, 8, 64), (40, 40, 128))
#: Tensor-parallel degrees: N and KV_N per device, KV heads replicated once TP > KV_N.
TP = (1, 2, 4, 8, 16)
VLLM = ("vllm_prefill", "vllm_chunked", "vllm_prefix_hit", "vllm_decode", "sliding_causal")
#: The patterns whose every query is one row
DECODES = ("paged_decode_bsh", "paged_decode_bnsd", "vllm_decode")
#: The patterns this family builds; int8 KV decode is the antiquant family's draw, MLA
#: decode/MTP the mla family's, shaped by `mla_pattern` (all classified by op/case.py).
OWN = (*VLLM, "paged_decode_bsh", "paged_decode_bnsd", "sliding_band")
#: DeepSeek's MLA geometry (N, KV_N, D + rope) [production-calls.md, model table].
MLA_MODEL = (128, 1, 512)
#: The mla family's draws: generic half the time, else a DeepSeek decode or MTP step.
MLA_PATTERNS = ("none", "none", "mla_decode", "mla_mtp")


#: Per MLA pattern, feature values a filter may pin without ruling it out.
_MLA_PINNABLE = {
    "mla_decode": {"branch": ("decode",), "q_seq": ("1",), "sparse_mode": (0,),
                   "layout": ("BNSD", "BSND", "BSH")},
    "mla_mtp": {"branch": ("prefill",), "q_seq": ("2-16",), "sparse_mode": (3,)},
}


def _mla_fits(pins: dict[str, object], kind: str) -> bool:
    """False when the filters rule the production pattern `kind` out (so the family does
    not pick it only to be discarded: rejections would skew the draws that filter)."""
    if kind == "none":
        return True
    if pins.get("q_dtype", "bfloat16") not in ("bfloat16", "int8") \
            or pins.get("N", MLA_MODEL[0]) not in MLA_PRODUCTION_HEADS:
        return False
    return all(pins[k] in ok for k, ok in _MLA_PINNABLE[kind].items() if k in pins)


def mla_pattern(ch: Chooser) -> tuple[str, tuple[int, ...], tuple[int, int]]:
    """(pattern, N options, query S range) of an MLA draw: a production pattern takes
    N = 128 / TP for the TP degrees that keep N in the documented 16..128 (the set
    MLA_PRODUCTION_HEADS), and S1 = 1 (decode) or 2..4 (MTP); "none" leaves both to the
    family (N 0, S range 0: no bound)."""
    kind = ch.pick("workload", tuple(k for k in MLA_PATTERNS if _mla_fits(ch.pins, k)))
    if kind == "none":
        return kind, (), (0, 0)
    return kind, MLA_PRODUCTION_HEADS, (1, 1) if kind == "mla_decode" else (MTP_Q_S[0], MTP_Q_S[-1])


def model_heads(ch: Chooser, dims: tuple[int, ...], budget: int, long: bool = False
                ) -> tuple[int, int, int]:
    """(N, KV_N, D) of a model split over a TP degree (N divisible, G <= 64) whose
    128-token K/V block fits `budget` elements (the smallest split always does); `long`:
    N under SPLIT_BN, as a long-KV draw needs, where some split has it."""
    opts = []
    for n, kv, d in MODELS:
        if d not in dims:
            continue
        for tp in TP:
            if n % tp:
                continue
            kv_n = max(1, kv // tp)
            if (n // tp) % kv_n == 0 and n // tp // kv_n <= 64:
                opts.append((n // tp, kv_n, d))
    opts = [o for o in opts if heads_cap(ch, o[0]) == o[0]] or opts
    if "g_class" in ch.pins:
        opts = _grouped(ch, opts, dims)
    if long:
        opts = [o for o in opts if o[0] < SPLIT_BN] or opts
    fit = [o for o in opts if 128 * o[1] * 2 * o[2] <= budget]
    return ch.one(fit or [min(opts, key=lambda o: o[1] * o[2])])


#: The group a g_class filter takes where no model split has one of its class: 64, no model's
#: (the largest of the documented G <= 64)
WIDEST_G = 64


def _grouped(ch: Chooser, opts: list[tuple[int, int, int]], dims: tuple[int, ...]
             ) -> list[tuple[int, int, int]]:
    """The splits whose group N / KV_N is of the g_class filter's class; where none is (G 64),
    a model's KV heads of one or two devices with WIDEST_G query heads each."""
    fit = [o for o in opts if ch.allows("g_class", g_class(o[0] // o[1]))]
    if fit or not ch.allows("g_class", g_class(WIDEST_G)):
        return fit or opts
    return [(WIDEST_G * kv, kv, d) for kv in (1, 2) for d in dims
            if heads_cap(ch, WIDEST_G * kv) == WIDEST_G * kv]


def _geometry(dr: Draft, dims: tuple[int, ...]) -> bool:
    """Heads and head dim of a model; True when the draw serves one long request (a quarter
    of the unfiltered draws). For it, and under a "long" size_edge filter, N is under
    SPLIT_BN and KV_N x D small enough that half the profile's long_kv keys fit the element
    budget, as a long context needs."""
    ch = dr.ch
    # (not under an empty_share filter that needs more batches)
    one = "size_edge" not in ch.pins and ch.allows("batch_class", "1") and ch.one(
        (False, False, False, empty_batch_lo(ch) == 1))
    long = one or ch.pinned("size_edge", "long")
    budget = dr.prof.max_elements
    if long:
        budget = budget * 128 // max(128, dr.prof.long_kv // 2)
    dr.n, dr.kv_n, dr.d = model_heads(ch, dims, budget, long)
    dr.dv = dr.d
    return one


def workloads(dr: Draft) -> None:
    """One production pattern, drawn in the shape the engine issues it."""
    ch = dr.ch
    # the classic decode, where masks past one 512-key tile live, twice as often; first,
    # so a shrunk workload is a paged decode without a mask
    kinds = ("paged_decode_bsh", "paged_decode_bnsd", *OWN)
    if "workload" not in ch.pins:  # the patterns the other filters leave (WORKLOAD_PINS)
        kinds = tuple(k for k in kinds if all(ch.allows(a, v) for a, v in WORKLOAD_PINS[k].items()
                                              if a != "band")) or kinds
    if not numel_allows(ch, masks.OPTIMIZED_NUMEL):  # all but the paged decode take it
        kinds = kinds[:2]
    span = query_span(ch)
    if span is not None:  # the query lengths a q_seq or q_rows filter allows
        kinds = tuple(k for k in kinds if (span[0] <= 1 or k not in DECODES)
                      and (span[1] >= 2 or k != "sliding_band"))
    kind = ch.pick("workload", kinds)
    paged.reach(dr)
    if kind in VLLM:
        _vllm(dr, kind)
    elif kind == "sliding_band":
        _sliding_band(dr)
    else:
        _paged_decode(dr, "BSH" if kind == "paged_decode_bsh" else "BNSD")


def _set_layout(dr: Draft, layout: str) -> None:
    dr.layout = dr.q_layout = dr.out_layout = dr.ch.pick("layout", (layout,))


def _kv_budget(dr: Draft, query_per_token: bool = False) -> int:
    """KV tokens (all batches) the element budget holds (with a query row per key token
    when the query may be as long as the KV)."""
    per = dr.kv_n * (dr.d + dr.dv) + (dr.n * dr.d if query_per_token else 0)
    return max(1, dr.prof.max_elements // per)


def _batches(dr: Draft, block_size: int, hi: int, one: bool) -> int:
    """B up to `hi` with one block per request within the element budget, or 1 for `one`
    long request (a long-KV draw where N allows)."""
    if one:
        dr.long = dr.n < SPLIT_BN
        return 1
    per = block_size * dr.kv_n * (dr.d + dr.dv)
    top = max(1, min(hi, dr.prof.max_batch, dr.prof.max_elements // per))
    dr.long = long_kv(dr.ch, dr.n)
    lo = empty_batch_lo(dr.ch)
    if "units_class" in dr.ch.pins or "batch_class" in dr.ch.pins:
        # B on the filter's work units (Chooser.aim), or on the cores for a batch class:
        # up to the profile's core_batch within the budget
        wide = max(1, min(dr.prof.core_batch, dr.prof.max_elements // per))
        return batch(dr.ch, dr.n, lo, top, dr.long, kv_n=dr.kv_n, wide=wide)
    return batch(dr.ch, dr.n, lo, top, dr.long)


def _fused_kv(dr: Draft) -> None:
    """K/V as the two halves of one fused (block_num, block_size, 2, H) cache, as engines
    slice them; not for lazy caches, whose data sit in referenced blocks only."""
    if dr.lazy or dr.ch.pick("view", ("contiguous", "strided")) != "strided":
        return
    k = dr.params["key"]
    bn, bs, h = k.shape
    stride = (bs * 2 * h, 2 * h, 1)
    dr.set("key", TensorSpec(k.shape, k.dtype, stride, 0))
    dr.set("value", TensorSpec(k.shape, k.dtype, stride, h))


def _vllm(dr: Draft, kind: str) -> None:
    """TND bf16 query, paged BnBsH, sparse 3 with the 2048 mask, cumulative query lengths
    and per-request KV lengths; act_q <= act_kv per request (docs/rules.md 4)."""
    ch = dr.ch
    dr.q_dtype = dr.kv_dtype = "bfloat16"
    ch.pick("q_dtype", ("bfloat16",))
    ch.pick("kv_dtype", ("bfloat16",))
    ch.pick("branch", ("prefill",))
    _set_layout(dr, "TND")
    one = _geometry(dr, (128,))
    fits = 512 * dr.kv_n * 2 * dr.d <= dr.prof.max_elements // 4
    bs = ch.one(paged.edge_sizes(dr, (128, 128, 128, 512) if fits else (128,)))
    dr.b = _batches(dr, bs, 64, one)
    room = max(1, _kv_budget(dr, kind != "vllm_decode") // dr.b)
    span = query_span(ch)
    if span is None and "units_class" in ch.pins:
        span = (1, UNITS_Q_CAP)  # short queries: B x heads are the units
    kv_lens, q_lens = [], []
    for i in range(dr.b):
        # a q_seq or q_rows filter bounds every query and puts the first on its span
        q_lo, q_hi = (1, 1 << 62) if span is None else (span[0] if i == 0 else 1, span[1])
        if kind == "vllm_prefix_hit":
            cached = bs * ch.int(1, max(1, (room - 1) // bs))
            new = length(ch, q_lo, max(q_lo, min(room - cached, 2048, q_hi)))
            kv_lens.append(cached + new)
            q_lens.append(new)
            continue
        own = kind in ("vllm_prefill", "sliding_causal")  # the query is the whole KV
        kv = kv_len(dr, q_lo, max(q_lo, min(room, q_hi) if own else room))
        kv_lens.append(kv)
        q_lens.append({"vllm_decode": 1, "vllm_chunked": length(ch, q_lo, max(q_lo, min(kv, q_hi)))
                       }.get(kind, kv))
    if kind == "vllm_chunked" and q_lens == kv_lens:
        q_lens[0] = max(1, kv_lens[0] - 1) if kv_lens[0] > 1 else 1
        if q_lens == kv_lens:
            kv_lens[0] += 1
    # query rows x keys stay within the score budget
    while sum(q * k for q, k in zip(q_lens, kv_lens, strict=True)) * dr.n \
            > dr.prof.max_scores * 4 and max(kv_lens) > 1:
        kv_lens = [max(1, k // 2) for k in kv_lens]
        q_lens = [min(q, k) if kind != "vllm_decode" else 1 for q, k in zip(q_lens, kv_lens,
                                                                            strict=True)]
        if kind == "vllm_prefix_hit":
            q_lens = [max(1, q) for q in q_lens]
    dr.s1 = max(q_lens)
    total, cum = 0, []
    for q in q_lens:
        total += q
        cum.append(total)
    dr.set("query", spec(packed_shape("TND", total, dr.n, dr.d), "bfloat16"))
    if ch.pick("view", ("contiguous", "strided")) == "strided":
        # the query heads of a fused (T, N + 2 KV_N, D) qkv projection
        row = (dr.n + 2 * dr.kv_n) * dr.d
        dr.set("query", TensorSpec((total, dr.n, dr.d), "bfloat16", (row, dr.d, 1), 0))
    paged.page(dr, ("BnBsH",), bs, kv_lens)
    _fused_kv(dr)
    dr.set("actual_seq_lengths", cum)
    dr.set("actual_seq_lengths_kv", kv_lens)
    dr.kv_lens, dr.q_lens = kv_lens, q_lens
    dr.set("sparse_mode", ch.pick("sparse_mode", (3,)))
    masks.optimized_mask(dr)
    if kind == "sliding_causal":
        dr.set("pre_tokens", length(ch, 1, max(1, max(kv_lens))))
        dr.set("next_tokens", 0)
    _tail(dr)


def _paged_decode(dr: Draft, layout: str) -> None:
    """S1 = 1 over a paged BnBsH cache (block 128), ragged per-request KV lengths, no mask
    or a decode mask in one of its three documented shapes."""
    ch = dr.ch
    dt = ch.pick("q_dtype", ("float16", "bfloat16"))
    dr.q_dtype = dr.kv_dtype = ch.pick("kv_dtype", (dt,))
    dr.decode = True
    ch.pick("branch", ("decode",))
    _set_layout(dr, layout)
    one = _geometry(dr, (64, 96, 128, 256))
    dr.s1 = 1
    dr.b = _batches(dr, 128, 256, one)
    room = _kv_budget(dr) // dr.b
    # a filter on empty batches places them itself (draft.empty_batches)
    steer = "empty_share" in ch.pins or "act_zero" in ch.pins
    kv_lens = [kv_len(dr, 0 if ch.one((False,) * 15 + (True,)) and not steer else 1,
                      max(1, room)) for _ in range(dr.b)]
    if steer or (dr.reach != "near" and ch.pinned("cache_reach", "near")):
        kv_lens = empty_batches(dr, kv_lens)  # a filter's share of empty batches
    dr.kv_lens = kv_lens
    paged.page(dr, ("BnBsH",), 128, kv_lens)
    _fused_kv(dr)
    dr.set("query", spec(dense_shape(layout, dr.b, dr.n, 1, dr.d), dt))
    dr.set("actual_seq_lengths_kv", kv_lens)
    if "actual_q" in ch.pins:  # the query lengths (all 1) an actual_q filter names
        q = lengths(dr, "actual_q", [1] * dr.b, ("absent", "one", "per_batch", "longer"), 1)
        if q is not None:
            dr.set("actual_seq_lengths", q)
    if ch.pick("_mask_on", (True,) if masks.wants_mask(dr) else (False, True, True)):
        masks.decode_mask(dr)
    else:
        masks.no_mask(dr)
    if "band" in ch.pins:  # decode ignores pre/next [V4 sparseMode]; drawn for a band filter
        masks.band(dr)
    _tail(dr)


def _sliding_band(dr: Draft) -> None:
    """Prefill chunk (BSH) over a paged cache with sparse 4: a sliding-window band
    (pre_tokens = window, next_tokens = 0) and the 2048 mask."""
    ch = dr.ch
    dt = ch.pick("q_dtype", ("float16", "bfloat16"))
    dr.q_dtype = dr.kv_dtype = ch.pick("kv_dtype", (dt,))
    ch.pick("branch", ("prefill",))
    _set_layout(dr, "BSH")
    one = _geometry(dr, (64, 96, 128, 256))
    bs = ch.one(paged.edge_sizes(dr, tuple(x for x in (128, 256, 512)
                                           if x * dr.kv_n * 2 * dr.d <= dr.prof.max_elements)
                                 or (128,)))
    dr.b = _batches(dr, bs, 8, one)
    room = max(2, _kv_budget(dr, True) // dr.b)
    span = query_span(ch)
    if span is None:
        s2 = kv_len(dr, 2, max(2, room))
        dr.s1 = min(s2, length(ch, 2, max(2, min(2048, dr.prof.max_scores
                                                 // (dr.b * dr.n * s2) or 2))))
    else:  # a q_seq or q_rows filter's query, and at least as many keys
        q_lo = max(2, span[0])
        q_hi = max(q_lo, min(span[1], 2048, room))
        s2 = kv_len(dr, q_lo, max(q_lo, room))
        dr.s1 = min(s2, length(ch, q_lo, max(q_lo, min(q_hi, dr.prof.max_scores
                                                        // (dr.b * dr.n * s2) or 2))))
    kv_lens = [s2] * dr.b
    dr.kv_lens = kv_lens
    paged.page(dr, ("BnBsH",), bs, kv_lens)
    dr.set("query", spec(dense_shape("BSH", dr.b, dr.n, dr.s1, dr.d), dt))
    dr.set("actual_seq_lengths_kv", kv_lens)
    dr.set("sparse_mode", ch.pick("sparse_mode", (4,)))
    masks.optimized_mask(dr)
    dr.set("pre_tokens", length(ch, 1, s2))
    dr.set("next_tokens", 0)
    _tail(dr)


def _tail(dr: Draft) -> None:
    common_tail(dr, (1, 0) if dr.decode else (1, 0, 2, 3))
