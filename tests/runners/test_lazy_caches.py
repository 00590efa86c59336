"""Lazy paged caches: referenced blocks past 2^32 elements, cheap on the host, golden == SDPA."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from far_case import BLOCK, FAR, H, far_case
from hypothesis import HealthCheck, given, settings
from torch_devices import DEVICES

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import cases
from fia_fuzz.strategies.cases import build, families_for
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES

pytest.importorskip("torch")



def test_far_case_is_legal_and_reaches_past_2_32() -> None:
    case = far_case()
    assert validate(**case.specs()) == []
    f = case.features()
    assert f["cache_reach"] == "2^32"
    assert list(case.referenced_blocks()) == [FAR, FAR + 1, FAR + 2, FAR + 3]
    assert f["device_bytes"] >= 2 * (FAR + 4) * BLOCK * H * 2


def test_host_bytes_count_the_referenced_blocks_of_a_lazy_cache() -> None:
    case = far_case()
    block = BLOCK * H * 2  # bfloat16
    assert 2 * 4 * block < case.host_bytes() < 2 * 4 * block + (1 << 16)
    assert case.device_bytes() > 1 << 33


#: Measured on far stress draws (benchmarks/bench_far_memory.py): a process starts at
#: 124 MiB (interpreter, NumPy, torch) and the golden pair's peak stayed under that plus
#: 128 MiB plus 4.4x Case.host_bytes(); the model below keeps twice that factor.
PEAK_FACTOR, BASE = 8, 256 << 20


def test_far_stress_draws_keep_their_estimated_host_memory_under_1_gib() -> None:
    """Far draws take the far budget (draft.FAR_BUDGET), so the case's host memory
    follows a nightly-sized referenced work, not the stress profile's."""
    rng = random.Random(11)
    seen = set()
    for i in range(200):
        pins = {"cache_reach": ("2^31", "2^32")[i % 2]}
        try:
            case = build(RandomChooser(rng, pins), PROFILES["stress"], families_for(pins), pins)
        except Dead:
            continue
        seen.add(pins["cache_reach"])
        assert BASE + PEAK_FACTOR * case.host_bytes() < 1 << 30, case.case_id
    assert seen == {"2^31", "2^32"}


