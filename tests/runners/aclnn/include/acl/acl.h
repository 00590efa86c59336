/* TEST DOUBLE header: the part of CANN's acl/acl.h (acl_base.h, acl_rt.h) the generated
   repro programs use, with CANN's enum values. Compiled against the stub libraries only. */
#ifndef STUB_ACL_ACL_H
#define STUB_ACL_ACL_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef int aclError;
typedef void *aclrtStream;
#define ACL_SUCCESS 0
typedef enum {
    ACL_DT_UNDEFINED = -1, ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT8 = 2, ACL_INT32 = 3,
    ACL_UINT8 = 4, ACL_INT16 = 6, ACL_UINT16 = 7, ACL_UINT32 = 8, ACL_INT64 = 9,
    ACL_UINT64 = 10, ACL_DOUBLE = 11, ACL_BOOL = 12, ACL_STRING = 13, ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17, ACL_BF16 = 27, ACL_INT4 = 29
} aclDataType;
typedef enum {
    ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3, ACL_FORMAT_FRACTAL_Z = 4, ACL_FORMAT_FRACTAL_NZ = 29
} aclFormat;
typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2, ACL_MEMCPY_DEVICE_TO_DEVICE = 3
} aclrtMemcpyKind;
typedef enum { ACL_MEM_MALLOC_HUGE_FIRST = 0 } aclrtMemMallocPolicy;

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind);
const char *aclGetRecentErrMsg(void);
#ifdef __cplusplus
}
#endif
#endif
