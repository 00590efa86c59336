"""Materialisation is pinned per fill, so stored case JSONs and bundles reproduce.

Shapes cross the chunk boundary (whole rows per chunk, rows longer than a chunk, 1-D,
scalars); every dist and its usual dtypes are covered. A broken digest says which side
moved: NumPy's PCG64 stream (pinned on its own here), our narrowing (the sibling test
compares materialise with the rational reference of tests/numerics, no ml_dtypes), or
else the float64 value formulas of op/values.py.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import numpy as np
import pytest

from fia_fuzz.numerics.narrow import narrow
from fia_fuzz.op import values
from fia_fuzz.op.tensors import FOREIGN_DTYPES, NUMPY_DTYPES, TensorSpec, describe
from fia_fuzz.op.values import CHUNK, materialise, raw_bits
from tests.numerics.rounding_reference import vector_bits

pytestmark = pytest.mark.compat

SHAPES = [(), (7,), (3, 5), (300, 700), (1000, 129), (2, 3, 40000), (70001,)]
FILLS = {
    "normal": ({"dist": "normal", "scale": 1.0}, ("float16", "bfloat16", "float32")),
    "normal tiny": ({"dist": "normal", "scale": 3e-5}, ("float16", "bfloat16", "float32")),
    "normal huge": ({"dist": "normal", "scale": 2e4}, ("float16", "bfloat16", "float32")),
    "uniform": ({"dist": "uniform", "scale": 1e-6}, ("float16", "bfloat16", "float32")),
    "negative": ({"dist": "negative", "scale": 7.0}, ("float16", "bfloat16", "float32")),
    "positive": ({"dist": "positive", "scale": 0.01}, ("float16", "bfloat16", "float32")),
    "const_rows": ({"dist": "const_rows", "scale": 2.0}, ("float16", "bfloat16", "float32")),
    "const": ({"dist": "const", "value": 0.3}, ("float16", "bfloat16", "float32")),
    "outlier": ({"dist": "outlier", "scale": 1.0, "outlier": 300.0}, ("float16", "bfloat16")),
    "large": ({"dist": "large", "fraction": 0.9, "scale": 1e9}, ("float16", "bfloat16", "float32")),
    "large signed": ({"dist": "large", "sign": -1, "scale": 1e6}, ("float16", "bfloat16")),
    "range": ({"dist": "range", "low": -3.0, "high": 5.5}, ("float16", "bfloat16", "float32")),
    "bernoulli": ({"dist": "bernoulli", "p": 0.3}, ("bool", "int8", "uint8", "float16")),
    "triu": ({"dist": "triu", "k": -2}, ("bool", "int8", "uint8", "float16")),
    "zeros": ({"dist": "zeros"}, ("bool", "int8")),
    "ones": ({"dist": "ones"}, ("bool", "uint8")),
    "nearly_full": ({"dist": "nearly_full"}, ("bool", "int8", "uint8")),
    "int8": ({"dist": "int", "low": -128, "high": 127}, ("int8", "int32")),
    "int odd span": ({"dist": "int", "low": -5, "high": 94}, ("int8", "int32")),
    "uint8": ({"dist": "int", "low": 0, "high": 255}, ("uint8", "int32")),
    "int4": ({"dist": "int", "low": -8, "high": 7}, ("int4", "int8")),
    "u64_scale": ({"dist": "u64_scale", "value": 0.37}, ("uint64",)),
}
PINNED = {
    "normal": "f3a51eaa118aa70f",
    "normal tiny": "ce70dfd99b0723aa",
    "normal huge": "24516a4d1c864435",
    "uniform": "450f508ae8802fa0",
    "negative": "b33349125180045a",
    "positive": "ed62bc3db62b3011",
    "const_rows": "f23bb9919eefa530",
    "const": "df36cace69970e13",
    "outlier": "84718db2499e554d",
    "large": "ac2e77a1b744e2af",
    "large signed": "ef9af11eff0b2d2b",
    "range": "3c0d5e39127116f6",
    "bernoulli": "968ca482d0462d0f",
    "triu": "277bf939052ad5b7",
    "zeros": "c29e49278ee54037",
    "ones": "322cfb27648cb8f2",
    "nearly_full": "1bab05c9b4f3b071",
    "int8": "238f9f483ece2579",
    "int odd span": "2181975796dfd60f",
    "uint8": "f96f2709132333c5",
    "int4": "ce3d97949b038713",
    "u64_scale": "076f37bd09a04aeb",
}


#: NumPy's SeedSequence + PCG64 words for one (seed, name, index): NEP 19 keeps them stable.
RAW_PINNED = "b5b8a0a8d4681a3c"
_NAMES = {np.dtype(NUMPY_DTYPES[n]): n for n in ("float16", "bfloat16", "float32")}
_UINT = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32}


def _raw_digest() -> str:
    return hashlib.sha256(raw_bits(1234567, "query", 0, 4096).tobytes()).hexdigest()[:16]


def _reference_narrow(x, dtype) -> np.ndarray:
    """The stated rounding of floats by tests/numerics/rounding_reference.py's grid search
    (no ml_dtypes, no step of numerics/narrow.py); integers and exact casts as narrow."""
    a, name = np.asarray(x), _NAMES.get(np.dtype(dtype))
    if name is None or a.dtype.kind in "biu" or a.dtype == np.dtype(dtype):
        return narrow(a, dtype)
    return vector_bits(a.astype(np.float64), name).astype(_UINT[name]).view(np.dtype(dtype))


@contextlib.contextmanager
def _reference_narrowing() -> Iterator[None]:
    """materialise with op/values.py's `narrow` swapped for the reference."""
    saved = values.narrow
    values._normal_table.cache_clear()
    values.narrow = _reference_narrow
    try:
        yield
    finally:
        values.narrow = saved
        values._normal_table.cache_clear()


