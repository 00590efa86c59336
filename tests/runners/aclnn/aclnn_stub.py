"""The stub CANN library (a test double, stub_acl.c) and the contract check against it.

`build(dest)` compiles stub_acl.c into dest/lib64/{libascendcl,libnnopbase,libopapi}.so,
the layout `$ASCEND_HOME_PATH/lib64` has on a CANN host. `Stub` points the runners at
it through ASCEND_HOME_PATH (as CANN's set_env.sh does), gives each run its own log
file, and reads the stub's live-object counters. `contract_problems(...)` compares
what reached the library with the case, from expectations written here, independently
of the runner's tables: parameter names map to canonical names by the documents'
naming (camelCase of the canonical name, `Optional` suffix, a few renames), dtypes and
formats by CANN's enum values, defaults by the documents.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.outputs import output_specs

HERE = Path(__file__).parent
SOURCE = HERE / "stub_acl.c"
INCLUDE = HERE / "include"
PARTS = (("RT", "libascendcl.so"), ("BASE", "libnnopbase.so"), ("OPAPI", "libopapi.so"))
KINDS = ("tensor", "list", "int_array", "memory", "stream", "executor")
STUB_WORKSPACE = 4096  # the stub's default workspace size

#: The stub's C functions, from stub_acl.c: name -> the launch's name.
OPS = {"aclnn-v2": "aclnnFusedInferAttentionScoreV2",
       "aclnn-v4": "aclnnFusedInferAttentionScoreV4",
       "aclnn-ifa-v4": "aclnnIncreFlashAttentionV4"}

#: aclDataType values (CANN acl_base.h).
DTYPES = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int64": 9,
          "uint64": 10, "bool": 12, "bfloat16": 27, "int4": 29}
ND, NZ = 2, 29
#: Attribute defaults the documents state (REG_OP attrs, seed 000 算子原型; the prose
#: "用户不特意指定时可传入默认值..." of seeds 000-002).
DOC_DEFAULTS: dict[str, Any] = {
    "scaleValue": 1.0, "preTokens": 2147483647, "nextTokens": 2147483647,
    "inputLayout": "BSH", "numKeyValueHeads": 0, "sparseMode": 0, "innerPrecise": 1,
    "blockSize": 0, "antiquantMode": 0, "softmaxLseFlag": False, "keyAntiquantMode": 0,
    "valueAntiquantMode": 0, "queryQuantMode": 0,
}
_RENAMES = {"pseShift": "pse_shift", "scaleValue": "scale", "deqScale1": "dequant_scale1",
            "deqScale2": "dequant_scale2", "blocktable": "block_table",
            "attentionOut": "attention_out", "softmaxLse": "softmax_lse"}
#: Call arguments an interface may leave out (the document says they are ignored there).
DROPPABLE = {"aclnn-ifa-v4": {"actual_seq_lengths", "pre_tokens", "next_tokens",
                              "sparse_mode"}}
VALUE_DTYPES = {"block_table": np.int32, "query_padding_size": np.int64,
                "kv_padding_size": np.int64}
CACHES = ("key", "value", "key_rope")


def canonical_of(doc_name: str, runner: str) -> str:
    """The call argument a documented parameter carries, by the documents' naming."""
    base = doc_name.removesuffix("Optional")
    if runner == "aclnn-ifa-v4" and base == "actualSeqLengths":
        return "actual_seq_lengths_kv"  # "表示key和value的S轴实际长度"
    if base in _RENAMES:
        return _RENAMES[base]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()


# ---- building --------------------------------------------------------------------------

def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")


def build(dest: Path) -> Path:
    """Compile the three stub libraries into dest/lib64; returns dest (an ASCEND_HOME_PATH)."""
    cc = compiler()
    if cc is None:
        raise FileNotFoundError("no C compiler")
    lib = dest / "lib64"
    lib.mkdir(parents=True, exist_ok=True)
    for part, name in PARTS:
        link = [] if part == "RT" else ["-L", str(lib), "-lascendcl", "-Wl,-rpath,$ORIGIN"]
        subprocess.run([cc, "-O1", "-Wall", "-Werror", "-shared", "-fPIC",
                        f"-DSTUB_PART_{part}", "-o", str(lib / name), str(SOURCE), *link],
                       check=True, capture_output=True, text=True)
    return dest


class Stub:
    """The compiled stub as the runners' environment, with its counters and logs."""

    def __init__(self, home: Path, logs: Path):
        self.home, self.logs = home, logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self.rt = ctypes.CDLL(str((home / "lib64" / "libascendcl.so").resolve()))
        self.rt.stubAclLive.restype = ctypes.c_int64
        self.rt.stubAclLive.argtypes = [ctypes.c_char_p]
        self.rt.stubAclAbuse.restype = ctypes.c_int64
        self._n = 0

    def env(self, monkeypatch: Any) -> None:
        monkeypatch.setenv("ASCEND_HOME_PATH", str(self.home))
        monkeypatch.delenv("STUB_ACL_FAIL", raising=False)
        monkeypatch.delenv("STUB_ACL_OUT_FILE", raising=False)
        monkeypatch.delenv("STUB_ACL_LSE_FILE", raising=False)

    def new_log(self, monkeypatch: Any) -> Path:
        self._n += 1
        path = self.logs / f"call{self._n}.jsonl"
        monkeypatch.setenv("STUB_ACL_LOG", str(path))
        return path

    def live(self) -> dict[str, int]:
        return {k: int(self.rt.stubAclLive(k.encode())) for k in KINDS}

    def abuse(self) -> int:
        return int(self.rt.stubAclAbuse())

    def reset(self) -> None:
        self.rt.stubAclReset()


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---- expectations ------------------------------------------------------------------------

