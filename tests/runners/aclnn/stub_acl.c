/*
 * TEST DOUBLE of CANN's libascendcl / libnnopbase / libopapi: never a backend.
 *
 * Built three times from this one file (-DSTUB_PART_RT, -DSTUB_PART_BASE,
 * -DSTUB_PART_OPAPI) into libascendcl.so, libnnopbase.so and libopapi.so, the
 * last two linked against the first, which holds all state. It exports the
 * symbols the aclnn runners and the documents' example programs use, with the
 * documented prototypes (copied from the seed documents), and:
 *   - appends one JSON line per call to the file named by STUB_ACL_LOG:
 *     every tensor's shape, strides, offset, format, dtype, storage shape and a
 *     checksum of the view's elements read through its strides from "device"
 *     memory (host memory here), every attribute, which optionals are NULL;
 *   - counts what is created against what is destroyed (tensors, lists, int
 *     arrays, device memory, streams, executors) and any destroy of something
 *     not alive (stubAclLive / stubAclAbuse);
 *   - the launch fills the outputs with a byte pattern, or with the bytes of
 *     the files STUB_ACL_OUT_FILE / STUB_ACL_LSE_FILE when set;
 *   - STUB_ACL_FAIL="fnName=code[,fnName=code]" makes fnName return code, with
 *     aclGetRecentErrMsg saying so.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int aclError;
typedef int aclnnStatus;
typedef void *aclrtStream;
typedef int aclDataType;
typedef int aclFormat;
typedef int aclrtMemcpyKind;
typedef int aclrtMemMallocPolicy;

#define STUB_MAX_DIMS 16
typedef struct aclTensor {
    int magic;
    int64_t dims[STUB_MAX_DIMS];
    uint64_t ndim;
    aclDataType dtype;
    int64_t strides[STUB_MAX_DIMS];
    int64_t offset;
    aclFormat format;
    int64_t storage[STUB_MAX_DIMS];
    uint64_t nstorage;
    void *data;
} aclTensor;
typedef struct aclTensorList { int magic; uint64_t size; aclTensor **items; } aclTensorList;
typedef struct aclIntArray { int magic; uint64_t size; int64_t *values; } aclIntArray;
typedef struct aclOpExecutor {
    int magic; uint64_t workspace; const aclTensor *out; const aclTensor *lse;
} aclOpExecutor;

/* ---- state, logging and failure injection (libascendcl) ---------------------------- */
#ifdef STUB_PART_RT
enum { K_TENSOR, K_LIST, K_ARRAY, K_MEM, K_STREAM, K_EXECUTOR, K_KINDS };
static const char *KIND_NAMES[K_KINDS] = {"tensor", "list", "int_array", "memory", "stream",
                                          "executor"};
static void **live[K_KINDS];
static size_t live_n[K_KINDS], live_cap[K_KINDS];
static size_t mem_sizes_cap;
static size_t *mem_sizes;
static int64_t abuse;
static char errmsg[512];

void stubAclAdd(int kind, void *p, size_t size) {
    if (live_n[kind] == live_cap[kind]) {
        live_cap[kind] = live_cap[kind] ? 2 * live_cap[kind] : 64;
        live[kind] = realloc(live[kind], live_cap[kind] * sizeof(void *));
        if (kind == K_MEM) {
            mem_sizes_cap = live_cap[kind];
            mem_sizes = realloc(mem_sizes, mem_sizes_cap * sizeof(size_t));
        }
    }
    if (kind == K_MEM) mem_sizes[live_n[kind]] = size;
    live[kind][live_n[kind]++] = p;
}
/* 1 when p was alive (and is now removed), else 0 and one abuse more. */
int stubAclRemove(int kind, const void *p) {
    for (size_t i = 0; i < live_n[kind]; i++) {
        if (live[kind][i] == p) {
            live[kind][i] = live[kind][live_n[kind] - 1];
            if (kind == K_MEM) mem_sizes[i] = mem_sizes[live_n[kind] - 1];
            live_n[kind]--;
            return 1;
        }
    }
    abuse++;
    return 0;
}
int stubAclAlive(int kind, const void *p) {
    for (size_t i = 0; i < live_n[kind]; i++) if (live[kind][i] == p) return 1;
    return 0;
}
/* Bytes of the live allocation holding p (0 when p is in none). */
size_t stubAclMemRoom(const void *p) {
    for (size_t i = 0; i < live_n[K_MEM]; i++) {
        const char *base = live[K_MEM][i];
        if ((const char *)p >= base && (const char *)p <= base + mem_sizes[i])
            return mem_sizes[i] - (size_t)((const char *)p - base);
    }
    return 0;
}
int64_t stubAclLive(const char *kind) {
    for (int k = 0; k < K_KINDS; k++) if (!strcmp(kind, KIND_NAMES[k])) return (int64_t)live_n[k];
    return -1;
}
int64_t stubAclAbuse(void) { return abuse; }
void stubAclReset(void) {
    for (int k = 0; k < K_KINDS; k++) live_n[k] = 0;
    abuse = 0;
}
void stubAclSetError(const char *msg) { snprintf(errmsg, sizeof errmsg, "%s", msg); }

