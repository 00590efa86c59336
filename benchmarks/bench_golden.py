"""Golden model speed and memory, measured against torch's SDPA in the same process.

Speed: three fp16 BNSD shapes, full attention, the golden in device
precision and at fp64, each as a ratio to
torch.nn.functional.scaled_dot_product_attention in float32 on CPU on the same
data (GQA through `enable_gqa`). Targets: device <= 1.0x, fp64 <= 2.0x.
Memory: peak RSS of the golden pair
(fp64 and device, what a campaign computes) on B=1 N=1 S1=S2=32768 D=128 and on
the decode B=1 N=8 KV_N=1 S2=131072 D=128 in a fresh subprocess (VmHWM; target
< 2 GiB each).

Run: .venv/bin/python benchmarks/bench_golden.py [--repeat 3] [--skip-memory]
     [--shape decode|gqa|prefill ...] [--cpu] [--blas]
Timings are best-of-repeat, the three sides interleaved; the load average is
printed with each shape because a busy shared machine slows the sides differently.
--cpu times process CPU seconds instead of wall seconds, with torch on one thread
(its idle OpenMP threads would spin on the clock; the golden's threads do not): on
a machine loaded past its core count wall time mostly measures the other processes.
The header names the OpenBLAS core the golden's matmuls ran on (torch's SDPA does
not use it; `numerics/blas.py` asks OpenBLAS itself): the prefill shapes are bound
by those matmuls. Measure with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset in the
command (`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ...`), so OpenBLAS picks its kernels
for the CPU. --blas adds the floor that sets, per precision: the golden's two matmuls (the
same BLAS calls on the same tiles) plus one exp over the scores, nothing else, K/V
converted to the working type outside the timing; and the golden's time as a ratio to
it (target <= FLOOR_TARGET). The golden converts float16 K/V inside its timing (on
decode, block by block inside golden/job.py's compiled job).
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.golden.core import KV_BLOCK, ROW_TILE_ELEMENTS, WORK
from fia_fuzz.golden.threads import run_all, tile_threads
from fia_fuzz.numerics.blas import blas_core

#: name -> (B, N, KV_N, S1, S2, D): decode, GQA prefill, and plain prefill.
SHAPES = {
    "decode": (16, 32, 8, 1, 8192, 128),
    "gqa": (4, 32, 8, 512, 4096, 128),
    "prefill": (1, 8, 8, 2048, 2048, 128),
}
#: name -> (B, N, KV_N, S1, S2, D) of the peak-RSS children.
MEMORY_SHAPES = {
    "prefill-32k": (1, 1, 1, 32768, 32768, 128),
    "decode-128k": (1, 8, 1, 1, 131072, 128),
}
TARGETS = {"device": 1.0, "fp64": 2.0}
#: The golden's time over its floor (matmuls + one exp), each precision.
FLOOR_TARGET = 1.15


def data(b: int, n: int, kvn: int, s1: int, s2: int, d: int, seed: int = 0
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal fp16 q (B,N,S1,D), k and v (B,KV_N,S2,D)."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape, np.float32).astype(np.float16)
                 for shape in ((b, n, s1, d), (b, kvn, s2, d), (b, kvn, s2, d)))


def best(fns: dict[str, Callable[[], Any]], repeat: int,
         clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Best-of-`repeat` seconds of each function, run in turns after one warm-up each."""
    for fn in fns.values():
        fn()
    times = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            times[name] = min(times[name], clock() - t0)
    return times


def sdpa_fp32(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float
              ) -> Callable[[], Any]:
    """torch SDPA in float32 on CPU over BNSD fp16 data (converted once, outside the timing)."""
    import torch

    tq, tk, tv = (torch.from_numpy(x.astype(np.float32)) for x in (q, k, v))
    gqa = tq.shape[1] != tk.shape[1]

    def run() -> Any:
        with torch.no_grad():
            return torch.nn.functional.scaled_dot_product_attention(
                tq, tk, tv, scale=scale, enable_gqa=gqa)
    return run


