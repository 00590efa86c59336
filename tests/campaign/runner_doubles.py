"""Test doubles, named as such and registered only by the campaign tests.

Each is the golden model at device precision (a correct backend) with one
fault injected, so the campaign's plumbing can be tested without a device:
`test-double-perturbed-cell` returns wrong outputs for one feature cell,
`test-double-faulty` segfaults, hangs or raises on three others,
`test-double-rare-bug` returns wrong outputs for one KV length in RARE_MODULUS
(in every cell). `test-double-accepting` accepts every call, legal or not
(the golden's unchecked route; zeros where that has no result), and
`test-double-accepting-wrong` does the same with wrong outputs;
`test-double-memory-hog` asks one cell for more memory than any cap allows;
`test-double-sleepy` is correct but slow on one device (a far or slow case that
must not stall the other workers). Three carry a planted bug of the kind non-finite
values expose (the `values` axis):
`test-double-nan-to-zero` swallows NaN outputs to 0, `test-double-masked-row-unzeroed`
leaves a fully masked row's output at the mean of its values (the uncorrected kernel of
golden `row_invalid="docs"`, where the docs promise no correction) instead of 0,
`test-double-inf-clamp` turns +-Inf outputs into the dtype's largest finite value.
Two serve the night-over-night tests (triage, replay, bisect): `test-double-night-one`
breaks NIGHT_CELLS[0] as the perturbing double does, `test-double-night-two` breaks both
NIGHT_CELLS (the first night's bug and a new one); `night_one` (a plug-in factory,
`runner_doubles:night_one`) is the first with the bug fixed while FIXED_ENV is set, as
an environment with a fixed backend is.
One carries a planted bug of the kind only a kernel route exposes:
`test-double-split-fuse-stack-edge` is wrong only on the TND split-fuse route (a2_routes
"fai") when a request's KV holds one key past a full 512-key stack (ROUTE_CELL), the
tail handling of the route's own tiling, which no documented axis names.
One carries a planted bug of the kind only three features together expose:
`test-double-three-way` is wrong only on the prompt kernel's post-quant route with
inner_precise 3 and a head dim of 512 (THREE_WAY), each of which, and each two of which,
it computes right.
One carries a planted bug of the kind negative mode exposes: `test-double-one-sided-bound`
refuses illegal calls as a validating backend does, except that it checks one two-sided
bound (ONE_SIDED_RULE) on one side only, and accepts and miscomputes calls past the other.
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.lenient import Undefined, unchecked_golden
from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles import a2_routes
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners.base import register
from fia_fuzz.runners.golden_runner import GoldenRunner

#: The campaign seed of the tests that need these doubles' cells among a stream's first
#: plain cases: its first rounds hold few independent draws (the rest are Hypothesis's
#: mutations of them), and seed 5's cover every cell below with shrinkable failures. The
#: stream depends on the seed and the strategies only (strategies/seeded.py): retune when
#: a strategy change moves it.
SEED = 5
STREAM_SEED = ("--seed", str(SEED))
#: The cell the perturbing double breaks: (input_layout, query dtype).
PERTURBED_CELL = ("BSH", "bfloat16")


def _cell(call: dict[str, Any]) -> tuple[str, str]:
    dtype = call["query"].dtype
    return call["input_layout"], "bfloat16" if dtype == ml_dtypes.bfloat16 else str(dtype)


@register("test-double-perturbed-cell")
class PerturbedCellDouble(GoldenRunner):
    name = "test-double-perturbed-cell"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if _cell(call) == PERTURBED_CELL:   # off by 0.5 and by 2% (large fills too)
            out = (out.astype(np.float32) * 1.02 + 0.5).astype(out.dtype)
        return out, lse


def _perturb(out: np.ndarray) -> np.ndarray:
    """Off by 0.5 and by 2% (large fills too)."""
    return (out.astype(np.float32) * 1.02 + 0.5).astype(out.dtype)


#: The cells the night doubles break: the first night's, then a new one.
NIGHT_CELLS = (("BNSD", "float16"), ("BNSD", "bfloat16"))
#: Set (to anything) in an environment whose backend has the first night's bug fixed.
FIXED_ENV = "FIA_TEST_DOUBLE_FIXED"


@register("test-double-night-one")
class NightOneDouble(GoldenRunner):
    name = "test-double-night-one"
    cells = NIGHT_CELLS[:1]

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if _cell(call) in self.cells and not os.environ.get(FIXED_ENV):
            out = _perturb(out)
        return out, lse


@register("test-double-night-two")
class NightTwoDouble(NightOneDouble):
    name = "test-double-night-two"
    cells = NIGHT_CELLS


def night_one() -> NightOneDouble:
    """`runner_doubles:night_one`: the first night's double as a plug-in, so a fresh
    interpreter (bisect's) rebuilds it from its spec."""
    return NightOneDouble()


#: The (route, boundary) cell the split-fuse double breaks.
ROUTE_CELL = ("fai", "fai:s2+1")


@register("test-double-split-fuse-stack-edge")
class SplitFuseStackEdgeDouble(GoldenRunner):
    name = "test-double-split-fuse-stack-edge"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if a2_routes.cell(CallView(call)) == ROUTE_CELL:
            out = _perturb(out)
        return out, lse


#: Where the three-way double is wrong: a route, a non-default value of another argument
#: (inner_precise 3: high-precision mode with invalid-row correction), a size past a
#: threshold (head dim 512, past the 256 of the common tiles)
THREE_WAY = ("pfa.post_quant", "inner_precise", 3, 512)


def three_way(call: dict[str, Any]) -> bool:
    """The call is on THREE_WAY's route, with its argument value and head dim."""
    route, arg, value, dim = THREE_WAY
    v = CallView(call)
    return call.get(arg) == value and v.D >= dim and a2_routes.cell(v)[0] == route


@register("test-double-three-way")
class ThreeWayDouble(GoldenRunner):
    name = "test-double-three-way"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if three_way(call):  # the route's output is int8: off by 8 (saturating)
            out = np.clip(out.astype(np.int16) + 8, -128, 127).astype(out.dtype) \
                if out.dtype == np.int8 else _perturb(out)
        return out, lse


def segfault() -> None:
    ctypes.string_at(0)


def abort() -> None:
    os.abort()


#: When set, a file path: the hang cell hangs only while the file does not exist (the
#: first hang creates it), so a generous --case-timeout is paid once, not per hang.
HANG_ONCE_ENV = "FIA_TEST_HANG_ONCE"


def hang() -> None:
    marker = os.environ.get(HANG_ONCE_ENV)
    if marker:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return  # hung once already: this case runs normally
    time.sleep(3600)


def raise_error() -> None:
    raise ValueError("injected exception")


def device_env() -> tuple[str | None, str | None]:
    return os.environ.get("FIA_DEVICE_INDEX"), os.environ.get("ASCEND_RT_VISIBLE_DEVICES")


def answer() -> int:
    return 42


#: The faulty double's fault per (input_layout, query dtype); other cells run correctly.
FAULTS = {("BSH", "float16"): segfault, ("BSH", "bfloat16"): abort,
          ("BSND", "bfloat16"): hang, ("BSND", "float16"): raise_error}


@register("test-double-faulty")
class FaultyDouble(GoldenRunner):
    name = "test-double-faulty"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        fault = FAULTS.get(_cell(call))
        if fault is not None:
            fault()
        return super().run(call)


def thread_env() -> str | None:
    return os.environ.get("OMP_NUM_THREADS")


def golden_threads() -> int:
    from fia_fuzz.golden.threads import tile_threads

    return tile_threads()


#: The rare double's bug fires when S2 % RARE_MODULUS == RARE_RESIDUE (FIA_RARE_MODULUS
#: overrides the modulus, for measuring rarer bugs by hand).
RARE_MODULUS = int(os.environ.get("FIA_RARE_MODULUS", "13"))
RARE_RESIDUE = 6 % RARE_MODULUS


def rare_bug_fires(s2: int) -> bool:
    return s2 % RARE_MODULUS == RARE_RESIDUE


@register("test-double-rare-bug")
class RareBugDouble(GoldenRunner):
    name = "test-double-rare-bug"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        if rare_bug_fires(CallView(call).S2):  # off by 0.5 and by 2% (large fills too)
            out = (out.astype(np.float32) * 1.02 + 0.5).astype(out.dtype)
        return out, lse


@register("test-double-accepting")
class AcceptingDouble(GoldenRunner):
    name = "test-double-accepting"
    offset = 0.0

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        try:
            out, lse = unchecked_golden(**call, precision="device")
        except Undefined:
            return np.zeros((1, 1, 1), np.float16), np.zeros((1,), np.float32)
        if np.issubdtype(out.dtype, np.integer):
            # post-quant int8: 8 steps toward zero, past the one-LSB allowance; a
            # saturated output moves too
            step = int(8 * np.ceil(self.offset))
            moved = out.astype(np.int32) - np.where(out >= 0, step, -step)
            return moved.astype(out.dtype), lse
        moved = out.astype(np.float32) * (1 + self.offset)
        return (moved + self.offset).astype(out.dtype), lse


@register("test-double-accepting-wrong")
class AcceptingWrongDouble(AcceptingDouble):
    name = "test-double-accepting-wrong"
    offset = 0.5


#: The bound the one-sided double checks on one side only, and the side it lets through:
#: inner_precise 0..3 checked as `inner_precise < 0` (refused) only, so a mode past 3 runs
#: and is computed wrongly. (A packed T past the last cumulative length, the classic
#: one-sided check, has no defined result to judge by: lengths.packed_total is one of
#: golden.lenient's UNDEFINED_RULES, so accepting it records accepted-undefined.)
ONE_SIDED_RULE, ONE_SIDED_ACCEPTS = "precise.range", "above"


@register("test-double-one-sided-bound")
class OneSidedBoundDouble(GoldenRunner):
    """A validating backend (refuses an illegal call with the golden's error) whose check of
    ONE_SIDED_RULE misses the ONE_SIDED_ACCEPTS side: such calls run, with wrong outputs."""

    name = "test-double-one-sided-bound"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        broken = [v.rule for v in validate(**call)]
        if broken == [ONE_SIDED_RULE] and int(call["inner_precise"]) > 3:
            return AcceptingWrongDouble().run(call)
        return super().run(call)


#: The cell whose calls the memory-hog double answers by allocating HOG_BYTES.
HOG_CELL = ("BSH", "float16")
HOG_BYTES = 64 << 30


@register("test-double-memory-hog")
class MemoryHogDouble(GoldenRunner):
    """A correct backend, except that one cell asks for far more memory than any cap allows."""

    name = "test-double-memory-hog"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        if _cell(call) == HOG_CELL:
            np.ones(HOG_BYTES, dtype=np.uint8)
        return super().run(call)


@register("test-double-nan-to-zero")
class NanToZeroDouble(GoldenRunner):
    name = "test-double-nan-to-zero"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        return np.where(np.isnan(out.astype(np.float32)), 0, out).astype(out.dtype), lse


@register("test-double-masked-row-unzeroed")
class MaskedRowUnzeroedDouble(GoldenRunner):
    name = "test-double-masked-row-unzeroed"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        return npu_fused_infer_attention_score(**call, precision="device", row_invalid="docs",
                                               rules=self._rules)


@register("test-double-inf-clamp")
class InfClampDouble(GoldenRunner):
    name = "test-double-inf-clamp"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        top = float(ml_dtypes.finfo(out.dtype).max) if out.dtype.kind == "f" or \
            out.dtype == ml_dtypes.bfloat16 else None
        if top is None:
            return out, lse
        wide = out.astype(np.float32)
        return np.where(np.isinf(wide), np.sign(wide) * top, wide).astype(out.dtype), lse


#: The device index whose process the sleepy double slows down, and by how much per case.
SLEEPY_DEVICE, SLEEPY_S = "0", 2.0


@register("test-double-sleepy")
class SleepyDouble(GoldenRunner):
    """A correct backend that sleeps SLEEPY_S on every case of the device SLEEPY_DEVICE."""

    name = "test-double-sleepy"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        if os.environ.get("FIA_DEVICE_INDEX") == SLEEPY_DEVICE:
            time.sleep(SLEEPY_S)
        return super().run(call)
