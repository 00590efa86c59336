"""Which kernel and template an Atlas A2 call takes: the host code's dispatch.

`TilingFusedInferAttentionScore` first asks `RouteToFia` (the V3 kernels:
non-quantised GQA and MLA); a call it declines goes to the legacy tiling, which
takes the TND split-fuse kernel ("FAI") when `IsUsingFAI` holds, the incremental
decode kernel (IFA) when `IsUsingIFA` holds, and the prompt kernel (PFA) for
everything else. The legacy kernels pick a template by dtype: float, antiquant
(one per antiquant mode), full int8 quant, MLA full quant, post-quant.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import IFA, TOP, V3, cite
from fia_fuzz.rules.profiles.atlas_a2 import split_fuse_route

FLOATS = ("float16", "bfloat16")
#: Layouts the legacy IFA kernel takes (IsGqaIfa, IsGqaMtp, IsMlaIfaOrMtp)
IFA_LAYOUTS = ("BSH", "BNSD", "BSND", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD")
#: Layouts the legacy GQA check of the V3 route knows (isNotLegacyGQA)
LEGACY_GQA_LAYOUTS = ("BSH", "BSND", "BNSD", "BNSD_BSND", "TND", "NSD")
#: Layouts the V3 GQA kernel takes (CheckGqaInputLayoutSupport)
V3_GQA_LAYOUTS = ("BNSD_BSND", "BSND_BNSD", "BNSD", "BSND", "BSH_BNSD", "BSH", "TND", "NTD",
                  "NTD_TND")
#: (query D, rope D, value D) the V3 GQA kernel has a template for (CheckGqaDSupport)
V3_GQA_DIMS = ((128, 0, 128), (64, 0, 64), (128, 64, 128), (192, 0, 128))
#: Optional inputs the V3 GQA kernel has no template for (CheckGqaFeatureSupport)
V3_UNSUPPORTED = ("pse_shift", "query_padding_size", "kv_padding_size", "key_shared_prefix",
                  "value_shared_prefix", "actual_shared_prefix_len", "quant_scale2",
                  "quant_offset2")
#: Longest query of the IFA speculative (MTP) templates (IsGqaMtp, IsMlaIfaOrMtp)
MTP_Q_MAX = 16

WHY = {
    "v3": cite(V3, "RouteToFia"),
    "v3.gqa_constrain": cite(V3, "CheckGqaConstrain / isNotLegacyGQA"),
    "fai": cite(TOP, "IsUsingFAI") + "; " + cite(V3, "CheckSpecConditions")
    + " (the atlas-a2 profile's split_fuse_route)",
    "ifa": cite(TOP, "IsUsingIFA (IsGqaIfa, IsGqaMtp, IsAtbIfa, IsMlaIfaOrMtp, "
                     "IsSlidingAttention)"),
    "pfa": cite(TOP, "TilingFusedInferAttentionScore (TilingProcess4PFA)"),
    "template": cite(IFA, "SetupPerfMode") + "; " + cite(TOP, "ConvertContextToParamsPFA"),
    "empty": cite(V3, "IsEmptyTensor") + " (atlas-a2 a2.empty_kv)",
}


def empty(c: CallView) -> bool:
    """A call with an empty query or KV computes nothing: no kernel's tiling applies."""
    if c.need("query").numel == 0:
        return True
    return any(t.numel == 0 for t in c.spec_list("key") + c.spec_list("value"))


def _dims(c: CallView) -> tuple[int, int, int]:
    rope = c.spec("query_rope")
    return c.D, (rope.shape[-1] if rope is not None else 0), c.Dv


def _key_ndim(c: CallView) -> int:
    return c.spec_list("key")[0].ndim


def not_legacy_gqa(c: CallView) -> bool:
    """True where the V3 route takes a float call without asking for a GQA template."""
    if c.attrs["input_layout"] not in LEGACY_GQA_LAYOUTS:
        return True
    if c.D != c.Dv or c.rope:
        return True
    if c.attrs["input_layout"] == "TND" and c.Dv == 192:
        return False
    return _key_ndim(c) not in (3, 4) or (c.spec("value") is not None
                                          and c.spec_list("value")[0].ndim not in (3, 4))


def v3_gqa_fits(c: CallView) -> bool:
    """CheckGqaConstrain: a legacy-shaped float call the V3 GQA kernel has a template for."""
    if not_legacy_gqa(c):
        return True
    return (c.attrs["input_layout"] in V3_GQA_LAYOUTS and _dims(c) in V3_GQA_DIMS
            and not any(c.has(n) for n in V3_UNSUPPORTED))


def to_v3(c: CallView) -> bool:
    """RouteToFia on A2: float query with KV of its dtype, off the split-fuse route, and a
    V3 template (with rope every call qualifies: isNotLegacyGQA holds)."""
    q, k = c.need("query").dtype, c.spec_list("key")[0].dtype
    if q not in FLOATS or k != q:
        return False
    return c.rope or (not split_fuse_route(c) and v3_gqa_fits(c))


def to_ifa(c: CallView) -> bool:
    """IsUsingIFA: decode and short-query (MTP) calls the legacy decode kernel takes."""
    lay, rope, q_s = c.attrs["input_layout"], c.rope, c.S1
    tnd = lay in ("TND", "TND_NTD")
    if not rope:
        if tnd and c.D == 512:
            return True
        if lay in IFA_LAYOUTS and (q_s == 1 or (1 < q_s <= MTP_Q_MAX and _key_ndim(c) == 5)):
            return True
        return tnd and _atb_antiquant(c)
    if tnd:
        return c.D == 512
    if lay not in IFA_LAYOUTS:
        return False
    return q_s == 1 or (c.D == 512 and (q_s <= MTP_Q_MAX or c.attr_int("sparse_mode") == 4))


def _atb_antiquant(c: CallView) -> bool:
    """IsAtbIfa: packed paged int8-KV antiquant with float32 scale and offset, D != 512."""
    if c.spec_list("key")[0].dtype != "int8" or c.need("query").dtype == "int8":
        return False
    if not c.paged or c.D == 512:
        return False
    sc, off = c.spec("antiquant_scale"), c.spec("antiquant_offset")
    return sc is not None and off is not None and sc.dtype == off.dtype == "float32"


def antiquant_mode(c: CallView) -> str:
    """The antiquant template of a float query over int8/int4 KV: the mode its scales take
    (combined `antiquant_mode`, or key/value modes), as the features name it."""
    if c.separate_antiquant:
        return f"{c.attr_int('key_antiquant_mode')}/{c.attr_int('value_antiquant_mode')}"
    return str(c.attr_int("antiquant_mode"))


def template(c: CallView) -> str:
    """The legacy kernels' template family of a call."""
    q, k = c.need("query").dtype, c.spec_list("key")[0].dtype
    if q == "int8":
        return "mla_quant" if c.rope else "full_quant"
    if k != q:
        return "antiquant"
    if c.has("quant_scale2"):
        return "post_quant"
    return "float"


def kernel(c: CallView) -> str:
    """"v3", "fai", "ifa", "pfa" or "empty"."""
    if empty(c):
        return "empty"
    if to_v3(c):
        return "v3"
    if split_fuse_route(c):
        return "fai"
    return "ifa" if to_ifa(c) else "pfa"