def _which_side_moved(label: str) -> str:
    if _raw_digest() != RAW_PINNED:
        return "NumPy's PCG64/SeedSequence stream moved (a library): op/values.py `_stream`"
    with _reference_narrowing():
        reference = _digest(*FILLS[label])
    if reference == PINNED[label]:
        return ("our narrowing (numerics/narrow.py) moved: the reference rounding of the same "
                "float64 values gives the pinned bits")
    return "the stream stands and the reference differs too: op/values.py's formulas moved"


def _digest(fill: dict, dtypes: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for dt in dtypes:
        for i, shape in enumerate(SHAPES):
            if fill["dist"] in ("triu", "nearly_full") and len(shape) < 2:
                continue
            a = materialise(TensorSpec(shape, dt), fill, 1234567 + i, "query", i % 2)
            h.update(f"{a.dtype} {a.shape}".encode())
            h.update(a.tobytes())
    return h.hexdigest()[:16]


def test_the_shapes_cross_chunk_boundaries() -> None:
    assert any(len(s) > 1 and s[-1] < CHUNK < s[0] * s[-1] for s in SHAPES)
    assert any(s and s[-1] > CHUNK for s in SHAPES)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
@pytest.mark.parametrize("label", sorted(FILLS))
def test_materialised_bits_are_pinned(label: str) -> None:
    got = _digest(*FILLS[label])
    assert got == PINNED[label], _which_side_moved(label)


def test_the_raw_stream_is_pinned() -> None:
    assert _raw_digest() == RAW_PINNED, "NumPy's SeedSequence/PCG64 words moved"


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
@pytest.mark.parametrize("label", sorted(FILLS))
def test_the_pinned_bits_are_the_independent_reference_rounding(label: str) -> None:
    """The sibling of the pinned digests: the same fills narrowed by the reference give them."""
    with _reference_narrowing():
        assert _digest(*FILLS[label]) == PINNED[label]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
@pytest.mark.parametrize("dtype", [*NUMPY_DTYPES, *FOREIGN_DTYPES])
def test_a_tensor_materialises_in_its_spec_dtype(dtype: str) -> None:
    """What a case describes is what its call sends: each fill gives the spec's dtype or is
    refused (a repaired dtype would send a legal call for a dtype rule's breaking case)."""
    spec = TensorSpec((3, 5), dtype)
    for fill in (None, *(f for f, _ in FILLS.values())):
        try:
            a = materialise(spec, fill, 7, "dequant_scale1")
        except ValueError:
            continue
        assert describe(a) == spec, fill


@pytest.mark.parametrize("dtype", sorted(FOREIGN_DTYPES))
def test_a_foreign_dtype_holds_its_stand_in_values(dtype: str) -> None:
    """args.dtype_known's cases materialise: the known stand-in's values, cast."""
    np_dtype, known = FOREIGN_DTYPES[dtype]
    ref = narrow(materialise(TensorSpec((4, 9), known), None, 3, "key"), np_dtype)
    got = materialise(TensorSpec((4, 9), dtype), None, 3, "key")
    assert got.dtype == np_dtype and got.tobytes() == ref.tobytes()
