"""Strided K/V/query views: JSON round trip, golden reads the view, torch-sdpa gets a view."""

from __future__ import annotations

import numpy as np
import pytest
from torch_devices import DEVICES, torch_runner

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec, describe
from fia_fuzz.rules.rule import IllegalCall
from fia_fuzz.rules.rulebook.bases import BASES
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners.composition import kv as composition_kv

pytest.importorskip("torch")

H = 2 * 128  # KV_N x D of the paged case
#: vLLM-style paged TND prefill whose key/value interleave per slot in one fused cache
#: (num_blocks, block_size, 2, H): key at offset 0, value at offset H.
PAGED = {"query": TensorSpec((10, 8, 128), "bfloat16", (3 * 8 * 128, 128, 1), 0),
         "key": TensorSpec((4, 128, H), "bfloat16", (128 * 2 * H, 2 * H, 1), 0),
         "value": TensorSpec((4, 128, H), "bfloat16", (128 * 2 * H, 2 * H, 1), H),
         **{k: v for k, v in BASES["tnd_paged_causal"].items()
            if k not in ("query", "key", "value")}}
CASES = {"bnsd": Case(params=dict(BASES["strided"]), seed=11),
         "paged_tnd": Case(params=PAGED, seed=12)}


def _contiguous(case: Case) -> Case:
    return Case(params={k: v.contiguous() if isinstance(v, TensorSpec) else v
                        for k, v in case.params.items()}, fills=case.fills, seed=case.seed)


@pytest.mark.parametrize("name", list(CASES))
def test_strided_case_is_legal_and_round_trips_bit_identically(name: str) -> None:
    case = CASES[name]
    assert validate(**case.specs()) == []
    again = Case.from_json(case.to_json())
    assert again == case and again.case_id == case.case_id
    assert again.case_id != _contiguous(case).case_id
    a, b = case.call(), again.call()
    for arg in ("query", "key", "value"):
        assert not a[arg].flags.c_contiguous
        assert a[arg].strides == b[arg].strides
        assert a[arg].tobytes() == b[arg].tobytes()


def test_contiguous_specs_keep_their_json_and_ids() -> None:
    spec = TensorSpec((2, 3), "float16")
    assert spec.to_dict() == {"shape": [2, 3], "dtype": "float16"}
    case = _contiguous(CASES["bnsd"])
    assert "strides" not in case.to_json()


@pytest.mark.parametrize("name", list(CASES))
def test_golden_reads_the_view_not_the_buffer(name: str) -> None:
    """The view holds the contiguous case's values and NaN between them: the golden on the
    view equals the golden on the contiguous case bit for bit."""
    case = CASES[name]
    on_view = npu_fused_infer_attention_score(**case.call())
    on_dense = npu_fused_infer_attention_score(**_contiguous(case).call())
    for x, y in zip(on_view, on_dense, strict=True):
        assert np.array_equal(np.asarray(x, np.float64), np.asarray(y, np.float64),
                              equal_nan=True)
    assert np.isfinite(np.asarray(on_view[0], np.float64)).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CASES))