/* The injected status of fn (0: none). */
int stubAclInjected(const char *fn) {
    const char *spec = getenv("STUB_ACL_FAIL");
    if (!spec) return 0;
    size_t n = strlen(fn);
    for (const char *p = spec; (p = strstr(p, fn)) != NULL; p += n) {
        if ((p == spec || p[-1] == ',') && p[n] == '=') {
            int code = atoi(p + n + 1);
            snprintf(errmsg, sizeof errmsg, "EZ9999: stub: %s failed on request (status %d)",
                     fn, code);
            return code;
        }
    }
    return 0;
}

FILE *stubAclLog(void) {
    const char *path = getenv("STUB_ACL_LOG");
    return path ? fopen(path, "a") : NULL;
}

const char *aclGetRecentErrMsg(void) { return errmsg[0] ? errmsg : NULL; }

static void log_simple(const char *fn, const char *extra) {
    FILE *f = stubAclLog();
    if (!f) return;
    fprintf(f, "{\"fn\": \"%s\"%s%s}\n", fn, extra[0] ? ", " : "", extra);
    fclose(f);
}

aclError aclInit(const char *configPath) {
    (void)configPath;
    log_simple("aclInit", "");
    return stubAclInjected("aclInit");
}
/* Logs what is still alive and any double release: a standalone program's leak report. */
aclError aclFinalize(void) {
    char extra[256];
    snprintf(extra, sizeof extra, "\"live\": {\"tensor\": %zu, \"list\": %zu, \"int_array\": %zu, "
             "\"memory\": %zu, \"stream\": %zu, \"executor\": %zu}, \"abuse\": %lld",
             live_n[K_TENSOR], live_n[K_LIST], live_n[K_ARRAY], live_n[K_MEM], live_n[K_STREAM],
             live_n[K_EXECUTOR], (long long)abuse);
    log_simple("aclFinalize", extra);
    return 0;
}
aclError aclrtSetDevice(int32_t deviceId) {
    char extra[64];
    snprintf(extra, sizeof extra, "\"device\": %d", deviceId);
    log_simple("aclrtSetDevice", extra);
    return stubAclInjected("aclrtSetDevice");
}
aclError aclrtResetDevice(int32_t deviceId) { (void)deviceId; return 0; }
aclError aclrtGetDeviceCount(uint32_t *count) {
    const char *n = getenv("STUB_ACL_DEVICES");
    *count = n ? (uint32_t)atoi(n) : 1u;
    return 0;
}
aclError aclrtCreateStream(aclrtStream *stream) {
    int code = stubAclInjected("aclrtCreateStream");
    if (code) return code;
    *stream = malloc(16);
    stubAclAdd(K_STREAM, *stream, 16);
    char extra[64];
    snprintf(extra, sizeof extra, "\"stream\": \"%p\"", *stream);
    log_simple("aclrtCreateStream", extra);
    return 0;
}
aclError aclrtDestroyStream(aclrtStream stream) {
    char extra[64];
    snprintf(extra, sizeof extra, "\"stream\": \"%p\"", stream);
    log_simple("aclrtDestroyStream", extra);
    if (stubAclRemove(K_STREAM, stream)) free(stream);
    return 0;
}
aclError aclrtSynchronizeStream(aclrtStream stream) {
    char extra[64];
    snprintf(extra, sizeof extra, "\"stream\": \"%p\", \"alive\": %d", stream,
             stubAclAlive(K_STREAM, stream));
    log_simple("aclrtSynchronizeStream", extra);
    return stubAclInjected("aclrtSynchronizeStream");
}
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    int code = stubAclInjected("aclrtMalloc");
    char extra[96];
    snprintf(extra, sizeof extra, "\"size\": %zu, \"policy\": %d", size, policy);
    log_simple("aclrtMalloc", extra);
    if (code) return code;
    if (size == 0) { stubAclSetError("EE9999: stub: aclrtMalloc of 0 bytes"); return 107000; }
    *devPtr = malloc(size);
    stubAclAdd(K_MEM, *devPtr, size);
    return 0;
}
aclError aclrtFree(void *devPtr) {
    log_simple("aclrtFree", "");
    if (stubAclRemove(K_MEM, devPtr)) free(devPtr);
    return 0;
}
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind) {
    int code = stubAclInjected("aclrtMemcpy");
    char extra[128];
    snprintf(extra, sizeof extra, "\"count\": %zu, \"kind\": %d", count, kind);
    log_simple("aclrtMemcpy", extra);
    if (code) return code;
    const void *device = kind == 1 ? dst : src; /* ACL_MEMCPY_HOST_TO_DEVICE = 1 */
    if (count > destMax || stubAclMemRoom(device) < count) {
        stubAclSetError("EE9999: stub: aclrtMemcpy out of the device allocation");
        abuse++;
        return 507899;
    }
    memcpy(dst, src, count);
    return 0;
}
#else
void stubAclAdd(int kind, void *p, size_t size);
int stubAclRemove(int kind, const void *p);
int stubAclAlive(int kind, const void *p);
size_t stubAclMemRoom(const void *p);
int stubAclInjected(const char *fn);
void stubAclSetError(const char *msg);
FILE *stubAclLog(void);
enum { K_TENSOR, K_LIST, K_ARRAY, K_MEM, K_STREAM, K_EXECUTOR, K_KINDS };
#endif

