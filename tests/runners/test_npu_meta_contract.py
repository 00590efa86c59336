"""torch_npu's own shape inference is the NPU runners' contract, checked with no NPU.

Each listed torch_npu wheel carries the pure-Python meta functions of the op
(META: eager v1 and v2; TORCHAIR_V2: TorchAir's `air::` op), the code that
infers output shapes and dtypes in graph mode. They run here unmodified,
straight from the downloaded wheel (npu_wheel.py): the v1/v2 schemas of the
wheel's yaml are defined in a private torch.library namespace per wheel, and
the vendor files are executed with only their imports stubbed. torch_npu and
torchair internals become inert stubs; `torch` stays the real one except that
its `library` and `ops` send the `npu`/`air` namespaces to the private ones
and register nothing in any other namespace (the file's aten Meta kernels are
dropped, so torch's own stay untouched).

Drawn cases go through the project's mapping onto meta tensors
(`npu_calls.to_api`, `npu.torch_args`), and the returned attention_out and
softmax_lse must have the shapes and dtypes of `output_specs`.
"""

from __future__ import annotations

import builtins
import functools
import types
import zipfile
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from npu_wheel import META, TORCHAIR_V2, torch_npu_wheel, yaml_schema

from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.runners import npu_calls
from fia_fuzz.runners.npu import torch_args
from fia_fuzz.strategies.sample import draw_cases

torch = pytest.importorskip("torch")
#: data=False tensors are read-only zero-stride views; meta tensors never read them
pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")

#: The torch_npu releases checked; a new wheel is one more entry.
WHEELS = ("2.13.0", "2.14.0")
V1, V2 = "npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2"
#: API -> (vendor namespace, op) of the meta function that infers its outputs.
OPS = {"npu": ("npu", V1), "npu-v2": ("npu", V2), "torchair": ("air", V2)}
SEED = 20
#: Filtered draws for features only v2 (sink, MLA full quant) or only v1 (shared
#: prefix, left padding, combined antiquant, dequant_scale1/2 full quant) carries.
ONE_API_FEATURES: tuple[dict[str, Any], ...] = (
    {"sink": True}, {"full_quant": True, "rope": True},
    {"prefix": True}, {"q_padding": True}, {"kv_padding": True},
    {"antiquant": "combined:0"}, {"antiquant": "combined:1"},
    {"full_quant": True, "rope": False},
)


class _Inert(types.ModuleType):
    """A stubbed torch_npu/torchair name: attributes and calls give more stubs, and a
    stub applied to a function (a decorator) returns the function unchanged."""

    def __getattr__(self, name: str) -> _Inert:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]
        return _Inert(f"{self.__name__}()")


class _Namespace:
    """torch.ops.<private> as the vendor's torch.ops.npu/air: ops of other files are stubs."""

    def __init__(self, real: Any):
        self._real = real

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._real, name)
        except AttributeError:
            return _Inert(name)


class VendorMeta:
    """The FIA meta functions of one torch_npu wheel, callable on meta tensors."""

    def __init__(self, version: str):
        tag = version.replace(".", "_")
        self.version = version
        self.ns = {"npu": f"fia_npu_{tag}", "air": f"fia_air_{tag}"}
        self._libs = [torch.library.Library(self.ns["npu"], "DEF")]
        with zipfile.ZipFile(torch_npu_wheel(version)) as wheel:
            for op in (V1, V2):
                self._libs[0].define(yaml_schema(wheel, op))
            sources = {path: wheel.read(path).decode() for path in (META, TORCHAIR_V2)}
        fake = self._fake_torch()
        for path, source in sources.items():
            exec(compile(source, f"{version}/{path}", "exec"),  # noqa: S102
                 {"__name__": path.removesuffix(".py").replace("/", "."),
                  "__builtins__": {**vars(builtins), "__import__": self._importer(fake)}})

    def _fake_torch(self) -> types.ModuleType:
        ns, libs = self.ns, self._libs

        def library(namespace: str, kind: str, dispatch_key: str = "") -> Any:
            if namespace not in ns:
                return None            # aten & co: nothing registered outside our namespaces
            libs.append(torch.library.Library(ns[namespace], kind, dispatch_key))
            return libs[-1]

        def impl(lib: Any, name: str, dispatch_key: str = "") -> Callable[[Any], Any]:
            if lib is None or not hasattr(getattr(torch.ops, lib.ns), name):
                return lambda fn: fn   # not an op under test
            return torch.library.impl(lib, name, dispatch_key)

        lib_mod = types.ModuleType("torch.library")
        lib_mod.__getattr__ = lambda name: getattr(torch.library, name)  # type: ignore[method-assign]
        lib_mod.Library, lib_mod.impl = library, impl  # type: ignore[attr-defined]
        ops = types.SimpleNamespace(**{v: _Namespace(getattr(torch.ops, p)) for v, p in ns.items()})
        fake = types.ModuleType("torch")
        fake.__getattr__ = lambda name: getattr(torch, name)  # type: ignore[method-assign]
        fake.library, fake.ops = lib_mod, ops  # type: ignore[attr-defined]
        return fake

    @staticmethod
    def _importer(fake: types.ModuleType) -> Callable[..., Any]:
        def imp(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                level: int = 0) -> Any:
            if name == "torch" or (name.startswith("torch.") and not fromlist):
                return fake
            if name == "torch.library":
                return fake.library
            if name.split(".")[0] in ("torch_npu", "torchair") or name == "torch.fx.node":
                return _Inert(name)
            return builtins.__import__(name, globals, locals, fromlist, level)
        return imp

    def outputs(self, api: str, mapped: npu_calls.ApiCall) -> tuple[TensorSpec, TensorSpec]:
        """(attention_out, softmax_lse) as the wheel's meta function infers them."""
        vendor_ns, op = OPS[api]
        args, kwargs = torch_args(mapped, "meta")
        out, lse = getattr(getattr(torch.ops, self.ns[vendor_ns]), op)(*args, **kwargs)
        return (TensorSpec(tuple(out.shape), str(out.dtype).removeprefix("torch.")),
                TensorSpec(tuple(lse.shape), str(lse.dtype).removeprefix("torch.")))


