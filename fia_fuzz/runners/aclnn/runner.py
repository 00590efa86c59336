"""The aclnn runners: the op's C interfaces called through ctypes, one call per case.

`aclnn-v2`, `aclnn-v4` and `aclnn-ifa-v4` follow the documents' example
programs step for step: aclInit and aclrtSetDevice (once per process, the
device from the isolation worker's binding), a stream, aclrtMalloc +
aclrtMemcpy host-to-device for every input, aclCreateTensor with the case's
shape, strides, offset, format and dtype, key/value as aclCreateTensorList,
the lengths as aclCreateIntArray, every attribute in the prototype's order
and type (`prototypes.py`, one table per interface), the two phases
(GetWorkspaceSize, workspace, launch), aclrtSynchronizeStream, the outputs
copied back. Everything created is destroyed on every path (an
aclTensorList owns its tensors: aclDestroyTensorList destroys them, as
torch_npu's op-plugin relies on). A non-zero status raises `AclnnError`
with the status name and aclGetRecentErrMsg, which the isolation worker
records as the case's error.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.params import ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.rules.profiles.atlas_a2 import DEVICE_MEMORY
from fia_fuzz.runners.aclnn import library
from fia_fuzz.runners.aclnn.prototypes import (
    ACL_ERROR_REPEAT_INITIALIZE,
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACLNN_STATUS,
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
from fia_fuzz.runners.base import Runner, bound_device, register

#: The variable the isolation worker sets so the bound device is the only visible one.
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"


class AclnnError(RuntimeError):
    """A CANN call returned an error status (the message names the call, status and
    aclGetRecentErrMsg)."""


# ---- what each interface cannot express ------------------------------------------------

_SEED = {"aclnn-v2": "seed 000", "aclnn-v4": "seed 001", "aclnn-ifa-v4": "seed 002"}
#: Canonical arguments an interface has no parameter for but may drop, with why.
IGNORED: dict[str, dict[str, str]] = {
    "aclnn-ifa-v4": {
        "actual_seq_lengths": "query lengths are ignored for Q_S=1 (seed 000 actualSeqLengths)",
        "pre_tokens": "Q_S为1时该参数无效 (seed 000 preTokens)",
        "next_tokens": "Q_S为1时该参数无效 (seed 000 nextTokens)",
        "sparse_mode": "Q_S为1时该参数无效 (seed 000 sparseMode)",
    },
}
_LAYOUTS = {"aclnn-v2": ("BSH", "BSND", "BNSD", "BNSD_BSND"),
            "aclnn-ifa-v4": ("BSH", "BSND", "BNSD")}


def refusal(runner: str, view: CallView) -> str | None:
    """Why interface `runner` cannot take this call, or None."""
    iface = INTERFACES[runner]
    where = f"{iface.symbol} ({_SEED[runner]})"
    carried = {p.canonical for p in iface.params}
    ignored = IGNORED.get(runner, {})
    for name in (*TENSOR_ARGS, *VALUE_ARGS):
        if view.has(name) and name not in carried and name not in ignored:
            return f"{where} has no parameter for {name}"
    for name, default in ATTR_DEFAULTS.items():
        if name not in carried and name not in ignored and view.attrs[name] != default:
            return f"{where} has no parameter for {name} (= {view.attrs[name]!r})"
    layout = view.attrs["input_layout"]
    if runner in _LAYOUTS and layout not in _LAYOUTS[runner]:
        return f"{where}: inputLayout {layout!r} is not one of {_LAYOUTS[runner]}"
    if runner != "aclnn-v4" and view.paged and view.nz:
        return f"{where}: 5-D (NZ) paged KV caches are a V4 form (seed 001)"
    if runner == "aclnn-v2":
        modes = (view.attrs["key_antiquant_mode"], view.attrs["value_antiquant_mode"])
        if any(m not in range(6) for m in modes):
            return f"{where}: key/valueAntiquantMode {modes} outside 0..5"
    if runner == "aclnn-ifa-v4":
        if view.packed or view.S1 != 1:
            return f"{where}: decode only, query S must be 1 (仅支持query的S轴等于1)"
        if view.need("query").dtype not in ("float16", "bfloat16"):
            return f"{where}: query dtype {view.need('query').dtype} (FLOAT16/BFLOAT16 only)"
        kv = view.need("key").dtype
        if kv not in ("float16", "bfloat16", "int8"):
            return f"{where}: key/value dtype {kv} (FLOAT16/BFLOAT16/INT8 only)"
        if view.attrs["inner_precise"] not in (0, 1):
            return f"{where}: innerPrecise {view.attrs['inner_precise']} (0 or 1 only)"
    return None


# ---- one call ------------------------------------------------------------------------------

class _Session:
    """Everything one call creates, released in reverse on every path."""

    def __init__(self, cann: library.Cann, runner: str):
        self.cann, self.runner = cann, runner
        self.stream = ctypes.c_void_p()
        self.device_ptrs: list[ctypes.c_void_p] = []
        self.tensors: list[ctypes.c_void_p] = []  # owned alone (not in a list)
        self.lists: list[ctypes.c_void_p] = []
        self.arrays: list[ctypes.c_void_p] = []
        self.executor = ctypes.c_void_p()
        self.executor_pending = False
        self._keep: list[Any] = []  # host buffers ctypes points into

    # -- errors
    def message(self) -> str:
        raw = self.cann.aclGetRecentErrMsg()
        return raw.decode(errors="replace").strip() if raw else "(no aclGetRecentErrMsg)"

    def check(self, status: int, what: str) -> None:
        if status != 0:
            name = ACLNN_STATUS.get(int(status), "error")
            raise AclnnError(f"{self.runner}: {what} returned {int(status)} ({name}): "
                             f"{self.message()}")

    # -- resources
    def open(self) -> None:
        self.check(self.cann.aclrtCreateStream(ctypes.byref(self.stream)), "aclrtCreateStream")

    def malloc(self, nbytes: int) -> ctypes.c_void_p:
        ptr = ctypes.c_void_p()
        self.check(self.cann.aclrtMalloc(ctypes.byref(ptr), nbytes, ACL_MEM_MALLOC_HUGE_FIRST),
                   f"aclrtMalloc({nbytes})")
        self.device_ptrs.append(ptr)
        return ptr

    def tensor(self, plan: TensorPlan, copy: bool = True, owned: bool = True
               ) -> ctypes.c_void_p:
        data = ctypes.c_void_p()
        if plan.nbytes:
            data = self.malloc(plan.nbytes)
            if copy:
                host = plan.storage.ctypes.data_as(ctypes.c_void_p)
                self.check(self.cann.aclrtMemcpy(data, plan.nbytes, host, plan.nbytes,
                                                 ACL_MEMCPY_HOST_TO_DEVICE),
                           f"aclrtMemcpy({plan.name}, host to device)")
        plan.device = data
        dims = _i64(plan.shape)
        strides = _i64(plan.strides)
        storage = _i64(plan.storage_shape)
        self._keep += [dims, strides, storage]
        handle = self.cann.aclCreateTensor(dims, len(plan.shape), plan.dtype, strides,
                                           plan.offset, plan.format, storage,
                                           len(plan.storage_shape), data)
        if not handle:
            raise AclnnError(f"{self.runner}: aclCreateTensor({plan.name}) returned NULL: "
                             f"{self.message()}")
        ptr = ctypes.c_void_p(handle)
        if owned:
            self.tensors.append(ptr)
        return ptr

    def tensor_list(self, plans: list[TensorPlan]) -> ctypes.c_void_p:
        members = [self.tensor(p, owned=False) for p in plans]
        arr = (ctypes.c_void_p * len(members))(*[m.value for m in members])
        self._keep.append(arr)
        handle = self.cann.aclCreateTensorList(arr, len(members))
        if not handle:
            self.tensors += members  # not owned by a list: destroy them one by one
            raise AclnnError(f"{self.runner}: aclCreateTensorList({plans[0].name}) returned "
                             f"NULL: {self.message()}")
        ptr = ctypes.c_void_p(handle)
        self.lists.append(ptr)
        return ptr

    def int_array(self, name: str, values: np.ndarray) -> ctypes.c_void_p:
        buf = _i64(tuple(int(v) for v in values))
        self._keep.append(buf)
        handle = self.cann.aclCreateIntArray(buf, len(values))
        if not handle:
            raise AclnnError(f"{self.runner}: aclCreateIntArray({name}) returned NULL: "
                             f"{self.message()}")
        ptr = ctypes.c_void_p(handle)
        self.arrays.append(ptr)
        return ptr

    def copy_back(self, plan: TensorPlan) -> None:
        if plan.nbytes:
            host = plan.storage.ctypes.data_as(ctypes.c_void_p)
            self.check(self.cann.aclrtMemcpy(host, plan.nbytes, plan.device, plan.nbytes,
                                             ACL_MEMCPY_DEVICE_TO_HOST),
                       f"aclrtMemcpy({plan.name}, device to host)")

    def close(self) -> None:
        """Destroy and free everything, keeping the first failure's message (if any)."""
        cann = self.cann
        if self.executor_pending and self.executor.value:
            destroy = cann.fns.get("aclDestroyAclOpExecutor")
            if destroy is not None:
                destroy(self.executor)
        for t in self.tensors:
            cann.aclDestroyTensor(t)
        for lst in self.lists:
            cann.aclDestroyTensorList(lst)
        for a in self.arrays:
            cann.aclDestroyIntArray(a)
        for p in self.device_ptrs:
            cann.aclrtFree(p)
        if self.stream.value:
            cann.aclrtDestroyStream(self.stream)
        self.tensors, self.lists, self.arrays, self.device_ptrs = [], [], [], []
        self._keep = []


