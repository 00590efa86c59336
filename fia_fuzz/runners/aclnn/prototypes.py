"""The three aclnn C interfaces as data: enums, status codes, and each prototype's parameters.

Written once from the vendor documents (shared/seeds, see its README):

- `aclnn-v2`: aclnnFusedInferAttentionScoreV2 (000_123638891055dff8.txt)
- `aclnn-v4`: aclnnFusedInferAttentionScoreV4 (001_930a6e6a96d7cc24.txt)
- `aclnn-ifa-v4`: aclnnIncreFlashAttentionV4 (002_d5416267547d618d.txt)

Each interface's `params` is its `...GetWorkspaceSize` prototype in the
document's order: (C type, the document's parameter name, the canonical call
argument it carries). The runner binds the ctypes signature, builds every
argument and checks nothing positional by hand from this one table; a test
holds the table to the prototypes in the documents and in the stub library.
The enum values are CANN's (`acl/acl_base.h`: aclDataType, aclFormat;
`acl/acl_rt.h`: aclrtMemcpyKind, aclrtMemMallocPolicy; aclnn return codes).
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- CANN enums ------------------------------------------------------------------------

#: aclDataType of each dtype a call can hold: (our dtype name, CANN enumerator, value).
ACL_DATA_TYPES: tuple[tuple[str, str, int], ...] = (
    ("float32", "ACL_FLOAT", 0),
    ("float16", "ACL_FLOAT16", 1),
    ("int8", "ACL_INT8", 2),
    ("int32", "ACL_INT32", 3),
    ("uint8", "ACL_UINT8", 4),
    ("int16", "ACL_INT16", 6),
    ("uint16", "ACL_UINT16", 7),
    ("uint32", "ACL_UINT32", 8),
    ("int64", "ACL_INT64", 9),
    ("uint64", "ACL_UINT64", 10),
    ("float64", "ACL_DOUBLE", 11),
    ("bool", "ACL_BOOL", 12),
    ("complex64", "ACL_COMPLEX64", 16),
    ("bfloat16", "ACL_BF16", 27),
    ("int4", "ACL_INT4", 29),
)
ACL_DTYPE: dict[str, int] = {name: value for name, _, value in ACL_DATA_TYPES}
ACL_DTYPE_NAME: dict[str, str] = {name: enum for name, enum, _ in ACL_DATA_TYPES}

#: aclFormat: ND for every tensor, FRACTAL_NZ for the 5-D paged caches (key, value and
#: key_rope of shape (block_num, KV_N, D/16, block_size, 16), /32 and 32 for int8).
ACL_FORMAT_ND = 2
ACL_FORMAT_FRACTAL_NZ = 29
ACL_FORMAT_NAME = {ACL_FORMAT_ND: "ACL_FORMAT_ND", ACL_FORMAT_FRACTAL_NZ: "ACL_FORMAT_FRACTAL_NZ"}
#: Arguments that are KV caches (5-D under paged attention: the NZ form).
NZ_CACHE_ARGS = ("key", "value", "key_rope")

#: aclrtMemcpyKind and aclrtMemMallocPolicy values used here.
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_SUCCESS = 0
#: aclInit a second time in one process (acl_base.h ACL_ERROR_REPEAT_INITIALIZE): harmless.
ACL_ERROR_REPEAT_INITIALIZE = 100002

#: aclnn return codes the documents name ("返回值", aclnn返回码).
ACLNN_STATUS: dict[int, str] = {
    0: "ACLNN_SUCCESS",
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
}

# ---- prototypes ------------------------------------------------------------------------

#: C parameter types of the prototypes, by how the runner builds them.
TENSOR = "const aclTensor *"
TENSOR_LIST = "const aclTensorList *"
INT_ARRAY = "const aclIntArray *"
INT64 = "int64_t"
DOUBLE = "double"
STRING = "char *"
BOOL = "bool"
WORKSPACE_SIZE = "uint64_t *"
EXECUTOR = "aclOpExecutor **"
C_TYPES = (TENSOR, TENSOR_LIST, INT_ARRAY, INT64, DOUBLE, STRING, BOOL, WORKSPACE_SIZE,
           EXECUTOR)

#: Canonical names of the parameters that are not call arguments.
ATTENTION_OUT = "attention_out"
SOFTMAX_LSE = "softmax_lse"
OUT_WORKSPACE = "workspace_size"
OUT_EXECUTOR = "executor"
OUTPUTS = (ATTENTION_OUT, SOFTMAX_LSE)


@dataclass(frozen=True)
class Param:
    ctype: str
    name: str  # as in the document's prototype
    canonical: str  # the call's keyword (or one of the output names above)


def _params(*rows: tuple[str, str, str]) -> tuple[Param, ...]:
    out = tuple(Param(*r) for r in rows)
    for p in out:
        if p.ctype not in C_TYPES:
            raise ValueError(f"{p.name}: unknown C type {p.ctype!r}")
    return out


_HEAD = (
    (TENSOR, "query", "query"),
    (TENSOR_LIST, "key", "key"),
    (TENSOR_LIST, "value", "value"),
)
#: The parameters the V2 and V4 prototypes share, in order, up to actualSharedPrefixLen.
_FIA_INPUTS = (
    *_HEAD,
    (TENSOR, "pseShiftOptional", "pse_shift"),
    (TENSOR, "attenMaskOptional", "atten_mask"),
    (INT_ARRAY, "actualSeqLengthsOptional", "actual_seq_lengths"),
    (INT_ARRAY, "actualSeqLengthsKvOptional", "actual_seq_lengths_kv"),
    (TENSOR, "deqScale1Optional", "dequant_scale1"),
    (TENSOR, "quantScale1Optional", "quant_scale1"),
    (TENSOR, "deqScale2Optional", "dequant_scale2"),
    (TENSOR, "quantScale2Optional", "quant_scale2"),
    (TENSOR, "quantOffset2Optional", "quant_offset2"),
    (TENSOR, "antiquantScaleOptional", "antiquant_scale"),
    (TENSOR, "antiquantOffsetOptional", "antiquant_offset"),
    (TENSOR, "blockTableOptional", "block_table"),
    (TENSOR, "queryPaddingSizeOptional", "query_padding_size"),
    (TENSOR, "kvPaddingSizeOptional", "kv_padding_size"),
    (TENSOR, "keyAntiquantScaleOptional", "key_antiquant_scale"),
    (TENSOR, "keyAntiquantOffsetOptional", "key_antiquant_offset"),
    (TENSOR, "valueAntiquantScaleOptional", "value_antiquant_scale"),
    (TENSOR, "valueAntiquantOffsetOptional", "value_antiquant_offset"),
    (TENSOR, "keySharedPrefixOptional", "key_shared_prefix"),
    (TENSOR, "valueSharedPrefixOptional", "value_shared_prefix"),
    (INT_ARRAY, "actualSharedPrefixLenOptional", "actual_shared_prefix_len"),
)
_FIA_ATTRS = (
    (INT64, "numHeads", "num_heads"),
    (DOUBLE, "scaleValue", "scale"),
    (INT64, "preTokens", "pre_tokens"),
    (INT64, "nextTokens", "next_tokens"),
    (STRING, "inputLayout", "input_layout"),
    (INT64, "numKeyValueHeads", "num_key_value_heads"),
    (INT64, "sparseMode", "sparse_mode"),
    (INT64, "innerPrecise", "inner_precise"),
    (INT64, "blockSize", "block_size"),
    (INT64, "antiquantMode", "antiquant_mode"),
    (BOOL, "softmaxLseFlag", "softmax_lse_flag"),
    (INT64, "keyAntiquantMode", "key_antiquant_mode"),
    (INT64, "valueAntiquantMode", "value_antiquant_mode"),
)
_FIA_TAIL = (
    (TENSOR, "attentionOut", ATTENTION_OUT),
    (TENSOR, "softmaxLse", SOFTMAX_LSE),
    (WORKSPACE_SIZE, "workspaceSize", OUT_WORKSPACE),
    (EXECUTOR, "executor", OUT_EXECUTOR),
)

V2_PARAMS = _params(*_FIA_INPUTS, *_FIA_ATTRS, *_FIA_TAIL)
V4_PARAMS = _params(
    *_FIA_INPUTS,
    (TENSOR, "queryRopeOptional", "query_rope"),
    (TENSOR, "keyRopeOptional", "key_rope"),
    (TENSOR, "keyRopeAntiquantScaleOptional", "key_rope_antiquant_scale"),
    (TENSOR, "dequantScaleQueryOptional", "dequant_scale_query"),
    *_FIA_ATTRS,
    (INT64, "queryQuantMode", "query_quant_mode"),
    *_FIA_TAIL,
)
#: IFA's actualSeqLengths are the key/value lengths ("表示key和value的S轴实际长度").
IFA_V4_PARAMS = _params(
    *_HEAD,
    (TENSOR, "pseShift", "pse_shift"),
    (TENSOR, "attenMask", "atten_mask"),
    (INT_ARRAY, "actualSeqLengths", "actual_seq_lengths_kv"),
    (TENSOR, "dequantScale1", "dequant_scale1"),
    (TENSOR, "quantScale1", "quant_scale1"),
    (TENSOR, "dequantScale2", "dequant_scale2"),
    (TENSOR, "quantScale2", "quant_scale2"),
    (TENSOR, "quantOffset2", "quant_offset2"),
    (TENSOR, "antiquantScale", "antiquant_scale"),
    (TENSOR, "antiquantOffset", "antiquant_offset"),
    (TENSOR, "blocktable", "block_table"),
    (TENSOR, "kvPaddingSize", "kv_padding_size"),
    (INT64, "numHeads", "num_heads"),
    (DOUBLE, "scaleValue", "scale"),
    (STRING, "inputLayout", "input_layout"),
    (INT64, "numKeyValueHeads", "num_key_value_heads"),
    (INT64, "blockSize", "block_size"),
    (INT64, "innerPrecise", "inner_precise"),
    (TENSOR, "attentionOut", ATTENTION_OUT),
    (WORKSPACE_SIZE, "workspaceSize", OUT_WORKSPACE),
    (EXECUTOR, "executor", OUT_EXECUTOR),
)


@dataclass(frozen=True)
class Interface:
    """One two-phase aclnn interface: `symbol + "GetWorkspaceSize"`, then `symbol`."""

    runner: str
    symbol: str
    header: str
    document: str
    params: tuple[Param, ...]

    @property
    def workspace_symbol(self) -> str:
        return self.symbol + "GetWorkspaceSize"

    @property
    def returns_lse(self) -> bool:
        return any(p.canonical == SOFTMAX_LSE for p in self.params)


INTERFACES: dict[str, Interface] = {
    "aclnn-v2": Interface("aclnn-v2", "aclnnFusedInferAttentionScoreV2",
                          "aclnnop/aclnn_fused_infer_attention_score_v2.h",
                          "aclnnFusedInferAttentionScoreV2 (seed 000_123638891055dff8.txt)",
                          V2_PARAMS),
    "aclnn-v4": Interface("aclnn-v4", "aclnnFusedInferAttentionScoreV4",
                          "aclnnop/aclnn_fused_infer_attention_score_v4.h",
                          "aclnnFusedInferAttentionScoreV4 (seed 001_930a6e6a96d7cc24.txt)",
                          V4_PARAMS),
    "aclnn-ifa-v4": Interface("aclnn-ifa-v4", "aclnnIncreFlashAttentionV4",
                              "aclnnop/aclnn_incre_flash_attention_v4.h",
                              "aclnnIncreFlashAttentionV4 (seed 002_d5416267547d618d.txt)",
                              IFA_V4_PARAMS),
}
