"""Golden model speed and memory, measured against torch's SDPA in the same process.

Speed: B=1, N=8, S1=S2=2048, D=128 fp16 BNSD prefill, golden in device
precision vs torch.nn.functional.scaled_dot_product_attention in float32 on
CPU on the same data (issue 5 target: ratio <= 2).
Memory: B=1, N=1, S1=S2=32768, D=128 fp16 in a fresh subprocess, peak RSS
from resource.getrusage (target < 2 GiB).

Run: .venv/bin/python benchmarks/bench_golden.py [--repeat 3] [--skip-memory]
Both timings are best-of-repeat; the load average is printed because a busy
machine slows the two sides differently.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.threads import tile_threads


def _data(b: int, n: int, s: int, d: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((b, n, s, d), np.float32).astype(np.float16)
                 for _ in range(3))


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def speed(repeat: int) -> None:
    import torch

    b, n, s, d = 1, 8, 2048, 128
    q, k, v = _data(b, n, s, d)
    scale = 1 / np.sqrt(d)
    tq, tk, tv = (torch.from_numpy(x.astype(np.float32)) for x in (q, k, v))

    def golden() -> None:
        npu_fused_infer_attention_score(q, k, v, num_heads=n, input_layout="BNSD", scale=scale)

    def sdpa() -> None:
        with torch.no_grad():
            torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=scale)

    golden()
    sdpa()
    t_golden, t_sdpa = _best(golden, repeat), _best(sdpa, repeat)
    print(f"speed  B={b} N={n} S1=S2={s} D={d} fp16 BNSD prefill, device precision")
    print(f"  golden {t_golden:.3f} s   torch SDPA fp32 CPU {t_sdpa:.3f} s   "
          f"ratio {t_golden / t_sdpa:.2f}x (target <= 2x)")
    print(f"  golden tile threads {tile_threads()}, torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def memory_child() -> None:
    s, d = 32768, 128
    q, k, v = _data(1, 1, s, d)
    t0 = time.perf_counter()
    npu_fused_infer_attention_score(q, k, v, num_heads=1, input_layout="BNSD",
                                    scale=1 / np.sqrt(d), softmax_lse_flag=True)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{peak_kib} {time.perf_counter() - t0:.1f}")


def memory() -> None:
    res = subprocess.run([sys.executable, __file__, "--memory-child"], check=True,
                         capture_output=True, text=True)
    peak_kib, seconds = res.stdout.split()
    gib = int(peak_kib) / (1 << 20)
    print("memory B=1 N=1 S1=S2=32768 D=128 fp16 BNSD, device precision")
    print(f"  peak RSS {gib:.3f} GiB (target < 2 GiB), {seconds} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child()
        return
    speed(args.repeat)
    if not args.skip_memory:
        memory()


if __name__ == "__main__":
    main()
