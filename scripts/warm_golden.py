"""Compile the golden's kernels (golden/kernels.py, golden/job.py, numerics/casts.py) into
numba's cache beside them, so the first golden call of each later process (campaign workers,
test workers) loads them instead of compiling: a tiny golden pair per input dtype and
precision, with several query rows and with one (a decode job)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score


def main() -> None:
    for dtype, s1 in itertools.product((np.float16, ml_dtypes.bfloat16), (4, 1)):
        q, k, v = (np.ones(shape, np.float32).astype(dtype)
                   for shape in ((1, 2, s1, 16), (1, 2, 8, 16), (1, 2, 8, 16)))
        for precision in ("device", "fp64"):
            npu_fused_infer_attention_score(q, k, v, num_heads=2, input_layout="BNSD",
                                            scale=0.25, precision=precision)


if __name__ == "__main__":
    main()