/* ---- tensors, lists, int arrays (libnnopbase) --------------------------------------- */
#ifdef STUB_PART_BASE
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
    if (stubAclInjected("aclCreateTensor")) return NULL;
    if (viewDimsNum > STUB_MAX_DIMS || storageDimsNum > STUB_MAX_DIMS) return NULL;
    aclTensor *t = calloc(1, sizeof *t);
    t->magic = 0x7e50;
    t->ndim = viewDimsNum;
    for (uint64_t i = 0; i < viewDimsNum; i++) { t->dims[i] = viewDims[i]; t->strides[i] = stride[i]; }
    t->nstorage = storageDimsNum;
    for (uint64_t i = 0; i < storageDimsNum; i++) t->storage[i] = storageDims[i];
    t->dtype = dataType; t->offset = offset; t->format = format; t->data = tensorData;
    stubAclAdd(K_TENSOR, t, 0);
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclCreateTensor\", \"tensor\": \"%p\"}\n", (void *)t); fclose(f); }
    return t;
}
aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclDestroyTensor\", \"tensor\": \"%p\"}\n", (void *)tensor); fclose(f); }
    if (stubAclRemove(K_TENSOR, tensor)) free((void *)tensor);
    return 0;
}
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (stubAclInjected("aclCreateTensorList")) return NULL;
    aclTensorList *l = calloc(1, sizeof *l);
    l->magic = 0x7e51; l->size = size;
    l->items = calloc(size ? size : 1, sizeof(aclTensor *));
    for (uint64_t i = 0; i < size; i++) l->items[i] = (aclTensor *)value[i];
    stubAclAdd(K_LIST, l, 0);
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclCreateTensorList\", \"size\": %llu}\n", (unsigned long long)size); fclose(f); }
    return l;
}
/* As in CANN: destroying a list destroys the tensors it holds. */
aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclDestroyTensorList\"}\n"); fclose(f); }
    if (!stubAclRemove(K_LIST, array)) return 0;
    for (uint64_t i = 0; i < array->size; i++)
        if (stubAclRemove(K_TENSOR, array->items[i])) free(array->items[i]);
    free(array->items);
    free((void *)array);
    return 0;
}
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    if (stubAclInjected("aclCreateIntArray")) return NULL;
    aclIntArray *a = calloc(1, sizeof *a);
    a->magic = 0x7e52; a->size = size;
    a->values = calloc(size ? size : 1, sizeof(int64_t));
    for (uint64_t i = 0; i < size; i++) a->values[i] = value[i];
    stubAclAdd(K_ARRAY, a, 0);
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclCreateIntArray\", \"size\": %llu}\n", (unsigned long long)size); fclose(f); }
    return a;
}
aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclDestroyIntArray\"}\n"); fclose(f); }
    if (stubAclRemove(K_ARRAY, array)) { free(array->values); free((void *)array); }
    return 0;
}
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    FILE *f = stubAclLog();
    if (f) { fprintf(f, "{\"fn\": \"aclDestroyAclOpExecutor\"}\n"); fclose(f); }
    if (stubAclRemove(K_EXECUTOR, executor)) free(executor);
    return 0;
}
#endif

