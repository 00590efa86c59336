"""Files people hand us (case.json, call.json, msprobe dumps): read them or say why not.

Every problem raises `InputError` with one line naming the file and the
place in it, so the command line can exit 2 without a traceback. Hostile
files (huge, deeply nested, huge lists, shapes that are not sizes) are
refused here, before any tensor is described or allocated; an absurd but
well-formed size is then refused by the legality model (`args.memory`)
before a case is materialised.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fia_fuzz.op import stored
from fia_fuzz.op.case import SCHEMA_VERSION, Case
from fia_fuzz.op.params import ALL_ARGS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.stored import STORED, stored_keys
from fia_fuzz.op.tensors import describe
from fia_fuzz.op.values import FLOAT_DISTS, INT_DISTS, MASK_DISTS
from fia_fuzz.rules import profiles

#: Largest case or call file read (a case is a few KiB; a block table of 65536 x 64 ids fits).
MAX_CASE_BYTES = 64 << 20
#: Nesting deeper than this is no call of the op (a case needs 4 levels).
MAX_DEPTH = 64
#: Longest list in a case file.
MAX_LIST = 1 << 22
#: Most dimensions of one tensor description.
MAX_NDIM = 8
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Every fill a case file may name (`op/values.py`), and real data (`op/stored.py`).
KNOWN_DISTS = (*FLOAT_DISTS, *MASK_DISTS, *INT_DISTS, STORED)


#: What a campaign records of a case's inputs, in its rows and beside the case in the case
#: files it writes: their digest (`op.digest.input_digest`) and the environment that made
#: them (`numerics.environment.environment()`: an object in a case file, its JSON in a row).
INPUT_DIGEST, ENVIRONMENT = "input_digest", "environment"


class InputError(Exception):
    """A file or flag a person gave us is unusable; the message says what and where."""


@dataclass(frozen=True)
class Recorded:
    """A case's recorded input digest and environment (None: not recorded, as in files
    written by hand or before fia-fuzz recorded them)."""

    digest: str | None = None
    environment: dict[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        """The keys a case file holds them under (none for what is not recorded)."""
        out: dict[str, Any] = {}
        if self.digest is not None:
            out[INPUT_DIGEST] = self.digest
        if self.environment is not None:
            out[ENVIRONMENT] = dict(self.environment)
        return out


def _absent(v: Any) -> bool:
    return v is None or v == "" or (isinstance(v, float) and math.isnan(v))


def recorded(doc: Mapping[str, Any], where: str) -> Recorded:
    """The recorded digest and environment of a case file or result row (`doc`), each
    None when absent; InputError when one is there but not what a campaign writes."""
    digest, env = doc.get(INPUT_DIGEST), doc.get(ENVIRONMENT)
    if _absent(digest):
        digest = None
    elif not isinstance(digest, str):
        raise _fail(where, INPUT_DIGEST, f"expected a hex string, got {_brief(digest)}")
    if isinstance(env, str) and env:
        try:
            env = json.loads(env)
        except json.JSONDecodeError:
            raise _fail(where, ENVIRONMENT, f"not JSON: {_brief(env)}") from None
    if _absent(env):
        env = None
    elif not isinstance(env, dict) or any(
            v is not None and not isinstance(v, str) for v in env.values()):
        raise _fail(where, ENVIRONMENT, f"expected an object of names and versions, got "
                    f"{_brief(env)}")
    return Recorded(digest, env)


def load_recorded(path: str | os.PathLike[str]) -> Recorded:
    """The recorded digest and environment in the case file at `path`."""
    doc = read_json(path)
    return recorded(doc, str(path)) if isinstance(doc, dict) else Recorded()


def read_json(path: str | os.PathLike[str], max_bytes: int = MAX_CASE_BYTES,
              max_list: int = MAX_LIST) -> Any:
    """The JSON document in `path`, after size, encoding, nesting and list-length checks."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory, expected a JSON file")
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"{p}: {size} bytes, more than the {max_bytes} this file may have")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                         f"column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{p}: nested too deeply to be a call of the op") from None
    _check_tree(doc, p, max_list)
    return doc


