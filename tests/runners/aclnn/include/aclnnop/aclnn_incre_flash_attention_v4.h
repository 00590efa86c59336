/* TEST DOUBLE header: the documented prototypes of aclnnIncreFlashAttentionV4 (copied from stub_acl.c). */
#ifndef STUB_ACLNN_INCRE_FLASH_ATTENTION_V4_H
#define STUB_ACLNN_INCRE_FLASH_ATTENTION_V4_H
#include "aclnn/aclnn_base.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift, const aclTensor *attenMask, const aclIntArray *actualSeqLengths,  const aclTensor *dequantScale1, const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2, const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset, const aclTensor *blocktable, const aclTensor *kvPaddingSize, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise, const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnIncreFlashAttentionV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