/* ---- the operators (libopapi) -------------------------------------------------------- */
#ifdef STUB_PART_OPAPI
typedef struct aclTensorList aclTensorList;

static double elem_bits(int dtype) {
    switch (dtype) {
    case 0: case 3: case 8: return 32;            /* FLOAT INT32 UINT32 */
    case 1: case 6: case 7: case 27: return 16;   /* FLOAT16 INT16 UINT16 BF16 */
    case 2: case 4: case 12: return 8;            /* INT8 UINT8 BOOL */
    case 9: case 10: case 11: case 16: return 64; /* INT64 UINT64 DOUBLE COMPLEX64 */
    case 29: return 4;                            /* INT4 */
    default: return 8;
    }
}

/* Checksum of the view's elements in row-major order, read through strides and offset:
   sum over the view's bytes b_k of b_k * (k * 2654435761 + 1), mod 2^64 (int4: one byte
   per element, its nibble). -1 when an element lies outside the device allocation. */
static int64_t view_checksum(const aclTensor *t, int *outside) {
    double bits = elem_bits(t->dtype);
    size_t size = bits >= 8 ? (size_t)(bits / 8) : 1;
    uint64_t numel = 1;
    for (uint64_t i = 0; i < t->ndim; i++) numel *= (uint64_t)t->dims[i];
    *outside = 0;
    if (numel == 0) return 0;
    if (!t->data) { *outside = 1; return 0; }
    size_t room = stubAclMemRoom(t->data);
    int64_t idx[STUB_MAX_DIMS] = {0};
    uint64_t sum = 0, k = 0;
    for (uint64_t n = 0; n < numel; n++) {
        int64_t pos = t->offset;
        for (uint64_t i = 0; i < t->ndim; i++) pos += idx[i] * t->strides[i];
        const unsigned char *base = t->data;
        if (bits == 4) {
            if ((size_t)(pos / 2) >= room) { *outside = 1; return 0; }
            unsigned char byte = base[pos / 2];
            unsigned char nib = (pos % 2) ? (byte >> 4) : (byte & 0xF);
            sum += (uint64_t)nib * (k * 2654435761ull + 1ull);
            k++;
        } else {
            if ((size_t)pos * size + size > room) { *outside = 1; return 0; }
            for (size_t b = 0; b < size; b++, k++)
                sum += (uint64_t)base[(size_t)pos * size + b] * (k * 2654435761ull + 1ull);
        }
        for (int64_t i = (int64_t)t->ndim - 1; i >= 0; i--) {
            if (++idx[i] < t->dims[i]) break;
            idx[i] = 0;
        }
    }
    return (int64_t)sum;
}

