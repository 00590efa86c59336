"""uint64 dequant scales: decode of known words, the vendor encoder's truncation."""

import numpy as np
import pytest

from fia_fuzz.golden.quant import (
    UINT64_SCALE_FLAG,
    decode_uint64_scale,
    encode_uint64_scale,
    per_tensor,
    scale_as_fp32,
)

FLAG = 1 << 46


@pytest.mark.parametrize(("word", "value"), [
    (FLAG | 0x3F800000, 1.0),
    (FLAG | 0x3F000000, 0.5),
    (FLAG | 0xC0000000, -2.0),
    (0x3C010000, 0.0078125 * (1 + 2**-7)),   # flag bit is not needed to decode
    (0xFFFFFFFF_3F800000, 1.0),              # high 32 bits are ignored
    (FLAG | 0x00000000, 0.0),
])
def test_decode_known_words(word: int, value: float) -> None:
    got = decode_uint64_scale(np.array([word], np.uint64))
    assert got.dtype == np.float32
    assert got.tolist() == [value]


def test_encode_sets_bit_46_and_keeps_exact_scales() -> None:
    assert UINT64_SCALE_FLAG == FLAG
    words = encode_uint64_scale(np.array([1.0, 0.5, -2.0], np.float32))
    assert words.tolist() == [FLAG | 0x3F800000, FLAG | 0x3F000000, FLAG | 0xC0000000]


def test_encode_truncates_to_19_bits() -> None:
    # 0.1f = 0x3DCCCCCD; & 0xFFFFE000 = 0x3DCCC000 = (1 + 0x4CC000 / 2**23) / 16
    word = encode_uint64_scale(np.float32(0.1))
    assert int(word) == FLAG | 0x3DCCC000
    assert float(decode_uint64_scale(word)) == (1 + 0x4CC000 / 2**23) / 16 == 0.0999755859375
    # truncation is toward zero, also for negative scales and just below a power of 2
    assert float(decode_uint64_scale(encode_uint64_scale(np.float32(-0.1)))) == -0.0999755859375
    below_one = np.float32(1 - 2**-24)  # mantissa all ones -> keeps 10 of them
    assert float(decode_uint64_scale(encode_uint64_scale(below_one))) == 1 - 2**-11


def test_scale_as_fp32_and_per_tensor() -> None:
    assert scale_as_fp32(np.array([FLAG | 0x3F000000], np.uint64)).tolist() == [0.5]
    assert scale_as_fp32(np.array([0.25], np.float32)).tolist() == [0.25]
    assert per_tensor(np.array([[0.25]], np.float32), "x") == 0.25
    with pytest.raises(ValueError, match="dequant_scale1 must be per-tensor"):
        per_tensor(np.ones(2, np.float32), "dequant_scale1")
    with pytest.raises(TypeError):
        decode_uint64_scale(np.ones(1, np.float32))


def test_default_data_recipes_give_a_finite_full_quant_output() -> None:
    """A full-quant call without fill recipes (the spec's int8 base) materialises scales
    that keep the int8 x int8 scores inside fp16 (values.QUANT_SCALE_DEFAULTS)."""
    from fia_fuzz.golden import npu_fused_infer_attention_score
    from fia_fuzz.op.case import Case
    from fia_fuzz.rules.rulebook.bases import BASES

    for name in ("int8", "mla_int8"):
        call = Case(params=dict(BASES[name]), seed=3).call()
        with np.errstate(over="raise", invalid="raise"):
            out, _ = npu_fused_infer_attention_score(**call)
        assert np.isfinite(out.astype(np.float64)).all(), name
