"""The far paged case tests share: a lazy cache reaching past 2^32 elements."""

from __future__ import annotations

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec

BLOCK, H = 128, 128  # KV_N 1 x D 128: a block holds 2^14 elements
FAR = (1 << 32) // (BLOCK * H)  # first block id whose start is 2^32 elements in


def far_case() -> Case:
    """Decode BSH over a BnBsH cache of FAR + 4 blocks, 8 GiB each for key and value; two
    batches reference blocks FAR.. only (one partly filled, shuffled)."""
    cache = TensorSpec((FAR + 4, BLOCK, H), "bfloat16")
    lazy = {"dist": "normal", "scale": 1.0, "blocks": "referenced"}
    return Case(params={"query": TensorSpec((2, 1, 4 * H), "bfloat16"), "key": cache,
                        "value": cache, "num_heads": 4, "num_key_value_heads": 1,
                        "input_layout": "BSH", "block_table": [[FAR + 2, FAR, -1],
                                                               [FAR + 3, FAR + 1, FAR]],
                        "block_size": BLOCK, "actual_seq_lengths_kv": [200, 300]},
                fills={"key": lazy, "value": dict(lazy)}, seed=5)