static void ints(FILE *f, const int64_t *v, uint64_t n) {
    fputc('[', f);
    for (uint64_t i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
    fputc(']', f);
}
static void tensor_json(FILE *f, const aclTensor *t, int input) {
    if (!t) { fputs("null", f); return; }
    if (!stubAclAlive(K_TENSOR, t)) { fputs("\"dead tensor\"", f); return; }
    fputs("{\"shape\": ", f); ints(f, t->dims, t->ndim);
    fputs(", \"strides\": ", f); ints(f, t->strides, t->ndim);
    fprintf(f, ", \"offset\": %lld, \"format\": %d, \"dtype\": %d, \"storage\": ",
            (long long)t->offset, t->format, t->dtype);
    ints(f, t->storage, t->nstorage);
    fprintf(f, ", \"data\": %s", t->data ? "true" : "false");
    if (input) {
        int outside = 0;
        int64_t sum = view_checksum(t, &outside);
        fprintf(f, ", \"checksum\": \"%llu\", \"outside\": %s", (unsigned long long)sum,
                outside ? "true" : "false");
    }
    fputc('}', f);
}
#define T(name) do { fprintf(f, "%s\"" #name "\": ", first ? "" : ", "); first = 0; \
                     tensor_json(f, name, 1); } while (0)
#define O(name) do { fprintf(f, ", \"" #name "\": "); tensor_json(f, name, 0); } while (0)
static void list_json(FILE *f, const aclTensorList *l) {
    if (!l) { fputs("null", f); return; }
    if (!stubAclAlive(K_LIST, l)) { fputs("\"dead list\"", f); return; }
    fputc('[', f);
    for (uint64_t i = 0; i < l->size; i++) {
        if (i) fputs(", ", f);
        tensor_json(f, l->items[i], 1);
    }
    fputc(']', f);
}
static void str_json(FILE *f, const char *s) {
    if (!s) { fputs("null", f); return; }
    fputc('"', f);
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\') fputc('\\', f);
        fputc(*c, f);
    }
    fputc('"', f);
}
#define L(name) do { fprintf(f, ", \"" #name "\": "); list_json(f, name); } while (0)
#define A(name) do { fprintf(f, ", \"" #name "\": "); \
    if (!name) fputs("null", f); \
    else if (!stubAclAlive(K_ARRAY, name)) fputs("\"dead int array\"", f); \
    else ints(f, name->values, name->size); } while (0)
#define I(name) fprintf(f, ", \"" #name "\": %lld", (long long)name)
#define D(name) fprintf(f, ", \"" #name "\": %.17g", name)
#define B(name) fprintf(f, ", \"" #name "\": %s", name ? "true" : "false")
#define S(name) do { fprintf(f, ", \"" #name "\": "); str_json(f, name); } while (0)

static aclnnStatus phase_one(const char *fn, const aclTensor *out, const aclTensor *lse,
                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    int code = stubAclInjected(fn);
    if (code) return code;
    if (!workspaceSize || !executor) { stubAclSetError("EZ1001: stub: null out-parameter"); return 161001; }
    const char *ws = getenv("STUB_ACL_WORKSPACE");
    *workspaceSize = ws ? (uint64_t)atoll(ws) : 4096u;
    aclOpExecutor *e = calloc(1, sizeof *e);
    e->magic = 0x7e53; e->workspace = *workspaceSize; e->out = out; e->lse = lse;
    stubAclAdd(K_EXECUTOR, e, 0);
    *executor = e;
    return 0;
}

static void fill(const aclTensor *t, const char *env) {
    if (!t || !t->data) return;
    size_t n = (size_t)(t->nstorage ? 1 : 0);
    for (uint64_t i = 0; i < t->nstorage; i++) n *= (size_t)t->storage[i];
    n = (size_t)(n * elem_bits(t->dtype) / 8);
    unsigned char *p = t->data;
    const char *path = getenv(env);
    if (path) {
        FILE *src = fopen(path, "rb");
        size_t got = src ? fread(p, 1, n, src) : 0;
        if (src) fclose(src);
        if (got == n) return;
    }
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 31u + 7u) & 0xFFu);
}