def _i64(values: tuple[int, ...]) -> Any:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def _numpy(plan: TensorPlan, dtype: str) -> np.ndarray:
    npdt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    return plan.storage.view(npdt).reshape(plan.shape).copy()


class AclnnRunner(Runner):
    """One aclnn interface of the op (see `prototypes.INTERFACES`)."""

    device_memory = DEVICE_MEMORY

    def __init__(self, device_index: int = 0):
        self.device_index = device_index

    @property
    def interface(self) -> Interface:
        return INTERFACES[self.name]

    def _cann(self) -> library.Cann:
        cann = library.load()
        cann.bind(self.interface)
        return cann

    def available(self) -> tuple[bool, str]:
        try:
            cann = self._cann()
        except library.LibraryMissing as exc:
            return False, f"{self.name}: {exc}"
        count_fn = cann.fns.get("aclrtGetDeviceCount")
        if count_fn is not None:  # aclInit only: no device is set in the asking process
            try:
                self._init_acl(cann)
            except AclnnError as exc:
                return False, str(exc)
            count = ctypes.c_uint32()
            if count_fn(ctypes.byref(count)) != 0 or count.value == 0:
                return False, f"{self.name}: the CANN libraries load but see no NPU device"
        return True, ""

    def device_id(self) -> int:
        """The device to aclrtSetDevice: 0 when the isolation worker made its bound device the
        only visible one, the bound index when it did not, else this runner's index."""
        bound = bound_device()
        if bound:
            return 0 if os.environ.get(VISIBLE_ENV) == bound else int(bound)
        return self.device_index

    def _init_acl(self, cann: library.Cann) -> None:
        if not cann.initialised:
            status = cann.aclInit(None)
            if status not in (0, ACL_ERROR_REPEAT_INITIALIZE):
                raise AclnnError(f"{self.name}: aclInit returned {status}")
            cann.initialised = True

    def _init(self, cann: library.Cann) -> None:
        """aclInit once per process, aclrtSetDevice once per device (the documents' Init)."""
        self._init_acl(cann)
        device = self.device_id()
        if cann.device != device:
            status = cann.aclrtSetDevice(device)
            if status != 0:
                raise AclnnError(f"{self.name}: aclrtSetDevice({device}) returned {status}")
            cann.device = device

    def supports(self, case: Case) -> tuple[bool, str]:
        why = refusal(self.name, case.view())
        return (False, why) if why else (True, "")

    def metadata(self) -> dict[str, str]:
        meta = {"runner": self.name, "api": self.interface.symbol,
                "document": self.interface.document, "bound_device": bound_device(),
                "device": f"npu:{self.device_id()}"}
        try:
            cann = library.load()
            meta["libraries"] = ", ".join(str(p) for p in cann.paths.values())
        except library.LibraryMissing as exc:
            meta["libraries"] = str(exc)
        return meta

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        try:
            cann = self._cann()
        except library.LibraryMissing as exc:
            raise AclnnError(f"{self.name}: {exc}") from None
        self._init(cann)
        getws, launch = cann.bind(self.interface)
        view = CallView(call)
        out_spec, lse_spec = output_specs(view)
        want_lse = self.interface.returns_lse and bool(view.attrs["softmax_lse_flag"])
        session = _Session(cann, self.name)
        try:
            session.open()
            args, outs = self._arguments(session, call, view, out_spec, lse_spec, want_lse)
            ws_size = ctypes.c_uint64(0)
            args = [ctypes.byref(ws_size) if a is _WS else
                    ctypes.byref(session.executor) if a is _EXEC else a for a in args]
            session.check(getws(*args), self.interface.workspace_symbol)
            session.executor_pending = True
            workspace = session.malloc(ws_size.value) if ws_size.value else ctypes.c_void_p()
            session.executor_pending = False  # the launch takes the executor over
            session.check(launch(workspace, ws_size.value, session.executor, session.stream),
                          self.interface.symbol)
            session.check(cann.aclrtSynchronizeStream(session.stream), "aclrtSynchronizeStream")
            for plan, _ in outs:
                session.copy_back(plan)
        finally:
            session.close()
        out = _numpy(outs[0][0], out_spec.dtype)
        lse = _numpy(outs[1][0], "float32") if want_lse else np.zeros((0,), np.float32)
        return out, lse

    def _arguments(self, session: _Session, call: dict[str, Any], view: CallView,
                   out_spec: Any, lse_spec: Any, want_lse: bool
                   ) -> tuple[list[Any], list[tuple[TensorPlan, ctypes.c_void_p]]]:
        """The GetWorkspaceSize arguments in prototype order, built from the table."""
        paged = view.paged
        args: list[Any] = []
        outs: list[tuple[TensorPlan, ctypes.c_void_p]] = []
        for p in self.interface.params:
            value = call.get(p.canonical)
            if p.ctype == TENSOR and p.canonical == ATTENTION_OUT:
                plan = output_plan(p.canonical, out_spec.shape, out_spec.dtype)
                ptr = session.tensor(plan, copy=False)
                outs.append((plan, ptr))
                args.append(ptr)
            elif p.ctype == TENSOR and p.canonical == SOFTMAX_LSE:
                if want_lse:
                    plan = output_plan(p.canonical, lse_spec.shape, "float32")
                    ptr = session.tensor(plan, copy=False)
                    outs.append((plan, ptr))
                    args.append(ptr)
                else:
                    args.append(None)
            elif p.ctype == TENSOR:
                args.append(None if value is None
                            else session.tensor(plan_tensor(p.canonical, value, paged)))
            elif p.ctype == TENSOR_LIST:
                items = value if isinstance(value, (list, tuple)) else [value]
                args.append(None if value is None else session.tensor_list(
                    [plan_tensor(p.canonical, v, paged) for v in items]))
            elif p.ctype == INT_ARRAY:
                args.append(None if value is None
                            else session.int_array(p.canonical, int_array(p.canonical, value)))
            elif p.ctype == INT64:
                args.append(int(view.attrs[p.canonical]))
            elif p.ctype == DOUBLE:
                args.append(float(view.attrs[p.canonical]))
            elif p.ctype == STRING:
                args.append(str(view.attrs[p.canonical]).encode())
            elif p.ctype == BOOL:
                args.append(bool(view.attrs[p.canonical]))
            elif p.ctype == WORKSPACE_SIZE:
                args.append(_WS)
            elif p.ctype == EXECUTOR:
                args.append(_EXEC)
            else:  # pragma: no cover - the table admits only C_TYPES
                raise AssertionError(p)
        return args, outs


_WS = object()
_EXEC = object()


@register("aclnn-v2")
class AclnnV2Runner(AclnnRunner):
    name = "aclnn-v2"


@register("aclnn-v4")
class AclnnV4Runner(AclnnRunner):
    name = "aclnn-v4"


@register("aclnn-ifa-v4")
class AclnnIfaV4Runner(AclnnRunner):
    name = "aclnn-ifa-v4"
