"""golden/job.py runs a job in one compiled call: its results are core.py's block loop bit
for bit, and it hands back (to core.py) what it does not take."""

import ml_dtypes
import numpy as np
import pytest

import fia_fuzz.golden.core as core
from fia_fuzz.golden import job
from fia_fuzz.golden import npu_fused_infer_attention_score as golden

if job._BLAS is None:
    pytest.skip("no OpenBLAS gemm/gemv found for the compiled job", allow_module_level=True)


def _both(monkeypatch: pytest.MonkeyPatch, *args, **kwargs) -> tuple[list, list, list[bool]]:
    """(outputs with golden/job.py, outputs with core.py's loop only, its answers)."""
    answers: list[bool] = []

    def counted(*a, **k) -> bool:
        answers.append(job.run_job(*a, **k))
        return answers[-1]

    monkeypatch.setattr(core, "run_job", counted)
    fused = [np.asarray(x) for x in golden(*args, **kwargs)]
    monkeypatch.setattr(core, "run_job", lambda *a, **k: False)
    plain = [np.asarray(x) for x in golden(*args, **kwargs)]
    return fused, plain, answers


#: (B, N, KV_N, S1, S2, D, sink, layout): decode (last block of 1 key: handed back; of 2
#: keys; an exact block multiple), a one-tile MTP-like S1 of 3, several row tiles with a last
#: tile of one row (gemv) and of 44 rows, BNSD and BSND (K/V rows apart).
SHAPES = [(3, 8, 2, 1, 1025, 128, False, "BNSD"), (2, 4, 4, 1, 1026, 64, True, "BSND"),
          (1, 16, 1, 1, 512, 128, False, "BNSD"), (2, 6, 3, 3, 700, 64, True, "BSND"),
          (1, 2, 1, 129, 600, 64, False, "BNSD"), (1, 4, 2, 300, 1100, 64, True, "BSND")]


@pytest.mark.parametrize("precision", ["device", "fp64"])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_compiled_job_is_the_block_loop_bit_for_bit(monkeypatch, precision, dtype):
    """Every output and lse bit the same as core.py's loop, and the compiled job ran."""
    rng = np.random.default_rng(5)
    ran = 0
    for b, n, kvn, s1, s2, d, sink, layout in SHAPES:
        q = rng.standard_normal((b, n, s1, d)).astype(dtype)
        k = (rng.standard_normal((b, kvn, s2, d)) * 3).astype(dtype)
        v = rng.standard_normal((b, kvn, s2, d)).astype(dtype)
        if layout == "BSND":
            q, k, v = (np.ascontiguousarray(x.transpose(0, 2, 1, 3)) for x in (q, k, v))
        kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": layout,
              "scale": 1 / np.sqrt(d), "softmax_lse_flag": True, "precision": precision}
        if sink:
            kw["learnable_sink"] = rng.standard_normal(n).astype(np.float32)
        fused, plain, answers = _both(monkeypatch, q, k, v, **kw)
        assert [x.tobytes() for x in fused] == [x.tobytes() for x in plain], (s1, s2, layout)
        ran += sum(answers)
    assert ran > 0


@pytest.mark.parametrize("s1", [1, 300])
def test_compiled_job_hands_back_a_non_finite_v_and_a_masked_call(monkeypatch, s1):
    """A NaN in V (masked keys must not reach the output: core.py's masked product) and a
    call with key lengths (padding excluded) are core.py's; results as core.py's."""
    rng = np.random.default_rng(6)
    q = rng.standard_normal((2, 4, s1, 64)).astype(np.float16)
    k, v = (rng.standard_normal((2, 2, 900, 64)).astype(np.float16) for _ in range(2))
    v[1, 0, 700, 5] = np.nan
    kw = {"num_heads": 4, "num_key_value_heads": 2, "input_layout": "BNSD", "scale": 0.125,
          "softmax_lse_flag": True}
    fused, plain, answers = _both(monkeypatch, q, k, v, **kw)
    assert [x.tobytes() for x in fused] == [x.tobytes() for x in plain]
    assert np.isnan(fused[0][1, :2]).any()
    assert s1 > 1 or False in answers  # a decode job meets the NaN block and hands back


def test_compiled_job_takes_excluded_pairs_bit_for_bit(monkeypatch):
    """Key lengths that leave padding inside a job's column span, and a causal mask: the
    excluded pairs go in as one array, results as core.py's."""
    rng = np.random.default_rng(7)
    for s1 in (1, 300):
        q = rng.standard_normal((3, 4, s1, 64)).astype(np.float16)
        k, v = (rng.standard_normal((3, 2, 900, 64)).astype(np.float16) for _ in range(2))
        kw = {"num_heads": 4, "num_key_value_heads": 2, "input_layout": "BNSD",
              "scale": 0.125, "softmax_lse_flag": True, "actual_seq_lengths_kv": [900, 600, 3]}
        fused, plain, answers = _both(monkeypatch, q, k, v, **kw)
        assert [x.tobytes() for x in fused] == [x.tobytes() for x in plain]
        assert answers and all(answers)


def test_compiled_job_is_the_block_loop_on_drawn_nightly_cases(monkeypatch):
    """Seeded nightly draws (masks, packed and paged layouts, sinks, quantised calls that it
    hands back): each golden's output and lse the same bits with and without it."""
    import random

    from fia_fuzz.strategies.cases import build
    from fia_fuzz.strategies.choices import Dead, RandomChooser
    from fia_fuzz.strategies.draft import PROFILES
    from fia_fuzz.strategies.families import FAMILIES

    taken = 0
    for i in range(80):
        try:
            case = build(RandomChooser(random.Random(1000 + i), {}), PROFILES["nightly"],
                         list(FAMILIES), {})
        except Dead:
            continue
        call = case.call()
        if np.asarray(call["query"]).size > 1 << 20:
            continue  # the large draws cost seconds each; the small ones reach every form
        for precision in ("device", "fp64"):
            fused, plain, answers = _both(monkeypatch, precision=precision, **call)
            assert [x.tobytes() for x in fused] == [x.tobytes() for x in plain], case.case_id
            taken += sum(answers)
    assert taken > 0