def checksum(a: np.ndarray) -> str:
    """What the stub computes over a view: sum of b_k * (k * 2654435761 + 1) mod 2^64 over
    the view's bytes in row-major order (int4: one byte per element, its nibble)."""
    if a.dtype == np.dtype(ml_dtypes.int4):
        b = (np.ascontiguousarray(a).astype(np.int8).view(np.uint8) & 0xF).reshape(-1)
    else:
        b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    k = np.arange(b.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return str(int(np.sum(b.astype(np.uint64) * (k * np.uint64(2654435761) + np.uint64(1)),
                              dtype=np.uint64)))


def _root(a: np.ndarray) -> np.ndarray:
    r: Any = a
    while getattr(r, "base", None) is not None:  # through as_strided's DummyArray too
        r = r.base
    return r if isinstance(r, np.ndarray) else a


def expected_tensor(name: str, value: Any, paged: bool) -> dict[str, Any]:
    a = np.asarray(value, VALUE_DTYPES[name]) if name in VALUE_DTYPES else np.asarray(value)
    item = a.dtype.itemsize
    shape = list(a.shape)
    root = _root(a)
    if not a.flags.c_contiguous and a.size and root is not a:
        strides = [s // item for s in a.strides]
        offset = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // item
        storage = [int(root.size)]
    else:
        strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
        offset, storage = 0, shape
    fmt = NZ if paged and name in CACHES and a.ndim == 5 else ND
    dtype = str(a.dtype) if a.dtype != np.bool_ else "bool"
    return {"shape": shape, "strides": strides, "offset": offset, "format": fmt,
            "dtype": DTYPES[dtype], "storage": storage, "data": bool(a.size),
            "checksum": checksum(a), "outside": False}


def _same_strides(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Strides of size-1 dimensions (and of empty tensors) address nothing: compare the
    others."""
    if 0 in want["shape"]:
        return len(got["strides"]) == len(want["strides"])
    return all(g == w for g, w, n in zip(got["strides"], want["strides"], want["shape"],
                                         strict=False) if n > 1) \
        and len(got["strides"]) == len(want["strides"])


def _tensor_problems(where: str, got: Any, want: dict[str, Any]) -> list[str]:
    if not isinstance(got, dict):
        return [f"{where}: got {got!r}, expected a tensor"]
    out = []
    for key in ("shape", "offset", "format", "dtype", "storage", "data", "checksum",
                "outside"):
        if got.get(key) != want[key]:
            out.append(f"{where}.{key}: got {got.get(key)!r}, expected {want[key]!r}")
    if not _same_strides(got, want):
        out.append(f"{where}.strides: got {got['strides']}, expected {want['strides']}")
    return out


def _same_attr(got: Any, want: Any) -> bool:
    if isinstance(want, (bool, np.bool_)):
        return got is bool(want)
    if isinstance(want, str):
        return got == want
    if isinstance(want, (float, np.floating)):
        return isinstance(got, (int, float)) and float(got) == float(want)
    return isinstance(got, int) and not isinstance(got, bool) and got == int(want)


def _pattern(nbytes: int) -> np.ndarray:
    return ((np.arange(nbytes, dtype=np.uint64) * 31 + 7) & 0xFF).astype(np.uint8)


def contract_problems(runner: str, call: dict[str, Any], log: list[dict[str, Any]],
                      result: tuple[np.ndarray, np.ndarray] | None,
                      live: dict[str, int], abuse: int) -> list[str]:
    """Everything in what reached the stub (and came back) that disagrees with the call."""
    op = OPS[runner]
    problems: list[str] = []
    fns = [r["fn"] for r in log]
    ws_at = [i for i, f in enumerate(fns) if f == op + "GetWorkspaceSize"]
    go_at = [i for i, f in enumerate(fns) if f == op]
    if len(ws_at) != 1 or len(go_at) != 1 or go_at[0] < ws_at[0]:
        return [f"phases: expected {op}GetWorkspaceSize once, then {op} once; got {fns}"]
    ws_i, go_i = ws_at[0], go_at[0]
    sync = [i for i, f in enumerate(fns) if f == "aclrtSynchronizeStream"]
    if not sync or sync[0] < go_i:
        problems.append("aclrtSynchronizeStream does not follow the launch")
    creates = [i for i, f in enumerate(fns) if f.startswith("aclCreate")]
    if creates and max(creates) > ws_i:
        problems.append("an acl object was created after GetWorkspaceSize")
    streams = [r for r in log if r["fn"] == "aclrtCreateStream"]
    if len(streams) != 1 or fns.index("aclrtCreateStream") > min(creates, default=ws_i):
        problems.append(f"expected one stream created first, got {len(streams)}")
    launch = log[go_i]
    if streams and launch["stream"] != streams[0]["stream"]:
        problems.append("the launch ran on another stream than the one created")
    if launch["executor_alive"] != 1:
        problems.append("the launch got an executor GetWorkspaceSize did not return")
    if launch["workspaceSize"] != STUB_WORKSPACE or not launch["workspace"] or \
            launch["workspace_room"] < STUB_WORKSPACE:
        problems.append(f"workspace: {launch}")
    d2h = [i for i, r in enumerate(log) if r["fn"] == "aclrtMemcpy" and r["kind"] == 2]
    if any(i < go_i for i in d2h):
        problems.append("a device-to-host copy before the launch")
    if any(live.values()) or abuse:
        problems.append(f"leak or double release: live {live}, abuse {abuse}")

    view = CallView(call)
    out_spec, lse_spec = output_specs(view)
    args = log[ws_i]["args"]
    paged = view.paged
    used: set[str] = set()
    for doc, got in args.items():
        name = canonical_of(doc, runner)
        used.add(name)
        where = f"{op}({doc})"
        if name == "attention_out":
            want = {"shape": list(out_spec.shape), "dtype": DTYPES[out_spec.dtype],
                    "format": ND, "offset": 0}
            problems += [f"{where}.{k}: got {got.get(k)!r}, expected {v!r}"
                         for k, v in want.items() if not isinstance(got, dict) or got[k] != v]
            continue
        if name == "softmax_lse":
            if call.get("softmax_lse_flag"):
                if not isinstance(got, dict) or got["shape"] != list(lse_spec.shape) or \
                        got["dtype"] != DTYPES["float32"]:
                    problems.append(f"{where}: got {got!r}, expected float32 "
                                    f"{list(lse_spec.shape)}")
            elif got is not None:
                problems.append(f"{where}: expected NULL without softmax_lse_flag")
            continue
        value = call.get(name)
        if doc in DOC_DEFAULTS:
            want_attr = DOC_DEFAULTS[doc] if value is None else value
            if not _same_attr(got, want_attr):
                problems.append(f"{where}: got {got!r}, expected {want_attr!r}"
                                + (" (the documented default)" if value is None else ""))
            continue
        if doc == "numHeads":
            if got != int(value):
                problems.append(f"{where}: got {got!r}, expected {value!r}")
            continue
        if value is None:
            if got is not None:
                problems.append(f"{where}: expected NULL (the case has no {name})")
            continue
        if got is None:
            problems.append(f"{where}: NULL, but the case has {name}")
            continue
        if name in ("key", "value"):
            items = value if isinstance(value, list) else [value]
            if not isinstance(got, list) or len(got) != len(items):
                problems.append(f"{where}: got {got!r}, expected a list of {len(items)}")
                continue
            for i, (g, v) in enumerate(zip(got, items, strict=True)):
                problems += _tensor_problems(f"{where}[{i}]", g, expected_tensor(name, v, paged))
        elif name.startswith("actual_"):
            want_ints = [int(x) for x in np.asarray(value).reshape(-1)]
            if got != want_ints:
                problems.append(f"{where}: got {got!r}, expected {want_ints}")
        else:
            problems += _tensor_problems(where, got, expected_tensor(name, value, paged))
    dropped = [k for k, v in call.items() if v is not None and k not in used
               and k not in DROPPABLE.get(runner, set())]
    if dropped:
        problems.append(f"call arguments that reached no parameter: {dropped}")
    if result is not None:
        out, lse = result
        if out.shape != tuple(out_spec.shape) or not np.array_equal(
                np.frombuffer(np.ascontiguousarray(out).tobytes(), np.uint8),
                _pattern(out.nbytes)):
            problems.append("attention_out does not hold the bytes the launch wrote")
        if call.get("softmax_lse_flag") and runner != "aclnn-ifa-v4":
            if lse.shape != tuple(lse_spec.shape) or not np.array_equal(
                    np.frombuffer(lse.tobytes(), np.uint8), _pattern(lse.nbytes)):
                problems.append("softmax_lse does not hold the bytes the launch wrote")
        elif lse.shape != (0,):
            problems.append(f"softmax_lse without the flag: shape {lse.shape}, expected (0,)")
    return problems


def prototype_params(text: str, symbol: str) -> list[tuple[str, str]]:
    """(C type, name) of each parameter of `symbol(` in C source or a document's text."""
    start = text.index(symbol + "(")
    body = text[start + len(symbol) + 1:text.index(")", start)]
    out = []
    for raw in body.split(","):
        decl = " ".join(raw.replace("`", " ").split())
        m = re.match(r"^(.*?)([A-Za-z_]\w*)$", decl)
        assert m, decl
        ctype = re.sub(r"\s*\*", " *", m.group(1).strip()).replace("* *", "**")
        out.append((" ".join(ctype.split()), m.group(2)))
    return out