def _check_tree(doc: Any, where: Path, max_list: int) -> None:
    """Iteratively: no nesting deeper than MAX_DEPTH, no list longer than `max_list`."""
    stack: list[tuple[Any, int, str]] = [(doc, 0, "")]
    while stack:
        node, depth, at = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"{where}: {at or 'document'} nests more than {MAX_DEPTH} levels")
        if isinstance(node, list):
            if len(node) > max_list:
                raise InputError(f"{where}: {at or 'document'} is a list of {len(node)} items, "
                                 f"more than {max_list}")
            stack.extend((v, depth + 1, f"{at}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, dict):
            stack.extend((v, depth + 1, f"{at}.{k}" if at else str(k)) for k, v in node.items())


def _fail(where: str, at: str, what: str) -> InputError:
    return InputError(f"{where}: {at}: {what}")


def _tensor(where: str, at: str, v: Any, strict: bool) -> dict[str, Any]:
    if not isinstance(v, dict) or "shape" not in v or "dtype" not in v:
        raise _fail(where, at, 'expected a tensor {"shape": [...], "dtype": "..."}, '
                    f"got {_brief(v)}")
    shape, dtype = v["shape"], v["dtype"]
    if not isinstance(shape, list):
        raise _fail(where, f"{at}.shape", f"expected a list, got {_brief(shape)}")
    if strict and (len(shape) > MAX_NDIM or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape)):
        raise _fail(where, f"{at}.shape", f"expected at most {MAX_NDIM} non-negative ints, "
                    f"got {_brief(shape)}")
    if not isinstance(dtype, str):
        raise _fail(where, f"{at}.dtype", f"expected a dtype name, got {_brief(dtype)}")
    return v


def _ints(where: str, at: str, v: Any, nested: bool = False) -> None:
    rows = v if nested and isinstance(v, list) else [v]
    for row in rows:
        if not isinstance(row, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                            for x in row):
            what = "a list of lists of ints" if nested else "a list of ints"
            raise _fail(where, at, f"expected {what}, got {_brief(v)}")
        big = next((x for x in row if not INT64_MIN <= x <= INT64_MAX), None)
        if big is not None:
            raise _fail(where, at, f"{_brief(big)} does not fit the int64 the op takes")


def _check_fill(where: str, name: str, recipe: dict[str, Any]) -> None:
    """A fill recipe names a known dist and holds finite numbers only: non-finite inputs
    come from the values axis' own recipes, never from a number written in a file."""
    dist = recipe.get("dist")
    if dist is not None and dist not in KNOWN_DISTS:
        raise _fail(where, f"fills.{name}.dist", f"unknown fill {_brief(dist)}, expected one "
                    f"of {list(KNOWN_DISTS)}")
    for key, v in recipe.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise _fail(where, f"fills.{name}.{key}", f"{v} is not a finite number")
        if isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
            raise _fail(where, f"fills.{name}.{key}", f"{_brief(v)} does not fit an int64")


def _brief(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_call(doc: Any, where: str, strict: bool = False) -> dict[str, Any]:
    """A call written as {name: tensor or value} whose tensors can be described.

    Lenient by default: odd names, sizes and values are the legality model's
    to report (with rule ids); `strict` (case files, which get materialised)
    also refuses unknown names, values of the wrong kind and shapes that are
    not sizes.
    """
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object of the op's arguments, "
                         f"got {type(doc).__name__}")
    unknown = sorted(set(doc) - set(ALL_ARGS))
    if unknown and strict:
        raise InputError(f"{where}: unknown argument(s) {unknown} (names are torch_npu's "
                         "npu_fused_infer_attention_score keywords)")
    for name, v in doc.items():
        if v is None:
            continue
        if name in TENSOR_ARGS:
            for i, t in enumerate(v) if isinstance(v, list) else [(None, v)]:
                _tensor(where, name if i is None else f"{name}[{i}]", t, strict)
        elif strict and name in VALUE_ARGS:
            _ints(where, name, v, nested=name == "block_table")
        elif strict and isinstance(v, (list, dict)):
            raise _fail(where, name, f"expected a scalar attribute, got {_brief(v)}")
    return doc


def check_case(doc: Any, where: str) -> dict[str, Any]:
    """A case document ({"params": ..., "fills": ..., "seed": ...}) with sane kinds."""
    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict):
        got = "an object without params" if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"{where}: expected a case ({{\"params\": {{...}}, \"fills\": "
                         f"{{...}}, \"seed\": N}}), got {got}")
    check_call(doc["params"], f"{where}: params", strict=True)
    fills = doc.get("fills", {})
    if not isinstance(fills, dict) or any(not isinstance(f, dict) for f in fills.values()):
        raise _fail(where, "fills", f"expected an object of recipe objects, got {_brief(fills)}")
    unknown = sorted(set(fills) - set(ALL_ARGS))
    if unknown:
        raise _fail(where, "fills", f"recipes for unknown argument(s) {unknown}")
    for name, recipe in fills.items():
        _check_fill(where, name, recipe)
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise _fail(where, "seed", f"expected an int from 0 to 2^64-1, got {_brief(seed)}")
    version = doc.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _fail(where, "version", f"{_brief(version)}: this fia-fuzz reads case files of "
                    f"version {SCHEMA_VERSION}")
    rules = doc.get("rules", profiles.DEFAULT)
    if not isinstance(rules, str) or rules not in profiles.names():
        raise _fail(where, "rules", f"unknown rule profile {_brief(rules)}, expected one of "
                    f"{profiles.names()}")
    return doc