static aclnnStatus phase_two(const char *fn, void *workspace, uint64_t workspaceSize,
                             aclOpExecutor *executor, aclrtStream stream) {
    FILE *f = stubAclLog();
    int alive = stubAclAlive(K_EXECUTOR, executor);
    if (f) {
        fprintf(f, "{\"fn\": \"%s\", \"workspaceSize\": %llu, \"workspace\": %s, \"executor_alive\": %d, "
                "\"stream\": \"%p\", \"workspace_room\": %zu}\n", fn, (unsigned long long)workspaceSize,
                workspace ? "true" : "false", alive, stream,
                workspace ? stubAclMemRoom(workspace) : (size_t)0);
        fclose(f);
    }
    if (!alive) { stubAclSetError("EZ1001: stub: launch without a live executor"); return 161001; }
    int code = stubAclInjected(fn);
    if (!code) { fill(executor->out, "STUB_ACL_OUT_FILE"); fill(executor->lse, "STUB_ACL_LSE_FILE"); }
    stubAclRemove(K_EXECUTOR, executor); /* the launch consumes the executor */
    free(executor);
    return code;
}

/* Prototypes as in the documents (seed 000, 001, 002). */
aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional, const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional, const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional, const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional, const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional, const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional, const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,  const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional, const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional, const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional, const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    FILE *f = stubAclLog();
    if (f) {
        int first = 1;
        fputs("{\"fn\": \"aclnnFusedInferAttentionScoreV2GetWorkspaceSize\", \"args\": {", f);
        T(query); L(key); L(value); T(pseShiftOptional); T(attenMaskOptional);
        A(actualSeqLengthsOptional); A(actualSeqLengthsKvOptional); T(deqScale1Optional);
        T(quantScale1Optional); T(deqScale2Optional); T(quantScale2Optional);
        T(quantOffset2Optional); T(antiquantScaleOptional); T(antiquantOffsetOptional);
        T(blockTableOptional); T(queryPaddingSizeOptional); T(kvPaddingSizeOptional);
        T(keyAntiquantScaleOptional); T(keyAntiquantOffsetOptional);
        T(valueAntiquantScaleOptional); T(valueAntiquantOffsetOptional);
        T(keySharedPrefixOptional); T(valueSharedPrefixOptional);
        A(actualSharedPrefixLenOptional); I(numHeads); D(scaleValue); I(preTokens);
        I(nextTokens); S(inputLayout); I(numKeyValueHeads); I(sparseMode); I(innerPrecise);
        I(blockSize); I(antiquantMode); B(softmaxLseFlag); I(keyAntiquantMode);
        I(valueAntiquantMode); O(attentionOut); O(softmaxLse);
        fputs("}}\n", f);
        fclose(f);
    }
    return phase_one("aclnnFusedInferAttentionScoreV2GetWorkspaceSize", attentionOut,
                     softmaxLse, workspaceSize, executor);
}
aclnnStatus aclnnFusedInferAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, const aclrtStream stream)
{
    return phase_two("aclnnFusedInferAttentionScoreV2", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
    const aclTensor     *query, 
    const aclTensorList *key, 
    const aclTensorList *value, 
    const aclTensor     *pseShiftOptional, 
    const aclTensor     *attenMaskOptional, 
    const aclIntArray   *actualSeqLengthsOptional, 
    const aclIntArray   *actualSeqLengthsKvOptional, 
    const aclTensor     *deqScale1Optional, 
    const aclTensor     *quantScale1Optional, 
    const aclTensor     *deqScale2Optional, 
    const aclTensor     *quantScale2Optional, 
    const aclTensor     *quantOffset2Optional, 
    const aclTensor     *antiquantScaleOptional, 
    const aclTensor     *antiquantOffsetOptional, 
    const aclTensor     *blockTableOptional, 
    const aclTensor     *queryPaddingSizeOptional, 
    const aclTensor     *kvPaddingSizeOptional, 
    const aclTensor     *keyAntiquantScaleOptional, 
    const aclTensor     *keyAntiquantOffsetOptional, 
    const aclTensor     *valueAntiquantScaleOptional, 
    const aclTensor     *valueAntiquantOffsetOptional, 
    const aclTensor     *keySharedPrefixOptional, 
    const aclTensor     *valueSharedPrefixOptional, 
    const aclIntArray   *actualSharedPrefixLenOptional, 
    const aclTensor     *queryRopeOptional, 
    const aclTensor     *keyRopeOptional, 
    const aclTensor     *keyRopeAntiquantScaleOptional, 
    const aclTensor     *dequantScaleQueryOptional, 
    int64_t              numHeads, 
    double               scaleValue, 
    int64_t              preTokens, 
    int64_t              nextTokens, 
    char                *inputLayout, 
    int64_t              numKeyValueHeads, 
    int64_t              sparseMode, 
    int64_t              innerPrecise, 
    int64_t              blockSize, 
    int64_t              antiquantMode, 
    bool                 softmaxLseFlag, 
    int64_t              keyAntiquantMode, 
    int64_t              valueAntiquantMode, 
    int64_t              queryQuantMode, 
    const aclTensor     *attentionOut, 
    const aclTensor     *softmaxLse, 
    uint64_t            *workspaceSize, 
    aclOpExecutor      **executor)
{
    FILE *f = stubAclLog();
    if (f) {
        int first = 1;
        fputs("{\"fn\": \"aclnnFusedInferAttentionScoreV4GetWorkspaceSize\", \"args\": {", f);
        T(query); L(key); L(value); T(pseShiftOptional); T(attenMaskOptional);
        A(actualSeqLengthsOptional); A(actualSeqLengthsKvOptional); T(deqScale1Optional);
        T(quantScale1Optional); T(deqScale2Optional); T(quantScale2Optional);
        T(quantOffset2Optional); T(antiquantScaleOptional); T(antiquantOffsetOptional);
        T(blockTableOptional); T(queryPaddingSizeOptional); T(kvPaddingSizeOptional);
        T(keyAntiquantScaleOptional); T(keyAntiquantOffsetOptional);
        T(valueAntiquantScaleOptional); T(valueAntiquantOffsetOptional);
        T(keySharedPrefixOptional); T(valueSharedPrefixOptional);
        A(actualSharedPrefixLenOptional); T(queryRopeOptional); T(keyRopeOptional);
        T(keyRopeAntiquantScaleOptional); T(dequantScaleQueryOptional); I(numHeads);
        D(scaleValue); I(preTokens); I(nextTokens); S(inputLayout); I(numKeyValueHeads);
        I(sparseMode); I(innerPrecise); I(blockSize); I(antiquantMode); B(softmaxLseFlag);
        I(keyAntiquantMode); I(valueAntiquantMode); I(queryQuantMode); O(attentionOut);
        O(softmaxLse);
        fputs("}}\n", f);
        fclose(f);
    }
    return phase_one("aclnnFusedInferAttentionScoreV4GetWorkspaceSize", attentionOut,
                     softmaxLse, workspaceSize, executor);
}
aclnnStatus aclnnFusedInferAttentionScoreV4(
    void             *workspace, 
    uint64_t          workspaceSize, 
    aclOpExecutor    *executor, 
    const aclrtStream stream)
{
    return phase_two("aclnnFusedInferAttentionScoreV4", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift, const aclTensor *attenMask, const aclIntArray *actualSeqLengths,  const aclTensor *dequantScale1, const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2, const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset, const aclTensor *blocktable, const aclTensor *kvPaddingSize, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise, const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    FILE *f = stubAclLog();
    if (f) {
        int first = 1;
        fputs("{\"fn\": \"aclnnIncreFlashAttentionV4GetWorkspaceSize\", \"args\": {", f);
        T(query); L(key); L(value); T(pseShift); T(attenMask); A(actualSeqLengths);
        T(dequantScale1); T(quantScale1); T(dequantScale2); T(quantScale2); T(quantOffset2);
        T(antiquantScale); T(antiquantOffset); T(blocktable); T(kvPaddingSize); I(numHeads);
        D(scaleValue); S(inputLayout); I(numKeyValueHeads); I(blockSize); I(innerPrecise);
        O(attentionOut);
        fputs("}}\n", f);
        fclose(f);
    }
    return phase_one("aclnnIncreFlashAttentionV4GetWorkspaceSize", attentionOut, NULL,
                     workspaceSize, executor);
}
aclnnStatus aclnnIncreFlashAttentionV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return phase_two("aclnnIncreFlashAttentionV4", workspace, workspaceSize, executor, stream);
}
#endif
