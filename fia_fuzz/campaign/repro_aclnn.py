"""`repro_aclnn.c` in the bundle of a case an aclnn runner ran: the case as a standalone C
program in the documents' own example style (seed 000/001/002 调用示例).

The program needs no fia-fuzz and no library beyond CANN: the bundle's `aclnn/`
directory holds each input's device storage as raw bytes (`<parameter>.bin`,
`<parameter>.<i>.bin` for a tensor list's members: exactly what the runner
copies to the device, int4 packed two to a byte), and the stored goldens as
raw float64 (`golden_<output>_fp64.bin`, `golden_<output>_device.bin`). The
program rebuilds every aclTensor with the case's shape, strides, offset,
format and dtype, passes every parameter in the prototype's order (the
runner's table, `runners/aclnn/prototypes.py`), runs the two phases and
compares the outputs with the goldens by the rule repro_npu.py uses (max
error at most 2x the same-precision golden's): exit 0 pass, 1 fail, 2 a CANN
call failed, 3 an input file is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.runners.aclnn.prototypes import (
    ACL_DATA_TYPES,
    ACL_FORMAT_NAME,
    ATTENTION_OUT,
    BOOL,
    DOUBLE,
    EXECUTOR,
    INT64,
    INT_ARRAY,
    INTERFACES,
    SOFTMAX_LSE,
    STRING,
    TENSOR,
    TENSOR_LIST,
    WORKSPACE_SIZE,
    Interface,
)
from fia_fuzz.runners.aclnn.tensors import TensorPlan, int_array, output_plan, plan_tensor

SOURCE = "repro_aclnn.c"
DATA = "aclnn"
BUILD = ('gcc repro_aclnn.c -o repro_aclnn -I"$ASCEND_HOME_PATH/include" '
         '-L"$ASCEND_HOME_PATH/lib64" -lascendcl -lnnopbase -lopapi -lm')
_ENUM = {value: enum for _, enum, value in ACL_DATA_TYPES}
_CHUNK = 1 << 20


def is_aclnn(runner: str) -> bool:
    return runner in INTERFACES


def repro_aclnn_lines(bundle: Path, runner: str) -> list[str]:
    if not is_aclnn(runner):
        return []
    return [f"cd {bundle} && {BUILD} && ./repro_aclnn   # standalone C on {runner} "
            "(source set_env.sh first)"]


def _write_sparse(path: Path, data: np.ndarray) -> None:
    """Raw bytes, runs of zero MiB left as holes (a lazy paged cache is mostly zero pages)."""
    flat = data.reshape(-1).view(np.uint8)
    with open(path, "wb") as f:
        for start in range(0, flat.size, _CHUNK):
            chunk = flat[start:start + _CHUNK]
            if chunk.any():
                f.seek(start)
                f.write(chunk.tobytes())
        f.truncate(flat.size)


def _ints(values: Any) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}" if len(values) else "{0}"


def _tensor_code(var: str, plan: TensorPlan, file: str | None) -> list[str]:
    """Lines creating aclTensor `var` (device storage read from `file`, or left empty)."""
    return [
        f"    static const int64_t {var}Shape[] = {_ints(plan.shape)};",
        f"    static const int64_t {var}Strides[] = {_ints(plan.strides)};",
        f"    static const int64_t {var}Storage[] = {_ints(plan.storage_shape)};",
        f"    ret = CreateAclTensor({json.dumps(file) if file else 'NULL'}, {var}Shape, "
        f"{len(plan.shape)}, {var}Strides, {plan.offset}, {ACL_FORMAT_NAME[plan.format]}, "
        f"{_ENUM[plan.dtype]}, {var}Storage, {len(plan.storage_shape)}, {plan.nbytes}, "
        f"&{var}DeviceAddr, &{var});",
        f"    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT(\"creating {var} failed\\n\"); "
        "return ret);",
    ]


def program(case: Case, runner: str, call: dict[str, Any], data_dir: Path,
            golden: dict[str, np.ndarray] | None) -> str:
    """The C program for `case` on `runner`; writes its input files into `data_dir`."""
    iface: Interface = INTERFACES[runner]
    view = CallView(call)
    out_spec, lse_spec = output_specs(view)
    want_lse = iface.returns_lse and bool(view.attrs["softmax_lse_flag"])
    decls: list[str] = []
    body: list[str] = []
    release: list[str] = []
    args: list[str] = []
    outs: list[tuple[str, TensorPlan, str]] = []

    def device_tensor(var: str, plan: TensorPlan, write: bool) -> None:
        decls.append(f"    void *{var}DeviceAddr = NULL;")
        decls.append(f"    aclTensor *{var} = NULL;")
        file = None
        if write and plan.nbytes:
            file = f"{DATA}/{var}.bin"
            _write_sparse(data_dir / f"{var}.bin", plan.storage)
        body.extend(_tensor_code(var, plan, file))
        release.append(f"    if ({var}DeviceAddr != NULL) aclrtFree({var}DeviceAddr);")

    for p in iface.params:
        value = call.get(p.canonical)
        if p.ctype == TENSOR and p.canonical in (ATTENTION_OUT, SOFTMAX_LSE):
            if p.canonical == SOFTMAX_LSE and not want_lse:
                args.append("NULL")
                continue
            spec = out_spec if p.canonical == ATTENTION_OUT else lse_spec
            plan = output_plan(p.canonical, spec.shape, spec.dtype)
            device_tensor(p.name, plan, write=False)
            release.append(f"    aclDestroyTensor({p.name});")
            outs.append((p.name, plan, p.canonical))
            args.append(p.name)
        elif p.ctype == TENSOR:
            if value is None:
                args.append("NULL")
                continue
            device_tensor(p.name, plan_tensor(p.canonical, value, view.paged), write=True)
            release.append(f"    aclDestroyTensor({p.name});")
            args.append(p.name)
        elif p.ctype == TENSOR_LIST:
            if value is None:
                args.append("NULL")
                continue
            items = value if isinstance(value, (list, tuple)) else [value]
            members = []
            for i, v in enumerate(items):
                var = f"{p.name}{i}"
                device_tensor(var, plan_tensor(p.canonical, v, view.paged), write=True)
                members.append(var)
            decls.append(f"    aclTensorList *{p.name}List = NULL;")
            body.append(f"    aclTensor *{p.name}Tensors[] = {{{', '.join(members)}}};")
            body.append(f"    {p.name}List = aclCreateTensorList("
                        f"(const aclTensor *const *){p.name}Tensors, {len(members)});")
            body.append(f"    CHECK_RET({p.name}List != NULL, LOG_PRINT(\"aclCreateTensorList"
                        f"({p.name}) failed\\n\"); return 2);")
            release.append(f"    aclDestroyTensorList({p.name}List);  /* and its tensors */")
            args.append(f"{p.name}List")
        elif p.ctype == INT_ARRAY:
            if value is None:
                args.append("NULL")
                continue
            ints = int_array(p.canonical, value)
            decls.append(f"    aclIntArray *{p.name} = NULL;")
            body.append(f"    static const int64_t {p.name}Data[] = {_ints(ints)};")
            body.append(f"    {p.name} = aclCreateIntArray({p.name}Data, {len(ints)});")
            release.append(f"    aclDestroyIntArray({p.name});")
            args.append(p.name)
        elif p.ctype == INT64:
            body.append(f"    int64_t {p.name} = {int(view.attrs[p.canonical])};")
            args.append(p.name)
        elif p.ctype == DOUBLE:
            body.append(f"    double {p.name} = {float(view.attrs[p.canonical])!r};")
            args.append(p.name)
        elif p.ctype == STRING:
            body.append(f"    char {p.name}[] = {json.dumps(str(view.attrs[p.canonical]))};")
            args.append(p.name)
        elif p.ctype == BOOL:
            body.append(f"    bool {p.name} = {'true' if view.attrs[p.canonical] else 'false'};")
            args.append(p.name)
        elif p.ctype == WORKSPACE_SIZE:
            args.append("&workspaceSize")
        elif p.ctype == EXECUTOR:
            args.append("&executor")

    compares: list[str] = []
    for var, plan, canonical in outs:
        n = int(np.prod(plan.shape))
        has = golden is not None and f"{canonical}_fp64" in golden \
            and f"{canonical}_device" in golden
        if has:
            assert golden is not None
            for kind in ("fp64", "device"):
                _write_sparse(data_dir / f"golden_{canonical}_{kind}.bin",
                              np.ascontiguousarray(golden[f"{canonical}_{kind}"], np.float64))
        compares += [
            f"    {{ size_t bytes = {plan.nbytes}; void *host = malloc(bytes ? bytes : 1);",
            f"      ret = bytes ? aclrtMemcpy(host, bytes, {var}DeviceAddr, bytes, "
            "ACL_MEMCPY_DEVICE_TO_HOST) : ACL_SUCCESS;",
            "      CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT(\"copy result from device to host "
            "failed. ERROR: %d\\n\", ret); free(host); return 2);",
            f"      WriteFile(\"{DATA}/out_{canonical}.bin\", host, bytes);",
            (f"      fails |= Compare(\"{canonical}\", host, {_ENUM[plan.dtype]}, {n}, "
             f"\"{DATA}/golden_{canonical}_fp64.bin\", \"{DATA}/golden_{canonical}_device.bin\");"
             if has else
             f"      LOG_PRINT(\"{canonical}: no stored golden; written to "
             f"{DATA}/out_{canonical}.bin\\n\");"),
            "      free(host); }",
        ]
    about = json.dumps({"case_id": case.case_id, "runner": runner}, sort_keys=True)
    header = iface.header
    text = _TEMPLATE
    for key, val in (("@ABOUT@", about), ("@HEADER@", header), ("@DOC@", iface.document),
                     ("@BUILD@", BUILD), ("@DECLS@", "\n".join(decls)),
                     ("@BODY@", "\n".join(body)),
                     ("@GETWS@", iface.workspace_symbol), ("@OP@", iface.symbol),
                     ("@ARGS@", ",\n        ".join(args)),
                     ("@COMPARE@", "\n".join(compares)),
                     ("@RELEASE@", "\n".join(reversed(release)))):
        text = text.replace(key, val)
    return text


def write_repro_aclnn(bundle: Path, case: Case, runner: str,
                      golden: dict[str, np.ndarray] | None,
                      call: dict[str, Any] | None = None) -> None:
    """repro_aclnn.c and its aclnn/ data into `bundle`, when `runner` is an aclnn runner."""
    if not is_aclnn(runner):
        return
    data = bundle / DATA
    data.mkdir(exist_ok=True)
    call = case.call() if call is None else call
    try:
        text = program(case, runner, call, data, golden)
    except ValueError as exc:  # an argument the C interface cannot hold (int arrays)
        text = f"/* {case.case_id} cannot be expressed on {runner}: {exc} */\n" \
               "int main(void) { return 2; }\n"
    (bundle / SOURCE).write_text(text)


_TEMPLATE = r'''/*
 * repro_aclnn.c: @ABOUT@
 * on @DOC@.
 * Generated by fia-fuzz; needs only CANN. On a machine with CANN and an NPU:
 *   source /usr/local/Ascend/ascend-toolkit/set_env.sh
 *   @BUILD@
 *   ./repro_aclnn      (from this directory: it reads the raw files under aclnn/)
 * Exit status: 0 pass, 1 fail (against the stored golden), 2 a CANN call failed,
 * 3 an input file is missing.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"
#include "@HEADER@"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

static const double FAIL_RATIO = 2.0;    /* as repro_npu.py */
static const double RATIO_FLOOR = 1e-6;

static int ReadFile(const char *path, void *dst, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        LOG_PRINT("cannot open %s\n", path);
        return 3;
    }
    size_t got = fread(dst, 1, size, f);
    fclose(f);
    if (got != size) {
        LOG_PRINT("%s: %zu bytes, expected %zu\n", path, got, size);
        return 3;
    }
    return 0;
}

static void WriteFile(const char *path, const void *src, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        fwrite(src, 1, size, f);
        fclose(f);
    }
}

int Init(int32_t deviceId, aclrtStream *stream)
{
    /* 固定写法，AscendCL初始化 */
    int ret = aclInit(NULL);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret);
              return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret);
              return ret);
    return 0;
}

/* The device storage of one tensor from `file` (NULL: an output, left as allocated), then the
   aclTensor with the case's shape, strides, offset, format and dtype. */
int CreateAclTensor(const char *file, const int64_t *shape, uint64_t ndim,
                    const int64_t *strides, int64_t offset, aclFormat format, aclDataType dataType,
                    const int64_t *storage, uint64_t nstorage, size_t nbytes,
                    void **deviceAddr, aclTensor **tensor)
{
    int ret = ACL_SUCCESS;
    if (nbytes > 0) {
        ret = aclrtMalloc(deviceAddr, nbytes, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret);
                  return ret);
        if (file != NULL) {
            void *host = malloc(nbytes);
            CHECK_RET(host != NULL, LOG_PRINT("out of host memory\n"); return 3);
            ret = ReadFile(file, host, nbytes);
            if (ret == 0) {
                ret = aclrtMemcpy(*deviceAddr, nbytes, host, nbytes, ACL_MEMCPY_HOST_TO_DEVICE);
            }
            free(host);
            CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("loading %s failed. ERROR: %d\n", file, ret);
                      return ret);
        }
    }
    *tensor = aclCreateTensor(shape, ndim, dataType, strides, offset, format, storage, nstorage,
                              *deviceAddr);
    CHECK_RET(*tensor != NULL, LOG_PRINT("aclCreateTensor failed\n"); return 2);
    return 0;
}

static double HalfToDouble(uint16_t h)
{
    int exp = (h >> 10) & 0x1F;
    int man = h & 0x3FF;
    double v;
    if (exp == 0) {
        v = ldexp((double)man, -24);
    } else if (exp == 31) {
        v = man ? NAN : INFINITY;
    } else {
        v = ldexp((double)(man | 0x400), exp - 25);
    }
    return (h & 0x8000) ? -v : v;
}

static double Element(const void *data, aclDataType dtype, size_t i)
{
    switch (dtype) {
    case ACL_FLOAT16: return HalfToDouble(((const uint16_t *)data)[i]);
    case ACL_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case ACL_FLOAT: return ((const float *)data)[i];
    case ACL_INT8: return ((const int8_t *)data)[i];
    default: return NAN;
    }
}

/* 1 when `got` fails against the stored goldens: max error over the ideal's finite elements
   above FAIL_RATIO x the same-precision golden's own, a non-finite value where the ideal is
   finite, or an inf/NaN element that differs. */
int Compare(const char *name, const void *got, aclDataType dtype, size_t n,
                   const char *idealFile, const char *deviceFile)
{
    double *ideal = (double *)malloc((n ? n : 1) * sizeof(double));
    double *golden = (double *)malloc((n ? n : 1) * sizeof(double));
    if (ideal == NULL || golden == NULL || ReadFile(idealFile, ideal, n * sizeof(double)) ||
        ReadFile(deviceFile, golden, n * sizeof(double))) {
        free(ideal);
        free(golden);
        LOG_PRINT("%s: no stored golden to compare with\n", name);
        return 0;
    }
    double worst = 0.0, base = 0.0, worstGot = 0.0, worstIdeal = 0.0;
    size_t worstAt = 0, bad = 0, mismatch = 0, finite = 0;
    for (size_t i = 0; i < n; i++) {
        double g = Element(got, dtype, i);
        if (!isfinite(ideal[i])) {
            mismatch += !(g == ideal[i]);
            continue;
        }
        finite++;
        bad += !isfinite(g);
        double err = isnan(g) ? INFINITY : fabs(g - ideal[i]);
        if (err > worst || (i == 0 && finite == 1)) {
            worst = err;
            worstAt = i;
            worstGot = g;
            worstIdeal = ideal[i];
        }
        double own = fabs(golden[i] - ideal[i]);
        if (own > base) {
            base = own;
        }
    }
    free(ideal);
    free(golden);
    if (finite == 0) {
        LOG_PRINT("%s: golden has no finite element; %zu differ\n", name, mismatch);
        return mismatch > 0;
    }
    double ratio = worst / (base > RATIO_FLOOR ? base : RATIO_FLOOR);
    int fails = bad > 0 || mismatch > 0 || ratio > FAIL_RATIO;
    LOG_PRINT("%s: max abs error %.6g at flat index %zu (got %.8g, ideal %.8g); golden's own %.6g; "
              "ratio %.3g (fails above %g); non-finite where the golden is finite: %zu; "
              "invalid-row/inf mismatches: %zu -> %s\n", name, worst, worstAt, worstGot,
              worstIdeal, base, ratio, FAIL_RATIO, bad, mismatch, fails ? "FAIL" : "ok");
    return fails;
}

int main(void)
{
    /* 1. （固定写法）device/stream初始化 */
    int32_t deviceId = 0;
    aclrtStream stream = NULL;
    int ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return 2);

    /* 2. 构造输入与输出 (the case's tensors, lengths and attributes) */
@DECLS@
@BODY@

    /* 3. 调用CANN算子库API: the two phases */
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = NULL;
    ret = @GETWS@(
        @ARGS@);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("@GETWS@ failed. ERROR: %d: %s\n", ret,
              aclGetRecentErrMsg() ? aclGetRecentErrMsg() : ""); return 2);
    void *workspaceAddr = NULL;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
                  return 2);
    }
    ret = @OP@(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("@OP@ failed. ERROR: %d: %s\n", ret,
              aclGetRecentErrMsg() ? aclGetRecentErrMsg() : ""); return 2);

    /* 4. （固定写法）同步等待任务执行结束 */
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret);
              return 2);

    /* 5. 获取输出的值 and compare with the stored golden */
    int fails = 0;
@COMPARE@

    /* 6. 释放资源 */
@RELEASE@
    if (workspaceAddr != NULL) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    LOG_PRINT("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
'''
