"""Finding and binding CANN's C libraries with ctypes, the way CANN's set_env.sh exposes them.

`source /usr/local/Ascend/ascend-toolkit/set_env.sh` sets ASCEND_HOME_PATH
(the toolkit, `.../ascend-toolkit/latest`) and puts `$ASCEND_HOME_PATH/lib64`
on LD_LIBRARY_PATH. The libraries the documents' example programs link
(编译与运行样例: `ascendcl`, `nnopbase`, `opapi`) live there:

- libascendcl.so: aclInit, aclrt* (device, stream, memory), aclGetRecentErrMsg
- libnnopbase.so: aclCreateTensor / TensorList / IntArray and their destroyers
  (older CANN exports them from libopapi.so; each symbol is taken from the first
  library that has it)
- libopapi.so: the aclnn operators (`aclnn...GetWorkspaceSize` and the launch)

Nothing here is searched for by bare name: only the directories those
variables name, so what a runner finds is what the environment says.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fia_fuzz.runners.aclnn.prototypes import (
    BOOL,
    DOUBLE,
    EXECUTOR,
    INT64,
    INT_ARRAY,
    STRING,
    TENSOR,
    TENSOR_LIST,
    WORKSPACE_SIZE,
    Interface,
)

#: The environment variables searched, in order (each a directory or a path list).
HOME_ENV = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
PATH_ENV = "LD_LIBRARY_PATH"
#: (file, required): loaded in this order, each RTLD_GLOBAL so later ones resolve against it.
LIBRARIES: tuple[tuple[str, bool], ...] = (
    ("libascendcl.so", True),
    ("libnnopbase.so", False),
    ("libopapi.so", True),
)

_p = ctypes.c_void_p
_i64p = ctypes.POINTER(ctypes.c_int64)
#: The runtime and tensor-creation functions: name -> (restype, argtypes).
RUNTIME: dict[str, tuple[Any, list[Any]]] = {
    "aclInit": (ctypes.c_int, [ctypes.c_char_p]),
    "aclrtSetDevice": (ctypes.c_int, [ctypes.c_int32]),
    "aclrtCreateStream": (ctypes.c_int, [ctypes.POINTER(_p)]),
    "aclrtDestroyStream": (ctypes.c_int, [_p]),
    "aclrtMalloc": (ctypes.c_int, [ctypes.POINTER(_p), ctypes.c_size_t, ctypes.c_int]),
    "aclrtFree": (ctypes.c_int, [_p]),
    "aclrtMemcpy": (ctypes.c_int, [_p, ctypes.c_size_t, _p, ctypes.c_size_t, ctypes.c_int]),
    "aclrtSynchronizeStream": (ctypes.c_int, [_p]),
    "aclGetRecentErrMsg": (ctypes.c_char_p, []),
    "aclCreateTensor": (_p, [_i64p, ctypes.c_uint64, ctypes.c_int, _i64p, ctypes.c_int64,
                             ctypes.c_int, _i64p, ctypes.c_uint64, _p]),
    "aclDestroyTensor": (ctypes.c_int, [_p]),
    "aclCreateTensorList": (_p, [ctypes.POINTER(_p), ctypes.c_uint64]),
    "aclDestroyTensorList": (ctypes.c_int, [_p]),
    "aclCreateIntArray": (_p, [_i64p, ctypes.c_uint64]),
    "aclDestroyIntArray": (ctypes.c_int, [_p]),
}
#: Used when present: the device count (available()), and freeing an executor that was
#: never launched (a failed workspace allocation).
OPTIONAL: dict[str, tuple[Any, list[Any]]] = {
    "aclrtGetDeviceCount": (ctypes.c_int, [ctypes.POINTER(ctypes.c_uint32)]),
    "aclDestroyAclOpExecutor": (ctypes.c_int, [_p]),
}
#: ctypes type of each prototype parameter type.
CTYPE_OF: dict[str, Any] = {
    TENSOR: _p, TENSOR_LIST: _p, INT_ARRAY: _p, INT64: ctypes.c_int64,
    DOUBLE: ctypes.c_double, STRING: ctypes.c_char_p, BOOL: ctypes.c_bool,
    WORKSPACE_SIZE: ctypes.POINTER(ctypes.c_uint64), EXECUTOR: ctypes.POINTER(_p),
}


class LibraryMissing(RuntimeError):
    """A CANN library or symbol is not where the environment says."""


def search_dirs() -> list[Path]:
    """$ASCEND_HOME_PATH/lib64 (and lib), $ASCEND_TOOLKIT_HOME/lib64, then LD_LIBRARY_PATH."""
    dirs: list[Path] = []
    for var in HOME_ENV:
        home = os.environ.get(var)
        if home:
            dirs += [Path(home) / "lib64", Path(home) / "lib"]
    dirs += [Path(d) for d in os.environ.get(PATH_ENV, "").split(os.pathsep) if d]
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def searched() -> str:
    """The variables searched and their values, for a reason string."""
    parts = [f"{v}={os.environ.get(v, '')!r}" if os.environ.get(v) else f"{v} unset"
             for v in (*HOME_ENV, PATH_ENV)]
    return "searched " + ", ".join(parts) + \
        " (source /usr/local/Ascend/ascend-toolkit/set_env.sh sets them)"


def find(filename: str) -> Path | None:
    for d in search_dirs():
        p = d / filename
        if p.is_file():
            return p
    return None


@dataclass
class Cann:
    """The loaded libraries and bound functions (one per set of library paths, per process)."""

    paths: dict[str, Path]
    libs: list[ctypes.CDLL]
    fns: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    initialised: bool = False
    device: int | None = None

    def symbol(self, name: str, restype: Any, argtypes: list[Any], required: bool = True
               ) -> Any:
        if name in self.fns:
            return self.fns[name]
        for lib in self.libs:
            try:
                fn = getattr(lib, name)
            except AttributeError:
                continue
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
                self.fns[name] = fn
                self.origin[name] = Path(lib._name).name
                return fn
        if required:
            raise LibraryMissing(f"symbol {name} is exported by none of "
                                 f"{', '.join(str(p) for p in self.paths.values())}")
        return None

    def bind_runtime(self) -> None:
        for name, (res, args) in RUNTIME.items():
            self.symbol(name, res, args)
        for name, (res, args) in OPTIONAL.items():
            self.symbol(name, res, args, required=False)

    def bind(self, iface: Interface) -> tuple[Any, Any]:
        """(GetWorkspaceSize, launch) of `iface`, their signatures from its prototype table."""
        getws = self.symbol(iface.workspace_symbol, ctypes.c_int,
                            [CTYPE_OF[p.ctype] for p in iface.params])
        launch = self.symbol(iface.symbol, ctypes.c_int,
                             [_p, ctypes.c_uint64, _p, _p])
        return getws, launch

    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("fns", {})
        if name in fns:
            return fns[name]
        raise AttributeError(name)


_LOADED: dict[tuple[str, ...], Cann] = {}


def load() -> Cann:
    """The CANN libraries the environment names, loaded once (LibraryMissing says what and
    where it looked)."""
    paths: dict[str, Path] = {}
    for filename, required in LIBRARIES:
        p = find(filename)
        if p is None:
            if required:
                raise LibraryMissing(f"{filename} not found; {searched()}")
            continue
        paths[filename] = p.resolve()
    key = tuple(str(p) for p in paths.values())
    if key not in _LOADED:
        libs = []
        for filename, p in paths.items():
            try:
                libs.append(ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL))
            except OSError as exc:
                raise LibraryMissing(f"{filename} at {p} does not load: {exc}") from None
        cann = Cann(paths, libs)
        cann.bind_runtime()
        _LOADED[key] = cann
    return _LOADED[key]
