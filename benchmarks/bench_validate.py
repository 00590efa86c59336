"""Cost of `validate` per call, as a ratio against the golden on the same small calls.

`validate` runs once per drawn case, so it must stay negligible next to the
cheapest reference computation. Prints microseconds per call and the ratio
validate / golden (both measured here, in this process).

    .venv/bin/python benchmarks/bench_validate.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate

CALLS: dict[str, dict[str, Any]] = {
    "prefill BNSD GQA": {"query": TensorSpec((2, 8, 16, 64), "float16"),
                         "key": TensorSpec((2, 2, 64, 64), "float16"),
                         "value": TensorSpec((2, 2, 64, 64), "float16"),
                         "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD"},
    "decode BSH": {"query": TensorSpec((4, 1, 512), "float16"),
                   "key": TensorSpec((4, 128, 128), "float16"),
                   "value": TensorSpec((4, 128, 128), "float16"),
                   "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BSH",
                   "actual_seq_lengths_kv": [100, 128, 7, 64]},
    "prefill masked": {"query": TensorSpec((2, 4, 32, 64), "bfloat16"),
                       "key": TensorSpec((2, 4, 64, 64), "bfloat16"),
                       "value": TensorSpec((2, 4, 64, 64), "bfloat16"),
                       "num_heads": 4, "input_layout": "BNSD", "sparse_mode": 3,
                       "atten_mask": TensorSpec((2048, 2048), "bool"),
                       "softmax_lse_flag": True},
}


def per_call(fn: Callable[[], Any], seconds: float = 0.5) -> float:
    """Mean seconds per call over at least `seconds` of repetitions (after a warm-up)."""
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return (time.perf_counter() - start) / n


def main() -> None:
    print(f"{'call':<18} {'validate us':>12} {'golden us':>10} {'validate/golden':>16}")
    for name, specs in CALLS.items():
        arrays = Case(params=specs, seed=1).call()
        t_val = per_call(lambda s=specs: validate(**s))
        try:
            t_gold = per_call(lambda a=arrays: npu_fused_infer_attention_score(**a))
        except Exception as exc:  # the golden may not cover every feature yet
            print(f"{name:<18} {t_val * 1e6:>12.0f} {'n/a':>10} {type(exc).__name__:>16}")
            continue
        print(f"{name:<18} {t_val * 1e6:>12.0f} {t_gold * 1e6:>10.0f} "
              f"{t_val / t_gold:>16.3f}")


if __name__ == "__main__":
    main()