def test_torch_sdpa_receives_a_view_and_agrees_with_the_golden(
        name: str, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    received = []
    real = composition_kv.to_torch

    def recording_to_torch(a: np.ndarray, device: str = "cpu", cast=None):  # a spy
        t = real(a, device, cast)
        received.append((a.shape, t))
        return t

    monkeypatch.setattr(composition_kv, "to_torch", recording_to_torch)
    call = case.call()
    out, _ = torch_runner("torch-sdpa", device).run(call)
    key = case.params["key"]
    got = [t for shape, t in received if shape == key.shape]
    assert got and not got[0].is_contiguous()
    assert got[0].stride() == key.strides and got[0].storage_offset() == key.offset
    truth = npu_fused_infer_attention_score(**call, precision="fp64")[0]
    base = npu_fused_infer_attention_score(**call)[0]
    err = np.abs(np.asarray(out, np.float64) - truth).max()
    base_err = np.abs(np.asarray(base, np.float64) - truth).max()
    assert np.isfinite(np.asarray(out, np.float64)).all()
    assert err <= 2 * base_err + 2.0 ** -7 * max(1.0, float(np.abs(truth).max()))


def test_a_call_on_arrays_is_validated_with_their_strides() -> None:
    """The golden's strict check sees the views it is given: a legal slice of a fused
    cache passes, a view whose rows overlap is refused naming args.strides_sane."""
    call = CASES["bnsd"].call()
    assert describe(call["key"]).strides is not None or call["key"].flags.c_contiguous
    npu_fused_infer_attention_score(**call)
    v = call["value"]
    overlap = np.lib.stride_tricks.as_strided(v, strides=(*v.strides[:-2], 2 * v.itemsize,
                                                          v.itemsize))
    assert describe(overlap).strides[-2:] == (2, 1)
    with pytest.raises(IllegalCall, match="args.strides_sane"):
        npu_fused_infer_attention_score(**{**call, "value": overlap})


def _views() -> dict[str, tuple[np.ndarray, tuple[int, ...] | None, int]]:
    """NumPy views with the strides and offset (in elements) a runner passes for each
    (None: the contiguous copy)."""
    fused = np.arange(2 * 4 * 2 * 8, dtype=np.float16).reshape(2, 4, 2, 8)  # (B, S, K|V, D)
    flat = np.arange(64, dtype=np.float32)
    return {
        "reversed": (fused[:, ::-1, 0, :], None, 0),
        "offset slice of a fused buffer": (fused[:, :, 1, :], (64, 16, 1), 8),
        "as_strided": (np.lib.stride_tricks.as_strided(flat[3:], (4, 5), (16 * 4, 4)),
                       (16, 1), 3),
    }


@pytest.mark.parametrize("name", list(_views()))
def test_describe_and_to_torch_agree_on_a_numpy_view(name: str) -> None:
    """Validation judges the tensor the runner sends: describe's strides and offset are
    those of to_torch's tensor (a negative stride: both the contiguous copy)."""
    from fia_fuzz.runners.torch_convert import to_torch

    a, strides, offset = _views()[name]
    spec, t = describe(a), to_torch(a)
    assert (spec.strides, spec.offset) == (strides, offset)
    if strides is None:
        assert t.is_contiguous()
    else:
        assert (t.stride(), t.storage_offset()) == (strides, offset)
    assert np.array_equal(t.numpy(), a)


@pytest.mark.parametrize("name", [n for n, v in _views().items() if v[1] is not None])
def test_a_described_view_round_trips_bit_identically(name: str) -> None:
    """A case holding describe's spec of a view materialises that view (same strides and
    offset, described back to the same spec), the same bytes after a JSON round trip."""
    a, strides, offset = _views()[name]
    n = a.shape[-1]
    shape = (1, 1, *a.shape) if a.ndim == 2 else (1, *a.shape)
    view = TensorSpec(shape, "float16", (a.size * 4,) * (4 - a.ndim) + strides, offset)
    case = Case(params={"query": TensorSpec((1, 1, 1, n), "float16"), "key": view,
                        "value": view.contiguous(), "num_heads": 1}, seed=5)
    again = Case.from_json(case.to_json())
    assert again == case
    k1, k2 = case.call()["key"], again.call()["key"]
    assert describe(k1) == view == describe(k2)
    assert k1.strides == k2.strides and k1.tobytes() == k2.tobytes()


def test_a_reversed_view_is_validated_as_the_copy_a_runner_sends() -> None:
    call = _contiguous(CASES["bnsd"]).call()
    reversed_key = call["key"][:, :, ::-1, :]
    assert describe(reversed_key) == describe(call["key"])
    assert validate(**{**call, "key": reversed_key}) == []
