"""msprobe dumps in: each FIA call of a model run becomes a case to repro, shrink and fuzz.

msprobe (`mindstudio-probe`, the vendor's precision tool) dumps every API call
of a PyTorch model run into `dump.json`: {"task": "statistics" | "tensor",
"framework": "pytorch", "dump_data_dir": ..., "data": {API_NAME: {"input_args":
[...], "input_kwargs": {...}, "output": [...]}}}. API names are
`<Prefix>.<api>.<call index>.<forward|backward>` (torch_npu ops under `NPU.`;
other front ends show e.g. `Functional.`). A tensor is {"type": "torch.Tensor",
"dtype": "torch.bfloat16", "shape": [...], "Max", "Min", "Mean", "Norm",
"requires_grad"}, plus "data_name" (the .pt file under dump_data_dir, or
.npy) in a tensor task; a Python value is {"type": "int", "value": 8}; lists
stay lists; an absent argument is null.

A tensor task gives the real tensors (stored with the case, op/stored.py);
a statistics task gives seeded data of the dumped dtype and shape over the
dumped [Min, Max] (the `range` recipe), and value tensors the dump cannot
restore are rebuilt legally (a block table from the KV lengths, noted).
Mean and Norm are not reproduced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.files.cases import InputError, read_json, write_case
from fia_fuzz.op import stored as stored_
from fia_fuzz.op.case import VALUE_DTYPE_KEY, VALUE_TENSOR_DTYPES, Case
from fia_fuzz.op.params import ALL_ARGS, TENSOR_ARGS, V2_TO_CANONICAL, VALUE_ARGS
from fia_fuzz.op.stored import STORED, stored_keys
from fia_fuzz.op.tensors import DTYPES, FLOAT_DTYPES, TensorSpec, dtype_name
from fia_fuzz.rules.rule import Violation
from fia_fuzz.rules.validate import validate

#: The op's torch_npu entry points and whether their keywords are v2's.
APIS = {"npu_fused_infer_attention_score": False, "npu_fused_infer_attention_score_v2": True}
#: Positional parameters of both (every other one is keyword-only).
POSITIONAL = ("query", "key", "value")
#: A model's whole dump may be large; cases are read from it, never its tensors.
MAX_DUMP_BYTES = 2 << 30
MAX_DUMP_LIST = 1 << 24
#: Sparse modes whose mask is the optimized 2048x2048 upper triangle [V4 §Mask].
OPTIMIZED_MASK_MODES = (2, 3, 4)
#: The msprobe tasks whose dumps describe calls: statistics only, or the tensors too.
TASKS = ("statistics", "tensor")
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Tensor:
    """A dumped tensor: its description, statistics and (tensor task) its file."""

    spec: TensorSpec
    stats: dict[str, Any]
    data_name: str | None


@dataclass
class Imported:
    """One FIA call of the dump: its case (None if it has no case), findings and notes."""

    api: str
    name: str
    case: Case | None = None
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None


def fia_calls(doc: dict[str, Any]) -> list[tuple[str, bool, dict[str, Any]]]:
    """(API name, v2?, entry) of every forward FIA call in a dump, in dump order."""
    found = []
    for key, entry in doc["data"].items():
        parts = str(key).split(".")
        api = next((p for p in parts if p in APIS), None)
        if api is not None and parts[-1] == "forward" and isinstance(entry, dict):
            found.append((str(key), APIS[api], entry))
    return found


def _value(node: Any, at: str) -> Any:
    """A dumped element as a Python value or a Tensor."""
    if node is None:
        return None
    if isinstance(node, list):
        return [_value(x, f"{at}[{i}]") for i, x in enumerate(node)]
    if not isinstance(node, dict) or "type" not in node:
        raise ValueError(f"{at}: not an msprobe element: {str(node)[:60]}")
    kind = str(node["type"])
    if "shape" in node and "dtype" in node:
        dtype = dtype_name(str(node["dtype"]))
        if dtype not in DTYPES:
            raise ValueError(f"{at}: dtype {node['dtype']} is not one the op takes")
        shape = node["shape"]
        if not isinstance(shape, list) or any(isinstance(d, bool) or not isinstance(d, int)
                                               or d < 0 for d in shape):
            raise ValueError(f"{at}: shape {str(shape)[:60]} is not a list of sizes")
        stats = {k: node.get(k) for k in ("Max", "Min", "Mean", "Norm")}
        return Tensor(TensorSpec(tuple(shape), dtype), stats, node.get("data_name"))
    if kind == "torch.dtype":
        return dtype_name(str(node.get("value")))
    return node.get("value")


def call_arguments(entry: dict[str, Any], v2: bool) -> dict[str, Any]:
    """The call's canonical keyword arguments (Tensors for tensors); ValueError if unreadable."""
    args = entry.get("input_args") or []
    kwargs = entry.get("input_kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ValueError("input_args / input_kwargs are not a list / an object")
    if len(args) > len(POSITIONAL):
        raise ValueError(f"{len(args)} positional arguments, the op takes {len(POSITIONAL)}")
    out = {name: _value(a, f"input_args[{i}]") for i, (name, a)
           in enumerate(zip(POSITIONAL, args, strict=False))}
    for k, v in kwargs.items():
        name = V2_TO_CANONICAL.get(k, k) if v2 else k
        val = _value(v, f"input_kwargs.{k}")
        if name not in ALL_ARGS:
            if val is not None:
                raise ValueError(f"argument {k}={str(val)[:40]} has no counterpart in the "
                                 "case model")
            continue
        out[name] = val
    return out


def _load_array(base: Path, dump_dir: str | None, name: str, spec: TensorSpec) -> np.ndarray:
    """The array of a tensor task's file (.pt through torch, .npy without pickle)."""
    candidates = [base / "dump_tensor_data" / name, base / name]
    if dump_dir:
        candidates.append(Path(dump_dir) / name)
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise FileNotFoundError(f"{name} not found under {base / 'dump_tensor_data'}")
    if path.suffix == ".npy":
        a = np.load(path, allow_pickle=False)
    else:
        import torch

        from fia_fuzz.runners.torch_convert import to_numpy

        a = to_numpy(torch.load(path, map_location="cpu", weights_only=True))
    if tuple(a.shape) != spec.shape or dtype_name(a.dtype) != spec.dtype:
        raise ValueError(f"{name} holds {dtype_name(a.dtype)}{list(a.shape)}, "
                         f"the dump says {spec}")
    return a


def _range_fill(t: Tensor, name: str, notes: list[str]) -> dict[str, Any] | None:
    """The recipe reproducing a tensor's dumped dtype and [Min, Max] (None: default; a
    Min or Max that is not a finite number, or Min > Max, is noted)."""
    lo, hi = t.stats.get("Min"), t.stats.get("Max")
    if lo is None and hi is None:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)
               for x in (lo, hi)) or lo > hi:
        notes.append(f"{name}: dumped Min {lo!r} / Max {hi!r} is no finite range; seeded "
                     "with the default fill instead")
        return None
    if t.spec.dtype in FLOAT_DTYPES:
        return {"dist": "range", "low": float(lo), "high": float(hi)}
    if t.spec.dtype in ("int8", "int4", "uint8", "int32"):
        return {"dist": "int", "low": int(lo), "high": int(hi)}
    return None


