"""Paged vs contiguous KV, with ordered and shuffled block tables [SEM §2, V4 blockTable].

A contiguous case becomes paged caches (BnBsH, BnNBsD, NZ) at the smallest legal
block size and a larger one, with the physical blocks in order or shuffled,
spare blocks and tail slots full of garbage, and -1 in unused table entries.
A paged case becomes contiguous KV and is re-paged (other cache forms,
block sizes, shuffled tables: the only partners MLA, which must page, can
have). Any kernel that reads the wrong block, offset or entry diverges far
beyond the tolerance.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    keep_legal,
    permutation,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.paging import block_table, garbage
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import (
    CACHE_FORMS,
    blocks_needed,
    cache_shape,
    cumulative,
    from_bnsd,
    nz_c0,
    pack,
    page,
    paged_bnsd,
    to_bnsd,
    unpack,
)
from fia_fuzz.op.tensors import dtype_name

PAGED_TOLERANCE = Tolerance(2, "the kernel may align its S2 tiles with block_size in paged "
                               "mode, which reorders the fp32 softmax and P·V accumulation")
#: Inputs that are illegal with paged attention [SEM §2, §3, §6] or carry a per-token
#: S2 axis this relation does not re-page.
NOT_WITH_PAGED = ("query_padding_size", "kv_padding_size", "key_shared_prefix",
                  "value_shared_prefix")
PAGED_KV = ("key", "value", "key_rope")


def block_sizes(view: CallView, kv_dtype: str) -> tuple[int, int]:
    """(smallest, a larger) legal block size [SEM §2: 16/32 multiples; PFA+PA 128..512]."""
    if not view.decode:
        return 128, 256
    return (32, 128) if kv_dtype == "int8" else (16, 128)


def _per_token_scales(call: Call, view: CallView) -> bool:
    modes = [view.attrs["antiquant_mode"]] if call.get("antiquant_scale") is not None else []
    if call.get("key_antiquant_scale") is not None:
        modes += [view.attrs["key_antiquant_mode"], view.attrs["value_antiquant_mode"]]
    return any(m in (1, 3) for m in modes)


def _pad_last(x: np.ndarray, size: int, fill: float | bool) -> np.ndarray:
    if x.shape[-1] >= size:
        return x
    pad = np.full(x.shape[:-1] + (size - x.shape[-1],), fill, dtype=x.dtype)
    return np.concatenate([x, pad], axis=-1)


def _kv_bnsd(x: np.ndarray, view: CallView, act_kv: list[int]) -> np.ndarray:
    """Contiguous KV as BNSD; packed KV unpacked by its cumulative lengths [SEM §2]."""
    if view.packed:
        return unpack(x, view.in_layout, act_kv, max(act_kv + [1]))
    return to_bnsd(x, view.in_layout, view.KV_N)


def _nz_ok(x: np.ndarray) -> bool:
    """A 5-D NZ cache splits D into D/16 (D/32 for int8) blocks [SEM §2]; no packed int4."""
    dtype = dtype_name(x.dtype)
    return dtype not in ("int32", "int4") and x.shape[-1] % nz_c0(dtype) == 0


def _paged(case: Case, call: Call, view: CallView, kv: dict[str, np.ndarray],
           act_kv: list[int], plans: list[tuple[int, bool, str]]) -> list[Partner]:
    """Partners holding the BNSD KV `kv` in paged caches, one per (block size, shuffled, form)."""
    partners = []
    for bs, shuffled, form in plans:
        if form == "NZ" and not all(_nz_ok(x) for x in kv.values()):
            continue
        need = sum(blocks_needed(n, bs) for n in act_kv) + 2
        order = permutation(case.seed, f"paged.{bs}", need) if shuffled else None
        table, blocks = block_table(act_kv, bs, order)
        new = dict(call, block_table=table, block_size=bs, actual_seq_lengths_kv=act_kv)
        for name, x in kv.items():
            dtype = dtype_name(x.dtype)
            shape = cache_shape(form, blocks, bs, view.KV_N, x.shape[-1], dtype)
            filler = garbage(shape, dtype, case.seed, f"{name}.{bs}.{form}")
            new[name] = page(x, act_kv, table, bs, filler)
        s2 = table.shape[1] * bs
        if call.get("atten_mask") is not None and view.attrs["sparse_mode"] in (0, 1):
            new["atten_mask"] = _pad_last(call["atten_mask"], s2, True)
        if call.get("pse_shift") is not None:
            new["pse_shift"] = _pad_last(call["pse_shift"], s2, 0.0)
        label = f"bs{bs}-{'shuffled' if shuffled else 'ordered'}-{form}"
        partners.append(Partner(label, new, PAGED_TOLERANCE))
    return partners


def _to_paged(case: Case, call: Call, view: CallView) -> list[Partner]:
    if view.is_kv_list:
        raise NotApplicable("tensor-list KV cannot be paged [SEM §2]")
    require_absent(call, NOT_WITH_PAGED, "not allowed with paged attention")
    if _per_token_scales(call, view):
        raise NotApplicable("per-token antiquant scales would need PA-managed modes 4/5")
    act_kv = list(view.act_kv)
    kv = {n: _kv_bnsd(call[n], view, act_kv) for n in PAGED_KV if call.get(n) is not None}
    small, large = block_sizes(view, dtype_name(call["key"].dtype))
    plans = [(small, False, "BnBsH"), (small, True, "BnBsH"), (small, True, "BnNBsD"),
             (small, True, "NZ"), (large, True, "BnBsH")]
    return keep_legal(_paged(case, call, view, kv, act_kv, plans), case.rules)


def _from_paged(case: Case, call: Call, view: CallView) -> list[Partner]:
    if view.attrs["key_antiquant_mode"] in (4, 5) or view.attrs["value_antiquant_mode"] in (4, 5):
        raise NotApplicable("PA-managed antiquant scales (modes 4/5) are not re-paged")
    act_kv = list(view.act_kv)
    table = np.asarray(call["block_table"])
    bs = int(view.attrs["block_size"])
    lens = np.asarray(act_kv, np.int64)
    kv = {n: paged_bnsd(np.asarray(call[n]), view.KV_N, table, lens) for n in PAGED_KV
          if call.get(n) is not None}
    new = dict(call, actual_seq_lengths_kv=cumulative(act_kv) if view.packed else act_kv)
    new.pop("block_table")
    new.pop("block_size", None)
    for name, dense in kv.items():
        new[name] = pack(dense, view.in_layout, act_kv) if view.packed \
            else from_bnsd(dense, view.in_layout)
    small, large = block_sizes(view, dtype_name(call["key"].dtype))
    plans = [(bs, True, form) for form in CACHE_FORMS] + \
        [(b, True, "BnBsH") for b in (small, large) if b != bs]
    partners = [Partner("contiguous", new, PAGED_TOLERANCE)]
    return keep_legal(partners + _paged(case, call, view, kv, act_kv, plans), case.rules)


@relation("paged", "paged KV (any block size, ordered or shuffled table) equals contiguous KV",
          "V4 参数说明 blockTable/blockSize; fia-semantics.md §2 (Paged KV caches)",
          (PAGED_TOLERANCE,))
def paged_vs_contiguous(case: Case, call: Call) -> list[Partner]:
    view = view_of(call)
    return _from_paged(case, call, view) if view.paged else _to_paged(case, call, view)