def test_lazy_cache_holds_data_in_referenced_blocks_only() -> None:
    case = far_case()
    key = case.call()["key"]
    assert not key[[0, FAR // 2, FAR - 1]].any()  # zero pages (reading all would map them)
    assert all(np.abs(key[b].astype(np.float32)).sum() > 0 for b in range(FAR, FAR + 4))
    assert key[FAR:].tobytes() == Case.from_json(case.to_json()).call()["key"][FAR:].tobytes()


_MEASURE = """
import json, sys
import numpy as np
from fia_fuzz.op.case import Case
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.runners import get_runner
from fia_fuzz.op.tensors import TensorSpec

def status(key):
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key))

device = sys.argv[1]
case = Case.from_json(sys.stdin.read())
runner = type(get_runner("torch-sdpa"))(device=device)
base = 0
if device != "cpu":  # the device's context and kernels first: their host memory is no case's
    tiny = Case(params={"query": TensorSpec((1, 1, 64), "bfloat16"),
                        "key": TensorSpec((1, 8, 64), "bfloat16"),
                        "value": TensorSpec((1, 8, 64), "bfloat16"), "num_heads": 1})
    runner.run(tiny.call())
    open("/proc/self/clear_refs", "w").write("5")  # peak RSS (VmHWM) from here on
    base = status("VmRSS")
call = case.call()
truth = npu_fused_infer_attention_score(**call, precision="fp64")[0]
golden = npu_fused_infer_attention_score(**call)[0]
out = runner.run(call)[0]
err = float(np.abs(np.asarray(out, np.float64) - truth).max())
base_err = float(np.abs(np.asarray(golden, np.float64) - truth).max())
# peak RSS of this process image (VmHWM; ru_maxrss would carry the parent's over exec)
print(json.dumps({"rss": status("VmHWM") - base, "base": base,
                  "err": err, "base_err": base_err, "top": float(np.abs(truth).max())}))
"""


@pytest.mark.parametrize("device", DEVICES)
def test_far_case_costs_under_1_gib_and_golden_agrees_with_torch_sdpa(device: str) -> None:
    """In a fresh process (its peak RSS is the case's): materialise, golden, torch-sdpa on
    `device`. On a GPU the host cost is counted above the process after its CUDA context
    and kernels are loaded (over 1 GiB of host memory by themselves), and the 16 GiB cache
    is allocated on the device with only its referenced blocks copied from the host."""
    res = subprocess.run([sys.executable, "-c", _MEASURE, device], input=far_case().to_json(),
                         capture_output=True, text=True, check=True)
    m = json.loads(res.stdout.strip().splitlines()[-1])
    assert m["rss"] < 1 << 30, m
    assert m["err"] <= 2 * m["base_err"] + 2.0 ** -7 * max(1.0, m["top"]), m


class RecordingTransfers:
    """Test double of a device's host-to-device copies: records every NumPy array the torch
    conversion sends to a device other than the CPU (its bytes), then sends it on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from fia_fuzz.runners import torch_convert

        self.sent: list[int] = []
        real = torch_convert._from_numpy

        def recording(a: np.ndarray, device: str) -> object:
            if device != "cpu":
                self.sent.append(int(a.nbytes))
            return real(a, device)

        monkeypatch.setattr(torch_convert, "_from_numpy", recording)


def test_far_cache_goes_to_a_device_as_its_referenced_blocks_only(monkeypatch) -> None:
    """The paged KV of the far case on torch's "meta" device (shapes, no memory; the device
    of this test double): the whole 8 GiB cache is allocated there, the host copies and
    sends its 4 referenced blocks only, and Python's heap never holds a whole cache."""
    import tracemalloc

    from fia_fuzz.runners.composition.kv import KvSource

    case = far_case()
    call = case.call()
    transfers = RecordingTransfers(monkeypatch)
    block = BLOCK * H * 2  # bfloat16 bytes of one block
    tracemalloc.start()
    try:
        src = KvSource(call["key"], "BSH", 1, "meta", np.asarray(call["block_table"]), BLOCK)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert src.data.device.type == "meta"
    assert tuple(src.data.shape) == (FAR + 4, 1, BLOCK, H)  # the whole cache, on the device
    assert transfers.sent == [4 * block]
    assert peak < 8 * block, peak


def test_blocks_sent_to_a_device_rebuild_the_cache_bit_for_bit() -> None:
    """The device path (zeros, referenced blocks scattered in) equals the whole host cache,
    shown on the CPU, where `to_torch` itself keeps the host path."""
    import torch

    from fia_fuzz.op.values import lazy_blocks
    from fia_fuzz.runners.torch_convert import blocks_to_device, to_torch

    for case in (_pa_scaled_case(4), _pa_scaled_case(5)):
        call = case.call()
        for name in ("key", "value", "key_antiquant_scale", "value_antiquant_scale"):
            blocks = lazy_blocks(call[name])
            assert list(blocks) == [2, 5, 7], name
            whole = to_torch(call[name], "cpu")
            assert torch.equal(blocks_to_device(call[name], blocks, "cpu"), whole), name
    assert lazy_blocks(far_case().call()["query"]) is None
    assert lazy_blocks(_pa_scaled_case(4).call()["key"][1:]) is None  # a part: not a cache


@settings(max_examples=5, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases(profile="stress", cache_reach="2^32"))
def test_stress_draws_reach_past_2_32_lazily(case: Case) -> None:
    assert validate(**case.specs()) == []
    assert case.lazy("key") and case.lazy("value")
    k = case.params["key"]
    assert int(case.referenced_blocks()[-1]) * int(np.prod(k.shape[1:])) >= 1 << 32


def _pa_scaled_case(mode: int) -> Case:
    """int8 decode over a 9-block cache with per-token antiquant scales in `mode`; the
    table references blocks 2, 5 and 7."""
    cache = TensorSpec((9, 128, 64), "int8")
    scale = TensorSpec((9, 1, 128) if mode == 5 else (9, 128), "float32")
    ints = {"dist": "int", "low": -128, "high": 127, "blocks": "referenced"}
    scales = {"dist": "uniform", "scale": 0.01, "blocks": "referenced"}
    return Case(params={"query": TensorSpec((2, 1, 64), "float16"), "key": cache,
                        "value": cache, "num_heads": 1, "num_key_value_heads": 1,
                        "input_layout": "BSH", "block_table": [[7, 2, -1], [5, -1, -1]],
                        "block_size": 128, "actual_seq_lengths_kv": [200, 9],
                        "key_antiquant_mode": mode, "value_antiquant_mode": mode,
                        "key_antiquant_scale": scale, "value_antiquant_scale": scale},
                fills={"key": ints, "value": dict(ints), "key_antiquant_scale": scales,
                       "value_antiquant_scale": dict(scales)}, seed=3)


@pytest.mark.parametrize("mode", [4, 5])
def test_pa_managed_antiquant_scales_are_lazy_like_their_cache(mode: int) -> None:
    case = _pa_scaled_case(mode)
    assert validate(**case.specs()) == []
    assert case.lazy("key_antiquant_scale") and case.lazy("value_antiquant_scale")
    scale = case.call()["key_antiquant_scale"]
    assert not scale[[0, 1, 3, 4, 6, 8]].any()
    assert all(scale[b].all() for b in (2, 5, 7))


def test_per_token_scales_without_pa_management_are_not_lazy() -> None:
    params = dict(_pa_scaled_case(5).params, key_antiquant_mode=1, value_antiquant_mode=1)
    case = Case(params=params, fills=_pa_scaled_case(5).fills, seed=3)
    assert not case.lazy("key_antiquant_scale") and case.lazy("key")
