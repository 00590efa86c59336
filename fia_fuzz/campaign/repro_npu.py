"""`repro_npu.py` in every bundle: the case as a standalone torch_npu script plus its data.

The script (`repro_npu_template.py` with the case's call filled in) needs no
fia-fuzz: `inputs.npz` holds the exact arguments the NPU front door receives
(`runners.npu_calls.to_api`: int4 packed into int32 words, bfloat16 as its
bits), `golden.npz` the fp64 ideal and the device-precision golden outputs, each in
the dtype the comparison needs (`expected_arrays`). Inputs are always stored, never
rebuilt from the seed, because rebuilding them needs fia-fuzz's generator
(`op/values.py`); `fia-fuzz repro` recomputes its golden instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op import stored
from fia_fuzz.op.case import Case
from fia_fuzz.runners.npu_calls import APIS, refusal, to_api

SCRIPT = "repro_npu.py"
INPUTS = "inputs.npz"
GOLDEN = "golden.npz"
_TEMPLATE = Path(__file__).with_name("repro_npu_template.py")
#: The torch_npu front doors a script can call, in order of preference.
_FRONT_DOORS = ("npu", "npu-v2")


def _front_door(case: Case, runner: str) -> tuple[str, str]:
    """(api key, "") of the torch_npu API that can take the case, or ("", why none can)."""
    order = ("npu-v2", "npu") if runner in ("npu-v2", "torchair") else _FRONT_DOORS
    view = case.view()
    whys = []
    for api in order:
        why = refusal(api, view)
        if why is None:
            return api, ""
        whys.append(why)
    return "", "; ".join(whys)


def _stored(a: np.ndarray) -> tuple[np.ndarray, str]:
    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return a.view(np.uint16), "bfloat16"
    return a, str(a.dtype)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def call_spec(case: Case, runner: str, call: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(the script's CALL, the arrays of inputs.npz) for `case` on its torch_npu API
    (`call`: the case already materialised, not materialised again)."""
    api, why = _front_door(case, runner)
    if not api:
        return {"unexpressible": why}, {}
    mapped = to_api(api, case.call() if call is None else call)
    arrays: dict[str, np.ndarray] = {}
    dtypes: dict[str, str] = {}

    def store(name: str, a: np.ndarray) -> None:
        arrays[name], dtypes[name] = _stored(a)

    positional = [f"arg{i}" for i in range(len(mapped.args))]
    for name, a in zip(positional, mapped.args, strict=True):
        store(name, a)
    tensors, lists, scalars = [], {}, {}
    for name, v in mapped.kwargs.items():
        if isinstance(v, np.ndarray):
            store(name, v)
            tensors.append(name)
        elif isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            for i, a in enumerate(v):
                store(f"{name}.{i}", a)
            lists[name] = len(v)
        else:
            scalars[name] = _plain(v)
    spec = {"api": APIS[api], "positional": positional, "tensors": tensors,
            "tensor_lists": lists, "scalars": scalars, "dtypes": dtypes, "unexpressible": ""}
    return spec, arrays


def script_text(case: Case, call: dict[str, Any]) -> str:
    """The template with this case's CASE and CALL filled in (Python literals)."""
    text = _TEMPLATE.read_text()
    about = {"case_id": case.case_id, "features": case.features()}
    for name, value in (("CASE", about), ("CALL", call)):
        line = f"{name}: dict = {{}}\n"
        if line not in text:
            raise RuntimeError(f"{_TEMPLATE} lost its {name!r} line")
        text = text.replace(line, f"{name}: dict = {_literal(value)}\n", 1)
    return text


def _literal(value: Any) -> str:
    """A Python literal of JSON-able data (json's true/false/null spelt as Python's)."""
    return repr(json.loads(json.dumps(value, default=str)))


#: Where the device-precision golden's dtype is no wider than this (fp16, bf16, int8
#: outputs), the fp64 ideal is stored as float32: its rounding (2^-24 relative) is far
#: below any error such an output can be judged by; wider outputs keep float64.
_NARROW_ITEMSIZE = 2


def expected_arrays(golden: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The golden's outputs (`<output>_fp64`, `<output>_device`) as golden.npz keeps them:
    the device-precision golden in its own dtype (bfloat16, which NumPy cannot store, as
    float32: exact), the fp64 ideal as float32 where that golden is 16 bits or narrower,
    float64 otherwise. Each is read as float64 by the script, as before."""
    out: dict[str, np.ndarray] = {}
    for name, v in golden.items():
        a = np.asarray(v)
        if a.dtype == ml_dtypes.bfloat16:
            a = a.astype(np.float32)
        if name.endswith("_fp64"):
            device = np.asarray(golden.get(name.removesuffix("_fp64") + "_device", a))
            narrow = device.dtype.itemsize <= _NARROW_ITEMSIZE
            a = a.astype(np.float32 if narrow else np.float64)
        out[name] = a
    return out


def write_repro_npu(bundle: Path, case: Case, runner: str,
                    golden: dict[str, np.ndarray] | None,
                    call: dict[str, Any] | None = None) -> None:
    """repro_npu.py, inputs.npz and (when the golden ran) golden.npz into `bundle`
    (`call`: the case already materialised)."""
    spec, arrays = call_spec(case, runner, call)
    if arrays:
        stored.savez(bundle / INPUTS, arrays)
    if golden:
        stored.savez(bundle / GOLDEN, expected_arrays(golden))
    (bundle / SCRIPT).write_text(script_text(case, spec))
