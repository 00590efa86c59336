"""Relations that catch mask and length bugs without a golden.

- `mask_shape`: the same mask written in every other documented shape for
  the call's branch [V4 attenMaskOptional 建议shape; mask.full_form] gives
  the same output: (S1,S2), (1|B,S1,S2), (1|B,1,S1,S2) in prefill (the
  forms without B only when every batch has the same mask), (B,S2),
  (B,1,S2), (B,1,1,S2) in decode.
- `mask_vs_lengths`: actual_seq_lengths_kv = L equals the full KV with a
  mask hiding keys at and past L[b] in each request [SEM §3, §4].
- `kv_tail`: keys and values past the actual lengths are not part of the
  call, so changing them changes nothing [SEM §3].
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    keep_legal,
    relation,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.masks import effective_mask, windows
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, from_bnsd, to_bnsd, user_mask
from fia_fuzz.rules.rulebook.mask import full_mask_mode

SAME_MASK = Tolerance(0, "only the mask's shape (its batch and head strides) changes; every "
                         "score sees the same mask bit, so the arithmetic is the same")
LENGTH_MASK = Tolerance(2, "with actual lengths the kernel stops its S2 tiles (and decode's "
                           "split-KV partition) at L, with a mask it walks all S2 tiles and "
                           "skips the masked ones, which reorders the fp32 accumulation; "
                           "lse 16 units: torch's CPU flash kernel moves it by up to 14 "
                           "(fp16 q/k/v, 15 keys sliced vs 16 with the last at -inf)", 16)
TAIL = Tolerance(0, "keys and values past the actual length are outside the call: a kernel "
                    "that loads them with a tile must mask their scores before the row max, so "
                    "their weight is exactly 0 and the result is the same bits")
#: KV-side features these relations do not model (they move the valid window or the storage).
KV_FEATURES = ("block_table", "kv_padding_size", "key_shared_prefix")


def _dense_contiguous(call: Call, v: CallView, what: str) -> None:
    if v.in_layout not in DENSE_LAYOUTS:
        raise NotApplicable(f"{v.in_layout}: {what} of packed layouts not modelled")
    used = [n for n in KV_FEATURES if call.get(n) is not None]
    if used or v.is_kv_list:
        raise NotApplicable(f"{what} with {used or 'a KV tensor list'} not modelled")


def _short_lengths(call: Call, v: CallView) -> list[int]:
    """The per-batch KV lengths, when some batch stops before S2 (else NotApplicable)."""
    if call.get("actual_seq_lengths_kv") is None:
        raise NotApplicable("no actual_seq_lengths_kv")
    act = windows(v).act_kv
    if all(a >= v.S2 for a in act):
        raise NotApplicable("every actual KV length is the full S2")
    return act


@relation("mask_shape", "the same mask in every documented shape gives the same output",
          "V4 参数说明 attenMaskOptional (建议shape输入); fia-semantics.md §4",
          (SAME_MASK,))
def mask_shapes(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    mask = call.get("atten_mask")
    if mask is None or v.in_layout not in DENSE_LAYOUTS or not full_mask_mode(v):
        raise NotApplicable("needs a full (non-template) atten_mask on a dense layout")
    decode_forms = v.decode and not v.rope
    per = user_mask(mask, v.B, decode_forms)  # (B|1, rows, cols)
    per_b = np.broadcast_to(per, (v.B, *per.shape[1:]))
    shared = bool((per_b == per_b[:1]).all())
    if decode_forms:
        forms = {"B,S2": per_b[:, 0], "B,1,S2": per_b, "B,1,1,S2": per_b[:, None]}
    else:
        forms = {"B,S1,S2": per_b, "B,1,S1,S2": per_b[:, None]}
        if shared:
            forms.update({"S1,S2": per_b[0], "1,S1,S2": per_b[:1], "1,1,S1,S2": per_b[:1, None]})
    own = np.shape(mask)
    dtype = np.asarray(mask).dtype
    partners = [Partner(label, dict(call, atten_mask=np.ascontiguousarray(m, dtype=dtype)),
                        SAME_MASK)
                for label, m in forms.items() if m.shape != own]
    if not partners:
        raise NotApplicable("no other documented shape")
    return keep_legal(partners, case.rules)


@relation("mask_vs_lengths", "a mask hiding keys at and past L equals actual_seq_lengths_kv = L",
          "fia-semantics.md §3 (actual lengths), §4 (masks); V4 参数说明 actualSeqLengthsKv",
          (LENGTH_MASK,))
def mask_vs_lengths(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    _dense_contiguous(call, v, "lengths as a mask")
    if int(v.attrs["sparse_mode"]) not in (0, 1):
        raise NotApplicable("sparse modes 2-4 anchor their mask on the actual lengths")
    act = _short_lengths(call, v)
    if min(act) == 0:
        raise NotApplicable("a zero KV length makes invalid rows, a fully masked row is "
                            "another case (row-invalid correction)")
    w = windows(v)
    masked = effective_mask(call, v)
    for b in range(v.B):
        rows = masked[b, w.q_start[b]:w.q_start[b] + w.act_q[b]]
        if rows.all(axis=1).any():
            raise NotApplicable("a valid query row sees no key: row-invalid, not lengths")
    new = dict(call, sparse_mode=0, atten_mask=np.ascontiguousarray(masked[:, None]))
    for name in ("actual_seq_lengths_kv", "pre_tokens", "next_tokens"):
        new.pop(name, None)
    return keep_legal([Partner("lengths->mask", new, LENGTH_MASK)], case.rules)


def _new_tail(x: np.ndarray, layout: str, heads: int, act: list[int]) -> np.ndarray:
    """`x` with rows at and past act[b] replaced (reversed, floats negated too)."""
    t = np.array(to_bnsd(x, layout, heads))
    for b, a in enumerate(act):
        tail = t[b, :, a:, :][:, ::-1, ::-1]
        t[b, :, a:, :] = -tail if np.issubdtype(t.dtype, np.floating) or \
            t.dtype.name == "bfloat16" else tail
    return from_bnsd(t, layout)


@relation("kv_tail", "keys and values past the actual lengths change nothing",
          "fia-semantics.md §3 (actual lengths); V4 参数说明 actualSeqLengthsKv",
          (TAIL,))
def kv_tail(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    _dense_contiguous(call, v, "the KV tail")
    act = _short_lengths(call, v)
    new = dict(call)
    for name in ("key", "value", "key_rope"):
        if call.get(name) is not None:
            new[name] = _new_tail(np.asarray(call[name]), v.in_layout, v.KV_N, act)
    return keep_legal([Partner("changed-tail", new, TAIL)], case.rules)
