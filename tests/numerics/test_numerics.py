"""Exact casts to a float working type and OpenBLAS thread control (fia_fuzz/numerics)."""

import numpy as np
import pytest

#: A block width for work_blocks (the golden's KV block is one such).
WIDTH = 512


def test_single_threaded_blas_restores_the_setting():
    from fia_fuzz.numerics import blas

    if blas._BLAS is None:
        pytest.skip("no OpenBLAS loaded")
    before = blas._BLAS[1]()
    with blas.single_threaded_blas():
        assert blas._BLAS[1]() == 1
    assert blas._BLAS[1]() == before


def test_fast_float16_cast_is_numpy_cast():
    """numerics/casts.py: torch's cast gives NumPy's bits for every float16, except that a
    signalling NaN comes out quiet (as the first arithmetic on it would make it)."""
    pytest.importorskip("torch")  # imported: casts.py takes torch's path at any size
    from fia_fuzz.numerics.casts import _torch, as_work, cast_into

    assert _torch(1) is not None

    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    strided = bits.reshape(256, 256)[:, ::3]
    for dtype in (np.float32, np.float64):
        want = strided.astype(dtype)
        want *= dtype(1)  # quiets signalling NaNs, leaves every other value (and -0) as is
        got = np.empty(strided.shape, dtype)
        cast_into(got, strided)
        assert got.tobytes() == want.tobytes()
        assert as_work(strided, np.dtype(dtype)).tobytes() == want.tobytes()


def test_blas_core_names_the_core_openblas_runs():
    """blas_core reports the kernel set, here the one OPENBLAS_CORETYPE forces at load."""
    import os
    import subprocess
    import sys

    from fia_fuzz.numerics import blas

    if blas._BLAS is None or blas._BLAS[2] is None:
        pytest.skip("no OpenBLAS with a core name in this process")
    env = {**os.environ, "OPENBLAS_CORETYPE": "Nehalem"}
    got = subprocess.run([sys.executable, "-c", "from fia_fuzz.numerics.blas import blas_core;"
                          " print(blas_core())"], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert got == ["Nehalem"]


def test_work_blocks_convert_every_block_exactly():
    """Blocks along axis -2 with a short last one; float16 converted (into a reused buffer),
    float32 passed through as views of the source."""
    from fia_fuzz.numerics.casts import work_blocks

    rng = np.random.default_rng(8)
    src = rng.standard_normal((2, 3, 1, 2 * WIDTH + 7, 16)).astype(np.float16)
    got = [b.copy() for b in work_blocks(src, np.dtype(np.float64), WIDTH)]
    want = [src[..., c:c + WIDTH, :].astype(np.float64) for c in range(0, src.shape[-2],
                                                                         WIDTH)]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    same = src.astype(np.float32)
    assert all(np.shares_memory(b, same) for b in work_blocks(same, np.dtype(np.float32),
                                                              WIDTH))