def _merged(ts: list[Tensor]) -> Tensor:
    """One Tensor whose [Min, Max] covers every tensor of a list (key/value lists)."""
    if len(ts) == 1:
        return ts[0]
    try:
        stats = {"Min": min(t.stats["Min"] for t in ts), "Max": max(t.stats["Max"] for t in ts)}
    except (TypeError, KeyError):
        stats = {}
    return Tensor(ts[0].spec, stats, None)


def _mask_fill(t: Tensor, sparse_mode: int) -> dict[str, Any] | None:
    """A mask's recipe: the optimized triangle for modes 2-4, constant when Min == Max."""
    if sparse_mode in OPTIMIZED_MASK_MODES:
        return {"dist": "triu", "k": 1}
    lo, hi = t.stats.get("Min"), t.stats.get("Max")
    if lo is not None and lo == hi:
        return {"dist": "ones" if bool(hi) else "zeros"}
    return None


def _block_table(t: Tensor, call: dict[str, Any], notes: list[str]) -> list[list[int]]:
    """A legal block table of the dumped shape: each request's blocks in order, the rest
    stale (-1 when the dump's Min is negative, else 0)."""
    rows, width = t.spec.shape
    bs, lens = call.get("block_size"), call.get("actual_seq_lengths_kv")
    if bs is None or not lens:
        missing = "block_size" if bs is None else "actual_seq_lengths_kv"
        raise ValueError(f"block_table has no values in a statistics dump and {missing} is "
                         "missing to rebuild it")
    if isinstance(bs, bool) or not isinstance(bs, int) or bs <= 0:
        raise ValueError(f"block_table cannot be rebuilt: block_size is {bs!r}, not a "
                         "positive int")
    if not isinstance(lens, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                         or x < 0 for x in lens):
        raise ValueError(f"block_table cannot be rebuilt: actual_seq_lengths_kv "
                         f"{str(lens)[:60]} is not a list of non-negative ints")
    lens = list(lens) * rows if len(lens) == 1 else list(lens)
    needs = [-(-int(lens[b]) // bs) if b < len(lens) else 0 for b in range(rows)]
    for b, need in enumerate(needs):
        if need > width:
            raise ValueError(f"block_table cannot be rebuilt: actual_seq_lengths_kv[{b}]="
                             f"{lens[b]} needs {need} blocks of {bs}, the dumped table is "
                             f"{width} wide")
    stale = -1 if (t.stats.get("Min") or 0) < 0 else 0
    table, nxt = [], 0
    for need in needs:
        table.append(list(range(nxt, nxt + need)) + [stale] * (width - need))
        nxt += need
    notes.append(f"block_table rebuilt from actual_seq_lengths_kv and block_size {bs} "
                 f"(blocks 0..{nxt - 1} in order; a statistics dump has no table values)")
    return table


def _value_arg(name: str, t: Tensor, call: dict[str, Any], notes: list[str]) -> Any:
    """A value argument dumped as a tensor without its data (statistics task)."""
    if name == "block_table" and t.spec.ndim == 2:
        return _block_table(t, call, notes)
    lo, hi = t.stats.get("Min"), t.stats.get("Max")
    if lo is not None and lo == hi:
        notes.append(f"{name} rebuilt as {t.spec.numel} x {hi} (its Min equals its Max)")
        return [int(hi)] * t.spec.numel
    raise ValueError(f"{name} is a tensor whose values a statistics dump does not keep")


def build_case(key: str, v2: bool, entry: dict[str, Any], base: Path,
               dump_dir: str | None, task: str = "statistics") -> Imported:
    """The Imported of one dumped call (a problem instead of a case when it has none)."""
    name = _NAME.sub("_", key.removesuffix(".forward"))
    imp = Imported(api=key, name=name)
    try:
        raw = call_arguments(entry, v2)
        params: dict[str, Any] = {}
        fills: dict[str, dict[str, Any]] = {}
        arrays: dict[str, np.ndarray] = {}
        for arg, val in raw.items():
            if arg in TENSOR_ARGS and val is not None:
                ts = val if isinstance(val, list) else [val]
                if not all(isinstance(t, Tensor) for t in ts):
                    raise ValueError(f"{arg} is not a tensor or a list of tensors")
                params[arg] = [t.spec for t in ts] if isinstance(val, list) else ts[0].spec
        for arg, val in raw.items():
            if arg in VALUE_ARGS and isinstance(val, Tensor):
                params[arg] = _tensor_values(arg, val, raw, base, dump_dir, imp.notes)
                if val.spec.dtype != dtype_name(VALUE_TENSOR_DTYPES.get(arg, np.int64)):
                    fills[arg] = {VALUE_DTYPE_KEY: val.spec.dtype}  # as the model passed it
            elif arg not in TENSOR_ARGS and val is not None:
                params[arg] = val
        sparse = int(params.get("sparse_mode") or 0)
        for arg, val in raw.items():
            if arg not in params or arg not in TENSOR_ARGS:
                continue
            ts = val if isinstance(val, list) else [val]
            got = _stored(ts, base, dump_dir, imp.notes)
            if got is not None:
                keys = stored_keys(arg, val)
                arrays.update(zip(keys, got, strict=True))
                fills[arg] = {"dist": STORED, "sha256": stored_.digest(got)}
                continue
            if task == "tensor" and not all(x.data_name for x in ts):
                imp.notes.append(f"{arg}: the tensor task dump names no data file for it; "
                                 "seeded from its statistics")
            recipe = _mask_fill(ts[0], sparse) if arg == "atten_mask" \
                else _range_fill(_merged(ts), arg, imp.notes)
            if recipe is not None:
                fills[arg] = recipe
        imp.case = Case(params=params, fills=fills, seed=0, stored=arrays)
    except (ValueError, TypeError, OSError) as exc:
        imp.problem = str(exc)
        return imp
    imp.violations = validate(**imp.case.specs())
    return imp


def _tensor_values(arg: str, t: Tensor, raw: dict[str, Any], base: Path,
                   dump_dir: str | None, notes: list[str]) -> Any:
    """A value argument passed as a tensor: its dumped data, or rebuilt from statistics."""
    if t.data_name:
        a = _load_array(base, dump_dir, t.data_name, t.spec)
        return a.astype(np.int64).tolist()
    return _value_arg(arg, t, raw, notes)


def _stored(ts: list[Tensor], base: Path, dump_dir: str | None, notes: list[str]
            ) -> list[np.ndarray] | None:
    """The real arrays of a tensor task's tensors, or None (statistics, or a file missing)."""
    if not all(t.data_name for t in ts):
        return None
    try:
        return [_load_array(base, dump_dir, str(t.data_name), t.spec) for t in ts]
    except FileNotFoundError as exc:
        notes.append(f"{exc}; seeded from its statistics instead")
        return None


def read_dump(path: str | Path) -> dict[str, Any]:
    """The dump.json document, checked to be msprobe's form."""
    doc = read_json(path, max_bytes=MAX_DUMP_BYTES, max_list=MAX_DUMP_LIST)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise InputError(f"{path}: not an msprobe dump.json (no \"data\" object of API calls)")
    return doc


def import_dump(path: str | Path) -> tuple[str, list[Imported]]:
    """(task, one Imported per forward FIA call) of an msprobe dump."""
    doc = read_dump(path)
    calls = fia_calls(doc)
    if not calls:
        raise InputError(f"{path}: no npu_fused_infer_attention_score(_v2) forward call in "
                         f"its {len(doc['data'])} dumped API calls")
    base = Path(path).parent
    dump_dir = doc.get("dump_data_dir") if isinstance(doc.get("dump_data_dir"), str) else None
    task = doc.get("task", "statistics")
    if task not in TASKS:
        raise InputError(f"{path}: task: {str(task)[:40]!r} is not a dump fia-fuzz imports "
                         f"(one of {list(TASKS)})")
    return task, [build_case(k, v2, e, base, dump_dir, task) for k, v2, e in calls]


def write_imported(imports: list[Imported], out: str | Path) -> list[Path]:
    """Write each imported case to OUT/<name>.json (stored tensors to OUT/<name>.npz)."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    return [write_case(d / f"{imp.name}.json", imp.case) for imp in imports
            if imp.case is not None]
