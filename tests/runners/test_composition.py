"""torch-sdpa / torch-math composition, feature by feature, against float64 references.

Each feature is checked either against `_dense`, a float64 attention on BNSD
with an explicit boolean mask written here, or by rewriting the call into an
equivalent simpler one built by hand in the test (paged -> contiguous, left
padding -> right padding, tensor list -> one tensor, ...). Nothing here uses
the golden model. Every test runs on each device of `torch_devices.DEVICES`
(the CPU; CUDA, marked `cuda`, where torch sees a GPU).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from torch_devices import DEVICES, torch_runner

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.runners import get_runner

pytest.importorskip("torch")

RUNNERS = ("torch-sdpa", "torch-math")
INF = 2147483647
#: The device the running test's runners use (set by the `device` fixture).
_DEVICE = "cpu"


@pytest.fixture(params=DEVICES, autouse=True)
def device(request: pytest.FixtureRequest) -> str:
    """Every test of this module runs once per device (CUDA skips where torch sees none)."""
    global _DEVICE
    _DEVICE = request.param
    return str(request.param)


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float16
          ) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _dense(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
           masked: np.ndarray | None = None, pse: np.ndarray | None = None,
           sink: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """float64 attention on BNSD (GQA by head n -> n // G); masked rows -> 0, lse +inf.

    `masked` broadcasts to (B, N, S1, S2) (True = not attended), `pse` is added
    to the scaled scores, `sink` (N,) adds exp(sink) to every row's sum.
    """
    q, k, v = (np.asarray(x).astype(np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bnqd,bnkd->bnqk", q, k) * scale
    if pse is not None:
        s = s + pse
    keep = np.ones(s.shape, bool) if masked is None else ~np.broadcast_to(masked, s.shape)
    s = np.where(keep, s, -np.inf)
    valid = keep.any(-1)
    m = np.where(valid, s.max(-1), 0.0)
    p = np.where(keep, np.exp(s - m[..., None]), 0.0)
    denom = p.sum(-1)
    if sink is not None:
        denom = denom + np.exp(np.asarray(sink, np.float64)[None, :, None] - m)
    out = np.einsum("bnqk,bnkd->bnqd", p, v) / np.where(valid, denom, 1.0)[..., None]
    out = np.where(valid[..., None], out, 0.0)
    lse = np.where(valid, np.log(np.where(valid, denom, 1.0)) + m, np.inf)
    return out, lse[..., None]


def _close(actual: np.ndarray, expected: np.ndarray, dtype: str = "float16") -> None:
    a = np.asarray(actual).astype(np.float64)
    tol = (2.0 ** -8 if dtype == "float16" else 2.0 ** -5) * max(1.0, np.abs(expected).max())
    assert a.shape == expected.shape, (a.shape, expected.shape)
    np.testing.assert_allclose(a, expected, atol=tol, rtol=0)


def _lse_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == np.float32 and actual.shape == expected.shape
    assert np.array_equal(np.isinf(actual), np.isinf(expected))
    fin = np.isfinite(expected)
    np.testing.assert_allclose(actual[fin], expected[fin], atol=2e-3, rtol=2e-3)


def _run(name: str, **call: Any) -> tuple[np.ndarray, np.ndarray]:
    return torch_runner(name, _DEVICE).run(call)


# ---- layouts, GQA ------------------------------------------------------------

@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD", "BNSD_BSND", "BSH_NBSD",
                                    "BSND_NBSD", "BNSD_NBSD"])
def test_layouts_and_output_layouts(name: str, layout: str) -> None:
    rng = np.random.default_rng(1)
    b, n, kv_n, s1, s2, d = 2, 4, 2, 5, 9, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, kv_n, s2, d)), _rand(rng, (b, kv_n, s2, d))
    inp = layout.split("_")[0]

    def put(x: np.ndarray) -> np.ndarray:
        if inp == "BNSD":
            return x
        x = x.transpose(0, 2, 1, 3)
        return x.reshape(x.shape[0], x.shape[1], -1) if inp == "BSH" else x

    out, lse = _run(name, query=put(q), key=put(k), value=put(v), num_heads=n,
                    num_key_value_heads=kv_n, input_layout=layout, scale=0.25,
                    softmax_lse_flag=True)
    ref, ref_lse = _dense(q, k, v, 0.25)
    out_layout = layout.split("_")[-1]
    expect = {"BNSD": ref, "BSND": ref.transpose(0, 2, 1, 3), "NBSD": ref.transpose(1, 0, 2, 3),
              "BSH": ref.transpose(0, 2, 1, 3).reshape(b, s1, n * d)}[out_layout]
    _close(out, expect)
    _lse_close(lse, ref_lse)


def test_gqa_stacks_a_groups_rows_instead_of_copying_kv() -> None:
    # the kernel gets each KV head once, with its G query heads' rows stacked (an MLA cache
    # copied for 128 query heads took over 1 GiB), and the mask bias folded the same way
    from fia_fuzz.runners.composition.attend import compose

    rng = np.random.default_rng(21)
    b, n, kv_n, s1, s2, d = 2, 8, 2, 3, 40, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, kv_n, s2, d)), _rand(rng, (b, kv_n, s2, d))
    masked = rng.random((b, s1, s2)) < 0.3
    seen: list[tuple[tuple[int, ...], ...]] = []
    sdpa = torch_runner("torch-sdpa", _DEVICE)

    def recording_kernel(q: Any, k: Any, v: Any, bias: Any, scale: float) -> Any:
        seen.append((tuple(q.shape), tuple(k.shape), tuple(bias.shape)))
        return sdpa._attend(q, k, v, bias, scale)

    out, lse = compose(dict(query=q, key=k, value=v, num_heads=n, num_key_value_heads=kv_n,
                            input_layout="BNSD", scale=0.25, sparse_mode=1,
                            atten_mask=masked[:, None], softmax_lse_flag=True),
                       recording_kernel, _DEVICE)
    assert seen == [((b, kv_n, 4 * s1, d), (b, kv_n, s2, d), (b, kv_n, 4 * s1, s2))]
    ref, ref_lse = _dense(q, k, v, 0.25, masked=masked[:, None])
    _close(out, ref)
    _lse_close(lse, ref_lse)


@pytest.mark.parametrize("layout", ["TND", "NTD", "TND_NTD", "NTD_TND"])
def test_packed_layouts_use_cumulative_lengths(layout: str) -> None:
    rng = np.random.default_rng(2)
    n, d, q_lens, kv_lens = 2, 16, [3, 1, 4], [5, 2, 6]
    qs = [_rand(rng, (n, s, d)) for s in q_lens]
    ks = [_rand(rng, (n, s, d)) for s in kv_lens]
    vs = [_rand(rng, (n, s, d)) for s in kv_lens]
    inp, out_l = layout.split("_")[0], layout.split("_")[-1]

    def pack(parts: list[np.ndarray]) -> np.ndarray:
        nt = np.concatenate(parts, axis=1)
        return nt.transpose(1, 0, 2) if inp == "TND" else nt

    out, lse = _run("torch-sdpa", query=pack(qs), key=pack(ks), value=pack(vs), num_heads=n,
                    input_layout=layout, scale=0.3, softmax_lse_flag=True,
                    actual_seq_lengths=list(np.cumsum(q_lens)),
                    actual_seq_lengths_kv=list(np.cumsum(kv_lens)))
    refs = [_dense(qi[None], ki[None], vi[None], 0.3)
            for qi, ki, vi in zip(qs, ks, vs, strict=True)]
    ref_nt = np.concatenate([r[0][0] for r in refs], axis=1)
    _close(out, ref_nt.transpose(1, 0, 2) if out_l == "TND" else ref_nt)
    ref_lse = np.concatenate([r[1][0] for r in refs], axis=1).transpose(1, 0, 2)
    _lse_close(lse, ref_lse)


# ---- masks and sparse modes --------------------------------------------------

def _band(s1: int, s2: int, pre: int, nxt: int) -> np.ndarray:
    i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
    return (j > i + nxt) | (j < i - pre)


def _mode_mask(mode: int, s1: int, s2: int, pre: int, nxt: int) -> np.ndarray:
    """The masked set of sparse modes 2-4 for one batch, straight from SEM §4."""
    i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
    if mode == 2:
        return j > i
    if mode == 3:
        return j > i + (s2 - s1)
    return (j > i + (s2 - s1) + nxt) | (j < i + (s2 - s1) - pre)


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("mode,pre,nxt", [(2, INF, INF), (3, INF, INF), (4, 2, 1), (4, 0, 3),
                                          (4, -1, 3), (3, 5, 5)])
def test_sparse_modes_anchor_per_batch(name: str, mode: int, pre: int, nxt: int) -> None:
    rng = np.random.default_rng(3)
    b, n, s1, s2, d = 3, 2, 6, 8, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    act_q, act_kv = [6, 4, 2], [8, 3, 7]
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    out, lse = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                    scale=0.5, sparse_mode=mode, atten_mask=mask, pre_tokens=pre,
                    next_tokens=nxt, actual_seq_lengths=act_q, actual_seq_lengths_kv=act_kv,
                    softmax_lse_flag=True)
    for i in range(b):
        ref, ref_lse = _dense(q[i:i + 1, :, :act_q[i]], k[i:i + 1, :, :act_kv[i]],
                              v[i:i + 1, :, :act_kv[i]], 0.5,
                              masked=_mode_mask(mode, act_q[i], act_kv[i], pre, nxt))
        _close(out[i:i + 1, :, :act_q[i]], ref)
        _lse_close(lse[i:i + 1, :, :act_q[i]], ref_lse)
        assert not out[i, :, act_q[i]:].any() and np.isinf(lse[i, :, act_q[i]:]).all()


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("mode,pre,nxt", [(0, INF, INF), (0, 2, 0), (0, 1, -1), (1, 0, 0)])
def test_user_mask_and_band(name: str, mode: int, pre: int, nxt: int) -> None:
    rng = np.random.default_rng(4)
    b, n, s1, s2, d = 2, 2, 5, 7, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    mask = rng.random((b, 1, s1 + 3, s2 + 9)) < 0.3   # larger than S1/S2: extra ignored
    out, lse = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                    scale=0.5, sparse_mode=mode, atten_mask=mask.astype(np.int8),
                    pre_tokens=pre, next_tokens=nxt, softmax_lse_flag=True)
    masked = mask[:, :, :s1, :s2]
    if mode == 0:
        masked = masked | _band(s1, s2, pre, nxt)
    ref, ref_lse = _dense(q, k, v, 0.5, masked=masked)
    _close(out, ref)
    _lse_close(lse, ref_lse)


@pytest.mark.parametrize("shape", ["S1S2", "BS1S2", "1S1S2", "B1S1S2", "11S1S2"])
def test_prefill_mask_shapes(shape: str) -> None:
    rng = np.random.default_rng(5)
    b, n, s1, s2, d = 2, 2, 4, 6, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    per_batch = shape.startswith("B")
    base = rng.random((b if per_batch else 1, s1, s2)) < 0.3
    form = {"S1S2": base[0], "BS1S2": base, "1S1S2": base, "B1S1S2": base[:, None],
            "11S1S2": base[:, None]}[shape]
    out, _ = _run("torch-sdpa", query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                  scale=0.5, sparse_mode=1, atten_mask=form)
    _close(out, _dense(q, k, v, 0.5, masked=base[:, None])[0])


@pytest.mark.parametrize("shape", ["BS2", "B1S2", "B11S2"])
def test_decode_mask_shapes_and_ignored_sparse_mode(shape: str) -> None:
    rng = np.random.default_rng(6)
    b, n, s2, d = 3, 2, 10, 16
    q, k, v = _rand(rng, (b, n, 1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    base = rng.random((b, s2)) < 0.4
    form = {"BS2": base, "B1S2": base[:, None], "B11S2": base[:, None, None]}[shape]
    # decode ignores sparse_mode/pre/next [SEM §4]: pre_tokens=0 would mask everything else
    out, _ = _run("torch-sdpa", query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                  scale=0.5, atten_mask=form, pre_tokens=0, next_tokens=0)
    _close(out, _dense(q, k, v, 0.5, masked=base[:, None, None, :])[0])


@pytest.mark.parametrize("name", RUNNERS)
def test_fully_masked_rows_are_zero_with_infinite_lse(name: str) -> None:
    rng = np.random.default_rng(7)
    q, k, v = _rand(rng, (1, 2, 4, 16)), _rand(rng, (1, 2, 6, 16)), _rand(rng, (1, 2, 6, 16))
    mask = np.zeros((4, 6), bool)
    mask[1] = True
    out, lse = _run(name, query=q, key=k, value=v, num_heads=2, input_layout="BNSD",
                    sparse_mode=1, atten_mask=mask, softmax_lse_flag=True)
    assert not out[:, :, 1].any() and np.isinf(lse[:, :, 1]).all()
    assert np.isfinite(lse[:, :, [0, 2, 3]]).all()


@pytest.mark.parametrize("name", RUNNERS)
def test_pse_shift_larger_than_s1_s2(name: str) -> None:
    rng = np.random.default_rng(8)
    b, n, s1, s2, d = 2, 2, 3, 5, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    pse = _rand(rng, (1, n, s1 + 2, s2 + 4))
    out, lse = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                    scale=0.5, pse_shift=pse, softmax_lse_flag=True)
    ref, ref_lse = _dense(q, k, v, 0.5, pse=pse[:, :, :s1, :s2].astype(np.float64))
    _close(out, ref)
    _lse_close(lse, ref_lse)


# ---- lengths and padding -----------------------------------------------------

def test_actual_lengths_forms_and_empty_batches() -> None:
    rng = np.random.default_rng(9)
    b, n, s1, s2, d = 3, 2, 4, 6, 16
    q, k, v = _rand(rng, (b, s1, n * d)), _rand(rng, (b, s2, n * d)), _rand(rng, (b, s2, n * d))
    out, lse = _run("torch-sdpa", query=q, key=k, value=v, num_heads=n, scale=0.5,
                    actual_seq_lengths=[3], actual_seq_lengths_kv=[6, 0, 2, 99],
                    softmax_lse_flag=True)
    qb = q.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    kb = k.reshape(b, s2, n, d).transpose(0, 2, 1, 3)
    vb = v.reshape(b, s2, n, d).transpose(0, 2, 1, 3)
    assert not out[1].any() and np.isinf(lse[1]).all()          # act_kv == 0
    assert not out[:, 3:].any() and np.isinf(lse[:, :, 3:]).all()  # rows >= act_q
    for i, kv_len in ((0, 6), (2, 2)):
        ref, _ = _dense(qb[i:i + 1, :, :3], kb[i:i + 1, :, :kv_len], vb[i:i + 1, :, :kv_len], 0.5)
        _close(out[i:i + 1, :3], ref.transpose(0, 2, 1, 3).reshape(1, 3, n * d))


@pytest.mark.parametrize("name", RUNNERS)
def test_left_padding_equals_shifted_right_padding(name: str) -> None:
    rng = np.random.default_rng(10)
    b, n, s1, s2, d = 2, 2, 6, 8, 16
    act_q, act_kv, q_pad, kv_pad = [3, 4], [5, 2], [1, 2], [2, -3]
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    pse = _rand(rng, (b, n, s1, s2))
    out, lse = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                    scale=0.5, actual_seq_lengths=act_q, actual_seq_lengths_kv=act_kv,
                    query_padding_size=np.array(q_pad, np.int64),
                    kv_padding_size=np.array(kv_pad, np.int64), pse_shift=pse,
                    sparse_mode=3, atten_mask=np.triu(np.ones((2048, 2048), bool), 1),
                    softmax_lse_flag=True)
    for i in range(b):
        qlo, qhi = s1 - q_pad[i] - act_q[i], s1 - q_pad[i]
        klo, khi = s2 - max(kv_pad[i], 0) - act_kv[i], s2 - max(kv_pad[i], 0)
        ref, ref_lse = _dense(q[i:i + 1, :, qlo:qhi], k[i:i + 1, :, klo:khi],
                              v[i:i + 1, :, klo:khi], 0.5,
                              masked=_mode_mask(3, act_q[i], act_kv[i], INF, INF),
                              pse=pse[i:i + 1, :, qlo:qhi, klo:khi].astype(np.float64))
        _close(out[i:i + 1, :, qlo:qhi], ref)
        _lse_close(lse[i:i + 1, :, qlo:qhi], ref_lse)
        outside = np.r_[0:qlo, qhi:s1]
        assert not out[i][:, outside].any() and np.isinf(lse[i][:, outside]).all()


def test_kv_left_padding_window_before_zero_gives_zeros() -> None:
    rng = np.random.default_rng(22)
    q, k, v = _rand(rng, (2, 2, 1, 16)), _rand(rng, (2, 2, 6, 16)), _rand(rng, (2, 2, 6, 16))
    out, lse = _run("torch-sdpa", query=q, key=k, value=v, num_heads=2, input_layout="BNSD",
                    actual_seq_lengths_kv=[5, 4], kv_padding_size=np.array([2], np.int64),
                    softmax_lse_flag=True)
    assert not out[0].any() and np.isinf(lse[0]).all()   # 6 - 2 - 5 < 0 [IFA kv左padding]
    _close(out[1:], _dense(q[1:], k[1:, :, 0:4], v[1:, :, 0:4], 1.0)[0])


# ---- KV sources ----------------------------------------------------------------

def _page(kv: np.ndarray, block_size: int, layout: str, rng: np.random.Generator,
          c: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """BNSD kv (B, KV_N, S, d) scattered into shuffled blocks; unused table entries -1."""
    b, kv_n, s, d = kv.shape
    per_seq = -(-s // block_size)
    n_blocks = b * per_seq + 2
    order = rng.permutation(n_blocks)[: b * per_seq].reshape(b, per_seq)
    cache = np.zeros((n_blocks, kv_n, block_size, d), kv.dtype)
    for i in range(b):
        for j in range(per_seq):
            chunk = kv[i, :, j * block_size:(j + 1) * block_size]
            cache[order[i, j], :, :chunk.shape[1]] = chunk
    table = np.full((b, per_seq + 1), -1, np.int32)
    table[:, :per_seq] = order
    if layout == "BnBsH":
        cache = cache.transpose(0, 2, 1, 3).reshape(n_blocks, block_size, kv_n * d)
    elif layout == "NZ":
        cache = cache.reshape(n_blocks, kv_n, block_size, d // c, c).transpose(0, 1, 3, 2, 4)
    return np.ascontiguousarray(cache), table


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD", "NZ"])
def test_paged_kv_equals_contiguous(name: str, cache_layout: str) -> None:
    rng = np.random.default_rng(11)
    b, n, kv_n, s2, d, bs = 2, 4, 2, 40, 32, 16
    q, k, v = _rand(rng, (b, n, 1, d)), _rand(rng, (b, kv_n, s2, d)), _rand(rng, (b, kv_n, s2, d))
    kc, table = _page(k, bs, cache_layout, np.random.default_rng(0))
    vc, _ = _page(v, bs, cache_layout, np.random.default_rng(0))
    act_kv = [37, 9]
    out, lse = _run(name, query=q, key=kc, value=vc, block_table=table, block_size=bs,
                    num_heads=n, num_key_value_heads=kv_n, input_layout="BNSD", scale=0.2,
                    actual_seq_lengths_kv=act_kv, softmax_lse_flag=True)
    for i in range(b):
        ref, ref_lse = _dense(q[i:i + 1], k[i:i + 1, :, :act_kv[i]], v[i:i + 1, :, :act_kv[i]],
                              0.2)
        _close(out[i:i + 1], ref)
        _lse_close(lse[i:i + 1], ref_lse)


@pytest.mark.parametrize("name", RUNNERS)
def test_tensor_list_kv(name: str) -> None:
    rng = np.random.default_rng(12)
    n, d, lens = 2, 16, [5, 9, 3]
    q = _rand(rng, (3, 1, n * d))
    ks = [_rand(rng, (1, s, n * d)) for s in lens]
    vs = [_rand(rng, (1, s, n * d)) for s in lens]
    out, _ = _run(name, query=q, key=ks, value=vs, num_heads=n, scale=0.5,
                  actual_seq_lengths_kv=[5, 7, 3])

    def bnsd(x: np.ndarray) -> np.ndarray:
        return x.reshape(x.shape[0], x.shape[1], n, d).transpose(0, 2, 1, 3)

    for i, act in enumerate([5, 7, 3]):
        ref, _ = _dense(bnsd(q[i:i + 1]), bnsd(ks[i])[:, :, :act], bnsd(vs[i])[:, :, :act], 0.5)
        _close(out[i:i + 1], ref.transpose(0, 2, 1, 3).reshape(1, 1, n * d))


@pytest.mark.parametrize("name", RUNNERS)
def test_shared_prefix_is_prepended_and_counts_for_mode_3(name: str) -> None:
    rng = np.random.default_rng(13)
    b, n, s1, s2, sp, d = 2, 2, 4, 5, 6, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    kp, vp = _rand(rng, (1, n, sp, d)), _rand(rng, (1, n, sp, d))
    out, _ = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD", scale=0.5,
                  key_shared_prefix=kp, value_shared_prefix=vp, actual_shared_prefix_len=[4],
                  actual_seq_lengths_kv=[5, 2], sparse_mode=3,
                  atten_mask=np.triu(np.ones((2048, 2048), bool), 1))
    for i, act in enumerate([5, 2]):
        kk = np.concatenate([kp[:, :, :4], k[i:i + 1, :, :act]], axis=2)
        vv = np.concatenate([vp[:, :, :4], v[i:i + 1, :, :act]], axis=2)
        ref, _ = _dense(q[i:i + 1], kk, vv, 0.5, masked=_mode_mask(3, s1, 4 + act, INF, INF))
        _close(out[i:i + 1], ref)


@pytest.mark.parametrize("name", RUNNERS)
def test_rope_concatenates_head_dims_and_value_dim_may_differ(name: str) -> None:
    rng = np.random.default_rng(14)
    b, n, s1, s2, d, dr, dv = 1, 4, 3, 7, 32, 64, 48
    q, qr = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s1, dr))
    k, kr = _rand(rng, (b, 1, s2, d)), _rand(rng, (b, 1, s2, dr))
    v = _rand(rng, (b, 1, s2, dv))
    out, _ = _run(name, query=q, key=k, value=v, query_rope=qr, key_rope=kr, num_heads=n,
                  num_key_value_heads=1, input_layout="BNSD", scale=0.1)
    ref, _ = _dense(np.concatenate([q, qr], -1), np.concatenate([k, kr], -1), v, 0.1)
    _close(out, ref)


@pytest.mark.parametrize("name", RUNNERS)
def test_learnable_sink_is_an_extra_key(name: str) -> None:
    rng = np.random.default_rng(15)
    b, n, s1, s2, d = 2, 4, 3, 6, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    sink = rng.standard_normal(n).astype(np.float32) * 2
    out, lse = _run(name, query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                    scale=0.5, learnable_sink=sink, softmax_lse_flag=True)
    ref, ref_lse = _dense(q, k, v, 0.5, sink=sink)
    _close(out, ref)
    _lse_close(lse, ref_lse)


# ---- quantisation --------------------------------------------------------------

def _int8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _deq(x: np.ndarray, scale: np.ndarray, offset: np.ndarray | None) -> np.ndarray:
    x = x.astype(np.float32)
    if offset is not None:
        x = x + offset.astype(np.float32)
    return (x * scale.astype(np.float32)).astype(np.float16)


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("form", ["per_channel", "per_tensor", "per_token"])
def test_combined_antiquant(name: str, form: str) -> None:
    rng = np.random.default_rng(16)
    b, n, kv_n, s2, d = 2, 4, 2, 12, 32
    q = _rand(rng, (b, n, 1, d))
    k, v = _int8(rng, (b, kv_n, s2, d)), _int8(rng, (b, kv_n, s2, d))
    if form == "per_channel":
        scale = (rng.random((2, kv_n, 1, d)) * 0.02).astype(np.float16)
        offset = rng.integers(-3, 4, (2, kv_n, 1, d)).astype(np.float16)
        ks, ko, vs, vo, mode = scale[0:1], offset[0:1], scale[1:2], offset[1:2], 0
    elif form == "per_tensor":
        scale = np.array([0.01, 0.02], np.float16)
        offset = np.array([1, -2], np.float16)
        ks, ko, vs, vo, mode = scale[0], offset[0], scale[1], offset[1], 0
    else:
        scale = (rng.random((2, b, s2)) * 0.02).astype(np.float32)
        offset = rng.integers(-3, 4, (2, b, s2)).astype(np.float32)
        ks, ko = scale[0][:, None, :, None], offset[0][:, None, :, None]
        vs, vo = scale[1][:, None, :, None], offset[1][:, None, :, None]
        mode = 1
    out, _ = _run(name, query=q, key=k, value=v, num_heads=n, num_key_value_heads=kv_n,
                  input_layout="BNSD", scale=0.2, antiquant_scale=scale, antiquant_offset=offset,
                  antiquant_mode=mode, inner_precise=0)
    _close(out, _dense(q, _deq(k, ks, ko), _deq(v, vs, vo), 0.2)[0])


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4, 5])
def test_separate_antiquant_modes(name: str, mode: int) -> None:
    rng = np.random.default_rng(17)
    b, n, kv_n, s2, d, bs = 2, 4, 2, 64, 32, 32
    q = _rand(rng, (b, n, 1, d))
    k, v = _int8(rng, (b, kv_n, s2, d)), _int8(rng, (b, kv_n, s2, d))
    shape = {0: (1, kv_n, 1, d), 1: (1, b, s2), 2: (kv_n,), 3: (b, kv_n, s2)}.get(mode)
    call: dict[str, Any] = {"query": q, "num_heads": n, "num_key_value_heads": kv_n,
                            "input_layout": "BNSD", "scale": 0.2, "inner_precise": 0,
                            "key_antiquant_mode": mode, "value_antiquant_mode": mode,
                            "actual_seq_lengths_kv": [s2, 40]}
    if mode in (4, 5):
        kc, table = _page(k, bs, "BnNBsD", np.random.default_rng(0), c=32)
        vc, _ = _page(v, bs, "BnNBsD", np.random.default_rng(0), c=32)
        n_blocks = kc.shape[0]
        shape = (n_blocks, bs) if mode == 4 else (n_blocks, kv_n, bs)
        call.update(key=kc, value=vc, block_table=table, block_size=bs)
    else:
        call.update(key=k, value=v)
    params = {}
    for which in ("key", "value"):
        s = (rng.random(shape) * 0.02 + 0.001).astype(np.float32)
        o = rng.integers(-3, 4, shape).astype(np.float32)
        call[f"{which}_antiquant_scale"], call[f"{which}_antiquant_offset"] = s, o
        if mode in (4, 5):   # per token of the paged cache: read back per logical token
            rows = np.stack([np.concatenate([s_ for s_ in s[table[i, :2]]]) for i in range(b)])
            rows_o = np.stack([np.concatenate([o_ for o_ in o[table[i, :2]]]) for i in range(b)])
            if mode == 4:
                s, o = rows[:, None, :, None], rows_o[:, None, :, None]
            else:
                s = rows.reshape(b, 2, kv_n, bs).transpose(0, 2, 1, 3).reshape(b, kv_n, s2, 1)
                o = rows_o.reshape(b, 2, kv_n, bs).transpose(0, 2, 1, 3).reshape(b, kv_n, s2, 1)
        elif mode == 1:
            s, o = s[0][:, None, :, None], o[0][:, None, :, None]
        elif mode == 2:
            s, o = s[None, :, None, None], o[None, :, None, None]
        elif mode == 3:
            s, o = s[..., None], o[..., None]
        params[which] = (s, o)
    out, _ = _run(name, **call)
    kd, vd = _deq(k, *params["key"]), _deq(v, *params["value"])
    for i, act in enumerate([s2, 40]):
        ref, _ = _dense(q[i:i + 1], kd[i:i + 1, :, :act], vd[i:i + 1, :, :act], 0.2)
        _close(out[i:i + 1], ref)


@pytest.mark.parametrize("form", ["int4", "int32"])
def test_int4_kv_true_and_packed(form: str) -> None:
    rng = np.random.default_rng(18)
    b, n, s2, d = 1, 2, 10, 64
    q = _rand(rng, (b, 1, n * d))
    vals_k = rng.integers(-8, 8, (b, s2, n * d))
    vals_v = rng.integers(-8, 8, (b, s2, n * d))

    def encode(vals: np.ndarray) -> np.ndarray:
        if form == "int4":
            return vals.astype(np.int8).astype(ml_dtypes.int4)
        nib = (vals & 0xF).astype(np.uint64).reshape(b, s2, -1, 8)
        words = (nib << (np.arange(8, dtype=np.uint64) * 4)).sum(-1)
        return words.astype(np.uint32).view(np.int32)

    ks = np.full((1, n * d), 0.05, np.float16)
    vs = np.full((1, n * d), 0.03, np.float16)
    out, _ = _run("torch-sdpa", query=q, key=encode(vals_k), value=encode(vals_v),
                  num_heads=n, scale=0.1, key_antiquant_scale=ks, value_antiquant_scale=vs,
                  inner_precise=0)

    def bnsd(x: np.ndarray) -> np.ndarray:
        return x.reshape(b, -1, n, d).transpose(0, 2, 1, 3)

    ref, _ = _dense(bnsd(q), bnsd(_deq(vals_k, ks, None)), bnsd(_deq(vals_v, vs, None)), 0.1)
    _close(out, ref.transpose(0, 2, 1, 3).reshape(b, 1, n * d))


@pytest.mark.parametrize("order", ["round_then_offset", "offset_then_round"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_post_quant_orders(order: str, per_channel: bool) -> None:
    rng = np.random.default_rng(19)
    b, n, s1, s2, d = 1, 2, 4, 6, 16
    q, k, v = _rand(rng, (b, n, s1, d)), _rand(rng, (b, n, s2, d)), _rand(rng, (b, n, s2, d))
    qs2 = (rng.random((n, d)) * 300 if per_channel else np.array([250.0])).astype(np.float32)
    qo2 = (rng.random(qs2.shape) * 6 - 3).astype(np.float32)
    runner = type(get_runner("torch-sdpa"))(device=_DEVICE, post_quant_order=order)
    out, _ = runner.run(dict(query=q, key=k, value=v, num_heads=n, input_layout="BNSD",
                             scale=0.5, quant_scale2=qs2, quant_offset2=qo2))
    assert out.dtype == np.int8
    x = _dense(q, k, v, 0.5)[0]
    bshape = (1, n, 1, d) if per_channel else (1, 1, 1, 1)
    qs, qo = qs2.reshape(bshape).astype(np.float64), qo2.reshape(bshape).astype(np.float64)
    if order == "offset_then_round":
        want = np.clip(np.round(x * qs + qo), -128, 127)
    else:
        want = np.clip(np.round(np.round(np.clip(x * qs, -256, 255)) + qo), -128, 127)
    # fp16 rounding of the kernel output and of x*scale moves a value by at most 1 LSB
    assert np.abs(out.astype(np.int64) - want).max() <= 1


def test_post_quant_rows_not_computed_stay_zero() -> None:
    rng = np.random.default_rng(23)
    q, k, v = _rand(rng, (2, 2, 4, 16)), _rand(rng, (2, 2, 6, 16)), _rand(rng, (2, 2, 6, 16))
    out, _ = _run("torch-sdpa", query=q, key=k, value=v, num_heads=2, input_layout="BNSD",
                  actual_seq_lengths=[2, 4], actual_seq_lengths_kv=[6, 0],
                  quant_scale2=np.array([50.0], np.float32),
                  quant_offset2=np.array([7.0], np.float32))
    assert not out[0, :, 2:].any() and not out[1].any()   # not the offset 7
    assert out[0, :, :2].any()


def test_metadata_names_versions_and_device(device: str) -> None:
    import torch

    meta = torch_runner("torch-sdpa", device).metadata()
    assert meta["torch"] == torch.__version__ and meta["device"] == device
    assert meta["runner"] == "torch-sdpa" and meta["device_name"]
    if device == "cuda":
        assert meta["device_name"] == torch.cuda.get_device_name(0)
    default = get_runner("torch-sdpa")  # CUDA when torch sees a GPU, else the CPU
    assert default.metadata()["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    npu = get_runner("npu").metadata()       # without importing torch_npu
    assert npu["torch_npu"] == "not installed" and npu["device"] == "npu:0"


# ---- refusals, lse flag --------------------------------------------------------

@pytest.mark.parametrize("extra,needle", [
    ({"query": TensorSpec((1, 1, 32), "int8"), "key": TensorSpec((1, 4, 32), "int8"),
      "value": TensorSpec((1, 4, 32), "int8")}, "full quantisation"),
    ({"key_rope_antiquant_scale": TensorSpec((1,), "float32")}, "key_rope_antiquant_scale"),
    ({"input_layout": "TND", "query": TensorSpec((4, 1, 32), "float16"),
      "key": TensorSpec((4, 1, 32), "float16"), "value": TensorSpec((4, 1, 32), "float16"),
      "actual_seq_lengths": [4], "actual_seq_lengths_kv": [4],
      "atten_mask": TensorSpec((4, 4), "bool")}, "packed"),
])
@pytest.mark.parametrize("name", RUNNERS)
def test_refuses_what_it_cannot_express_with_a_reason(name: str, extra: dict[str, Any],
                                                      needle: str) -> None:
    params = {"query": TensorSpec((1, 1, 32), "float16"), "key": TensorSpec((1, 4, 32), "float16"),
              "value": TensorSpec((1, 4, 32), "float16"), "num_heads": 1, **extra}
    ok, why = torch_runner(name, _DEVICE).supports(Case(params=params))
    assert not ok and needle in why and name in why


def test_supports_plain_and_feature_cases() -> None:
    params = {"query": TensorSpec((1, 1, 64), "float16"), "key": TensorSpec((1, 4, 64), "int8"),
              "value": TensorSpec((1, 4, 64), "int8"), "num_heads": 1,
              "antiquant_scale": TensorSpec((2,), "float16"),
              "learnable_sink": TensorSpec((1,), "float32")}
    assert torch_runner("torch-sdpa", _DEVICE).supports(Case(params=params)) == (True, "")


def test_lse_flag_off_gives_an_empty_placeholder() -> None:
    rng = np.random.default_rng(20)
    q, k, v = _rand(rng, (1, 2, 32)), _rand(rng, (1, 3, 32)), _rand(rng, (1, 3, 32))
    _, lse = _run("torch-sdpa", query=q, key=k, value=v, num_heads=2)
    assert lse.shape == (0,) and lse.dtype == np.float32


def test_bfloat16_round_trip() -> None:
    rng = np.random.default_rng(21)
    q, k, v = (_rand(rng, s, ml_dtypes.bfloat16) for s in ((1, 2, 3, 16), (1, 2, 5, 16),
                                                             (1, 2, 5, 16)))
    out, _ = _run("torch-math", query=q, key=k, value=v, num_heads=2, input_layout="BNSD")
    assert out.dtype == ml_dtypes.bfloat16
    _close(out, _dense(q, k, v, 1.0)[0], "bfloat16")