def floor(q: np.ndarray, k: np.ndarray, v: np.ndarray, precision: str) -> Callable[[], Any]:
    """The golden's Q·K^T and P·V of full attention on BNSD q/k/v plus one in-place exp over
    each block of scores, and nothing else: row tiles of ROW_TILE_ELEMENTS scores per head
    times KV_BLOCK-column blocks, one NumPy call per tile and block over the batches and a KV
    head's query heads (the golden's BLAS calls), in the working type, one KV head a job on
    the golden's tile threads. K/V are converted to the working type outside the timing."""
    work = WORK[precision]
    b, n, s1, d = q.shape
    kvn, s2 = k.shape[1], k.shape[2]
    qw = q.astype(work).reshape(b, kvn, n // kvn, s1, d)
    kw, vw = (x.astype(work) for x in (k, v))
    rows = min(s1, max(1, ROW_TILE_ELEMENTS // min(KV_BLOCK, s2)))
    p = np.full((b, n // kvn, rows, KV_BLOCK), 0.5, work)

    def kv_head(h: int) -> None:
        kh, vh = kw[:, h, None], vw[:, h, None]
        for r0 in range(0, s1, rows):
            qt = qw[:, h, :, r0:r0 + rows]
            for c0 in range(0, s2, KV_BLOCK):
                s = np.matmul(qt, kh[..., c0:c0 + KV_BLOCK, :].swapaxes(-1, -2))
                np.exp(s, out=s)
                np.matmul(p[:, :, :qt.shape[2], :s.shape[-1]], vh[..., c0:c0 + KV_BLOCK, :])
    return lambda: run_all(kv_head, range(kvn))


def speed(names: list[str], repeat: int, cpu: bool = False, blas: bool = False) -> None:
    import torch

    if cpu:
        torch.set_num_threads(1)
    print(f"golden tile threads {tile_threads()}, torch threads {torch.get_num_threads()}, "
          f"{os.cpu_count()} CPUs; best of {repeat}; {'CPU' if cpu else 'wall'} seconds; "
          f"OpenBLAS core {blas_core()} "
          f"(OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', 'unset')})")
    print(f"{'shape':<44} {'SDPA s':>8} {'device s':>9} {'ratio':>7} {'fp64 s':>8} "
          f"{'ratio':>7}  load" + ("   golden/floor: device  fp64" if blas else ""))
    for name in names:
        b, n, kvn, s1, s2, d = SHAPES[name]
        q, k, v = data(b, n, kvn, s1, s2, d)
        scale = 1 / np.sqrt(d)
        kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": "BNSD",
              "scale": scale}
        load = os.getloadavg()[0]
        fns = {"sdpa": sdpa_fp32(q, k, v, scale),
               "device": functools.partial(npu_fused_infer_attention_score, q, k, v, **kw),
               "fp64": functools.partial(npu_fused_infer_attention_score, q, k, v,
                                         precision="fp64", **kw)}
        if blas:
            fns |= {f"floor-{p}": floor(q, k, v, p) for p in ("device", "fp64")}
        t = best(fns, repeat, time.process_time if cpu else time.perf_counter)
        load = max(load, os.getloadavg()[0])
        label = f"{name} B{b} N{n} KV_N{kvn} S1={s1} S2={s2} D{d}"
        print(f"{label:<44} {t['sdpa']:8.3f} {t['device']:9.3f} "
              f"{t['device'] / t['sdpa']:6.2f}x {t['fp64']:8.3f} {t['fp64'] / t['sdpa']:6.2f}x"
              f"  {load:.1f}" + (f"  {t['device'] / t['floor-device']:19.2f}x "
                                   f"{t['fp64'] / t['floor-fp64']:5.2f}x" if blas else ""))
        if blas:
            print(f"{'':<44} floor s: device {t['floor-device']:.3f} fp64 {t['floor-fp64']:.3f}")
    print(f"targets: device <= {TARGETS['device']}x, fp64 <= {TARGETS['fp64']}x SDPA fp32"
          + (f"; golden <= {FLOOR_TARGET}x its floor (matmuls + one exp) in each precision"
             if blas else ""))


def peak_rss_kib() -> int:
    """This process's peak RSS in KiB: VmHWM, which (unlike getrusage's ru_maxrss) does not
    inherit the high-water mark of the parent that forked it."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_child(name: str) -> None:
    b, n, kvn, s1, s2, d = MEMORY_SHAPES[name]
    q, k, v = data(b, n, kvn, s1, s2, d)
    t0 = time.perf_counter()
    for precision in ("fp64", "device"):
        npu_fused_infer_attention_score(q, k, v, num_heads=n, num_key_value_heads=kvn,
                                        input_layout="BNSD", scale=1 / np.sqrt(d),
                                        softmax_lse_flag=True, precision=precision)
    print(f"{peak_rss_kib()} {time.perf_counter() - t0:.1f}")


def memory() -> None:
    print("peak RSS of the golden pair (fp64 + device) in a fresh process, target < 2 GiB")
    for name, (b, n, kvn, s1, s2, d) in MEMORY_SHAPES.items():
        res = subprocess.run([sys.executable, __file__, "--memory-child", name], check=True,
                             capture_output=True, text=True)
        peak_kib, seconds = res.stdout.split()
        print(f"  {name} B{b} N{n} KV_N{kvn} S1={s1} S2={s2} D{d}: "
              f"{int(peak_kib) / (1 << 20):.3f} GiB, {seconds} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES))
    parser.add_argument("--cpu", action="store_true",
                        help="process CPU seconds, torch on one thread (for a loaded machine)")
    parser.add_argument("--blas", action="store_true",
                        help="also time the golden's floor (its matmuls and one exp) and "
                             "print the golden's ratio to it")
    parser.add_argument("--memory-child", choices=sorted(MEMORY_SHAPES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    speed(args.shape or list(SHAPES), args.repeat, args.cpu, args.blas)
    if not args.skip_memory:
        memory()


if __name__ == "__main__":
    main()
