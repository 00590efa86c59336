"""Replacements for the NPU call of a bundle's repro_npu.py (its FIA_REPRO_CALL hook).

`torch_sdpa` runs the torch-sdpa runner's computation on the script's
arguments (torch_npu's v1/v2 keywords mapped back to the canonical call) and
records a digest of every argument it received in $FIA_TEST_DIGESTS, so a
test can check the script rebuilt the inputs bit for bit. `off_by_half` is
the same with 0.5 added to the output: a planted wrong result.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from fia_fuzz.op.params import CANONICAL_TO_V2
from fia_fuzz.runners import get_runner
from fia_fuzz.runners.torch_convert import to_numpy

_FROM_V2 = {v: k for k, v in CANONICAL_TO_V2.items()}


def digest(a: Any) -> str:
    return f"{a.dtype}{tuple(a.shape)}:{hashlib.sha256(a.tobytes()).hexdigest()}"


def _canonical(api: str, args: list, kwargs: dict) -> dict[str, Any]:
    rename = _FROM_V2 if api.endswith("_v2") else {}
    call = dict(zip(("query", "key", "value"), (to_numpy(a) for a in args), strict=True))
    for name, v in kwargs.items():
        if hasattr(v, "detach"):
            v = to_numpy(v)
        call[rename.get(name, name)] = v
    return call


def torch_sdpa(api: str, args: list, kwargs: dict) -> tuple[Any, Any]:
    call = _canonical(api, args, kwargs)
    seen = {f"arg{i}": digest(to_numpy(a)) for i, a in enumerate(args)}
    seen.update({k: digest(to_numpy(v)) for k, v in kwargs.items() if hasattr(v, "detach")})
    seen.update({k: v for k, v in kwargs.items() if not hasattr(v, "detach")})
    with open(os.environ["FIA_TEST_DIGESTS"], "w") as fh:
        json.dump(seen, fh)
    return get_runner("torch-sdpa").run(call)


def off_by_half(api: str, args: list, kwargs: dict) -> tuple[Any, Any]:
    out, lse = torch_sdpa(api, args, kwargs)
    return out.astype("float32") + 0.5, lse
