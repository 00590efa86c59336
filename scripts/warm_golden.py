"""Compile the golden's kernels (golden/kernels.py, golden/job.py, numerics/casts.py) into
numba's cache beside them, so the first golden call of each later process (campaign workers,
test workers) loads them instead of compiling: tiny golden pairs per input dtype and
precision, in the forms that type the compiled job differently (contiguous BNSD and strided
BSND K/V; one row tile of several query rows and of one, a decode job; a GQA job converting
its KV heads once)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score

#: (layout, N, KV_N, S1, S2): a row tile of 4 rows, decode, and a GQA tile of 128 rows whose
#: heads exceed a tile (its KV heads converted once).
FORMS = [(layout, n, kvn, s1, s2) for layout in ("BNSD", "BSND")
         for n, kvn, s1, s2 in ((2, 2, 4, 8), (2, 2, 1, 8), (8, 2, 128, 512))]


def main() -> None:
    for dtype, (layout, n, kvn, s1, s2) in itertools.product(
            (np.float16, ml_dtypes.bfloat16), FORMS):
        q, k, v = (np.ones(shape, np.float32).astype(dtype)
                   for shape in ((1, n, s1, 16), (1, kvn, s2, 16), (1, kvn, s2, 16)))
        if layout == "BSND":
            q, k, v = (np.ascontiguousarray(x.transpose(0, 2, 1, 3)) for x in (q, k, v))
        for precision in ("device", "fp64"):
            npu_fused_infer_attention_score(q, k, v, num_heads=n, num_key_value_heads=kvn,
                                            input_layout=layout, scale=0.25,
                                            precision=precision)


if __name__ == "__main__":
    main()