def load_case(path: str | os.PathLike[str]) -> Case:
    """The case in a case.json file, checked before anything is described or allocated.

    Stored tensors come from the .npz of the same stem beside it, each checked
    against its dtype, shape and the digest in its recipe.
    """
    doc = check_case(read_json(path), str(path))
    try:
        case = Case.from_dict(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: not a case ({exc})") from None
    wanted = {n: v for n, v in case.params.items()
              if n in TENSOR_ARGS and case.fills.get(n, {}).get("dist") == STORED}
    if not wanted:
        return case
    npz = Path(path).with_suffix(".npz")
    try:
        arrays = stored.load(npz)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{npz}: cannot read the case's stored tensors ({exc})") from None
    for name, spec in wanted.items():
        keys = stored_keys(name, spec)
        specs = spec if isinstance(spec, list) else [spec]
        for key, s in zip(keys, specs, strict=True):
            a = arrays.get(key)
            if a is None or describe(a) != s:
                raise InputError(f"{npz}: {key} is {describe(a) if a is not None else 'missing'}"
                                 f", the case says {s}")
        if stored.digest([arrays[k] for k in keys]) != case.fills[name].get("sha256"):
            raise InputError(f"{npz}: {name} differs from the data the case was made with "
                             "(sha256 mismatch)")
    return Case(params=case.params, fills=case.fills, seed=case.seed, rules=case.rules,
                stored=arrays)


def write_case(path: str | os.PathLike[str], case: Case, record: Recorded | None = None
               ) -> Path:
    """Write `case` to `path` as JSON (with what `record` holds of its inputs beside its
    fields: they are no part of the case or its id), its stored tensors to the .npz
    beside it."""
    p = Path(path)
    doc = {**case.to_dict(), **(record.fields() if record is not None else {})}
    p.write_text(json.dumps(doc, sort_keys=True, indent=2) + "\n")
    if case.stored:
        stored.save(p.with_suffix(".npz"), case.stored)
    return p
