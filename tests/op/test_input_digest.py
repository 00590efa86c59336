"""A case's input digest follows every bit the call holds: each array's dtype, shape, view
and bytes, every other argument, and of a lazy paged cache only the blocks that hold data
(its zero pages, gigabytes of them, are never read)."""

from __future__ import annotations

import time

import numpy as np
from far_case import FAR, far_case

from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.values import lazy_blocks


def _case(seed: int = 3, **over: object) -> Case:
    params = {"query": TensorSpec((1, 4, 64), "bfloat16"),
              "key": TensorSpec((1, 32, 64), "float16"),
              "value": TensorSpec((1, 32, 64), "float16"), "num_heads": 1,
              "input_layout": "BSH", **over}
    return Case(params=params, fills={"query": {"dist": "normal", "scale": 2.0}}, seed=seed)


def test_same_case_same_digest_and_each_part_counts() -> None:
    call = _case().call()
    d = input_digest(call)
    assert len(d) == 16 and int(d, 16) >= 0
    assert input_digest(_case().call()) == d
    assert input_digest(_case(seed=4).call()) != d
    assert input_digest(_case(scale=0.5).call()) != d  # an attribute
    flipped = dict(call, value=call["value"].copy())
    flipped["value"].view(np.uint16)[0, 5, 7] ^= 1  # one bit of one element
    assert input_digest(flipped) != d
    # the same bytes as another dtype or shape are other inputs
    assert input_digest(dict(call, value=call["value"].view(np.int16))) != d
    assert input_digest(dict(call, value=call["value"].reshape(1, 64, 32))) != d


def test_a_strided_view_counts_its_strides_and_offset() -> None:
    contiguous = _case()
    fused = TensorSpec((1, 32, 64), "float16", strides=(32 * 128, 128, 1), offset=64)
    viewed = _case(key=fused)
    c, v = contiguous.call(), viewed.call()
    assert np.array_equal(c["key"], v["key"])  # the same values ...
    assert input_digest(c) != input_digest(v)  # ... but not the same call
    assert input_digest(viewed.call()) == input_digest(v)


def test_a_lazy_cache_is_hashed_by_its_data_blocks_only() -> None:
    """Two caches of 8 GiB each: hashing every page would take seconds and touch them all."""
    call = far_case().call()
    assert list(lazy_blocks(call["key"])) == [FAR, FAR + 1, FAR + 2, FAR + 3]
    t0 = time.perf_counter()
    d = input_digest(call)
    assert time.perf_counter() - t0 < 2.0
    assert input_digest(far_case().call()) == d
    call["key"][0, 0, 0] = 1.0  # a block no request reads: no input of the case
    assert input_digest(call) == d
    call["key"][FAR + 1, 3, 5] = call["key"][FAR + 1, 3, 5] + 1  # one it reads
    assert input_digest(call) != d
