/* TEST DOUBLE header: aclTensor, aclTensorList, aclIntArray as CANN declares them. */
#ifndef STUB_ACLNN_BASE_H
#define STUB_ACLNN_BASE_H
#include <stdbool.h>
#include "acl/acl.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;
typedef struct aclTensorList aclTensorList;
typedef struct aclIntArray aclIntArray;
typedef struct aclOpExecutor aclOpExecutor;
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);
aclnnStatus aclDestroyTensorList(const aclTensorList *array);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
aclnnStatus aclDestroyIntArray(const aclIntArray *array);
#ifdef __cplusplus
}
#endif
#endif
