"""Cost of the torch runners' composition, against the bare kernel in the same process.

Each scenario times `torch-sdpa` (the whole op: conversion, gather, bias,
kernel, scatter, back to NumPy), `torch-math`, and the bare fused CPU kernel
on tensors already laid out as BNSD with GQA expanded, and prints the ratios
runner / bare kernel. Scenarios: a plain fp16 BNSD prefill, a paged fp16
decode with per-batch lengths, and an int8-KV decode with per-token antiquant.

Run: .venv/bin/python benchmarks/bench_runners.py [--repeat 3]
Best-of-repeat; the load average is printed because the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from fia_fuzz.runners import get_runner


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _scenarios() -> dict[str, tuple[dict[str, Any], tuple[torch.Tensor, ...]]]:
    rng = np.random.default_rng(0)

    def r(*shape: int, dt: Any = np.float16) -> np.ndarray:
        return rng.standard_normal(shape, np.float32).astype(dt)

    out: dict[str, tuple[dict[str, Any], tuple[torch.Tensor, ...]]] = {}
    q, k, v = r(1, 8, 1024, 128), r(1, 8, 1024, 128), r(1, 8, 1024, 128)
    out["prefill B1 N8 S1024 D128"] = (
        {"query": q, "key": k, "value": v, "num_heads": 8, "input_layout": "BNSD",
         "scale": 0.088, "softmax_lse_flag": True},
        tuple(torch.from_numpy(x) for x in (q, k, v)))
    b, n, kvn, s2, d, bs = 16, 32, 8, 2048, 128, 128
    blocks = b * s2 // bs
    kc, vc = r(blocks, bs, kvn * d), r(blocks, bs, kvn * d)
    table = rng.permutation(blocks).astype(np.int32).reshape(b, s2 // bs)
    q = r(b, n, 1, d)
    kd = torch.from_numpy(r(b, n, s2, d))
    out["paged decode B16 N32 KV8 S2048"] = (
        {"query": q, "key": kc, "value": vc, "num_heads": n, "num_key_value_heads": kvn,
         "input_layout": "BNSD", "block_table": table, "block_size": bs, "scale": 0.088,
         "actual_seq_lengths_kv": [s2 - 7 * i for i in range(b)]},
        (torch.from_numpy(q), kd, kd))
    ki = rng.integers(-128, 128, (b, kvn, s2, d)).astype(np.int8)
    out["int8 KV decode per-token B16 N32 KV8 S2048"] = (
        {"query": q, "key": ki, "value": ki, "num_heads": n, "num_key_value_heads": kvn,
         "input_layout": "BNSD", "scale": 0.088, "antiquant_mode": 1,
         "antiquant_scale": (rng.random((2, b, s2)) * 0.01).astype(np.float32)},
        (torch.from_numpy(q), kd, kd))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    sdpa, math = get_runner("torch-sdpa"), get_runner("torch-math")
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    for name, (call, bare) in _scenarios().items():
        t_bare = _best(lambda bare=bare: kernel(*bare, scale=0.088), args.repeat)
        t_sdpa = _best(lambda call=call: sdpa.run(call), args.repeat)
        t_math = _best(lambda call=call: math.run(call), args.repeat)
        print(f"{name}: bare kernel {t_bare * 1e3:.1f} ms, torch-sdpa {t_sdpa * 1e3:.1f} ms "
              f"(x{t_sdpa / t_bare:.2f}), torch-math {t_math * 1e3:.1f} ms "
              f"(x{t_math / t_bare:.2f})")


if __name__ == "__main__":
    main()