@functools.cache
def vendor_meta(version: str) -> VendorMeta:
    """One load per wheel and process (a torch.library namespace is defined once)."""
    return VendorMeta(version)


@functools.cache
def drawn() -> tuple[Case, ...]:
    """cases() under a fixed seed, plus draws of the features only one API carries."""
    found = draw_cases(300, SEED)
    for filters in ONE_API_FEATURES:
        found += draw_cases(15, SEED, **filters)
    return tuple(found)


def contract(meta: VendorMeta, cases: tuple[Case, ...]) -> tuple[Counter[str], list[str]]:
    """Per API the number of cases checked, and every disagreement with `output_specs`."""
    checked: Counter[str] = Counter()
    problems: list[str] = []
    for case in cases:
        call = case.call(data=False)
        want = output_specs(case.view())
        for api in OPS:
            try:
                mapped = npu_calls.to_api(api, call)
            except npu_calls.Unexpressible:
                continue
            checked[api] += 1
            try:
                got = meta.outputs(api, mapped)
            except RuntimeError as exc:   # a torch._check of the meta function
                problems.append(f"{case.case_id} {api}: torch_npu {meta.version} refused: "
                                f"{str(exc).splitlines()[0]}")
                continue
            for name, ours, theirs in zip(("attention_out", "softmax_lse"), want, got,
                                          strict=True):
                if ours != theirs:
                    problems.append(f"{case.case_id} {api} {name}: output_specs {ours}, "
                                    f"torch_npu {meta.version} meta {theirs}")
    return checked, problems


@pytest.mark.parametrize("version", WHEELS)
def test_meta_functions_agree_with_output_specs(version: str) -> None:
    checked, problems = contract(vendor_meta(version), drawn())
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
    # every API saw nearly half the draws or more, including the features only it carries
    # (v2 and TorchAir have no prefix, padding, combined antiquant or full quant: 203 of
    # 420 seeded draws once the argument forms were drawn)
    assert min(checked.values()) >= len(drawn()) * 2 // 5, checked
    assert len(checked) == len(OPS)


def test_lse_flag_both_ways_and_v1_v2_only_features_are_drawn() -> None:
    feats = [c.features() for c in drawn()]
    assert {f["lse"] for f in feats} == {False, True}
    for filters in ONE_API_FEATURES:
        assert sum(all(f[k] == v for k, v in filters.items()) for f in feats) >= 15, filters


def test_a_planted_mapping_bug_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping num_key_value_heads from the v1 call: torch_npu then takes KV_N = N and
    reads the wrong value head size out of BSH/TND values."""
    real = npu_calls.to_api

    def dropped(api: str, call: dict[str, Any]) -> npu_calls.ApiCall:
        mapped = real(api, call)
        if api == "npu":
            mapped.kwargs.pop("num_key_value_heads")
        return mapped

    monkeypatch.setattr(npu_calls, "to_api", dropped)
    _, problems = contract(vendor_meta(WHEELS[0]), drawn())
    assert problems and all(" npu " in p for p in problems), problems[:5]
