"""Exact casts to a float working type and OpenBLAS thread control (fia_fuzz/numerics)."""

import ml_dtypes
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


@pytest.mark.parametrize("source", [np.float16, ml_dtypes.bfloat16])
def test_half_cast_is_numpy_cast_and_tells_finiteness(source):
    """numerics/casts.py: every float16 and bfloat16 bit pattern, contiguous, strided and
    reversed, gives NumPy's bits in float32 and float64 (a signalling NaN comes out quiet,
    as the first arithmetic on it would make it), and cast_into says whether all were
    finite."""
    from fia_fuzz.numerics.casts import as_work, cast_into

    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(source)
    finite = bits[np.isfinite(bits.astype(np.float32))]
    for src in (bits, bits.reshape(256, 256)[:, ::3], bits.reshape(64, 4, 256)[:, 1:3],
                bits.reshape(256, 256)[::-1], finite, finite.reshape(-1, 2)[:, :1]):
        for dtype in (np.float32, np.float64):
            with np.errstate(invalid="ignore"):
                want = src.astype(dtype)
                want *= dtype(1)  # quiets signalling NaNs, leaves every other value as is
            got = np.empty(src.shape, dtype)
            assert cast_into(got, src) == bool(np.isfinite(want).all())
            assert got.tobytes() == want.tobytes()
            assert as_work(src, np.dtype(dtype)).tobytes() == want.tobytes()
    assert cast_into(np.empty(3), np.array([1, 2, 3], np.int8)) is None  # NumPy's cast


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
    got = [b.copy() for b, _ in work_blocks(src, np.dtype(np.float64), WIDTH)]
    want = [src[..., c:c + WIDTH, :].astype(np.float64) for c in range(0, src.shape[-2],
                                                                         WIDTH)]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    same = src.astype(np.float32)
    assert all(np.shares_memory(b, same) and finite is None
               for b, finite in work_blocks(same, np.dtype(np.float32), WIDTH))
