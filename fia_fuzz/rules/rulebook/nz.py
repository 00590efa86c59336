"""5-D NZ KV caches outside MLA: the GQA/MHA/MQA int8 antiquant configuration
[V4 GQA/MHA/MQA伪量化场景下key/value shape为五维时的参数约束]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, bf, i8
from fia_fuzz.rules.rulebook.mask import OPTIMIZED_SHAPES

NZ_HEADS = ((10, 1), (64, 8), (80, 8), (128, 16))
NZ_D = 128
NZ_BLOCK_SIZES = (128, 512)
NZ_LAYOUTS = ("BSH", "BSND", "BNSD")
SOURCE = "GQA/MHA/MQA伪量化场景下key/value shape为五维时的参数约束"


def per_channel_shape(layout: str, kv_n: int, d: int) -> tuple[int, ...] | None:
    """The per-channel antiquant scale shape of a 5-D cache by input layout: BSH [H],
    BNSD [N,1,D], BSND [N,D] [V4 五维 keyAntiquantScale]; None for other layouts."""
    return {"BSH": (kv_n * d,), "BNSD": (kv_n, 1, d), "BSND": (kv_n, d)}.get(layout)


def _gqa_nz(c: CallView) -> bool:
    return c.nz and not c.rope


@rule("nz.dtypes", "5-D caches without rope: bfloat16 query, int8 key/value",
      src("V4", f"{SOURCE} (query BFLOAT16; key/value INT8，仅支持shape为五维)"))
def nz_dtypes(c: CallView) -> str | None:
    if not _gqa_nz(c):
        return None
    q, k = c.need("query"), c.need("key")
    if q.dtype != "bfloat16" or k.dtype != "int8":
        return f"5-D key/value cache without rope: query {q.dtype}, key {k.dtype}"
    return None


@rule("nz.dims", "5-D caches without rope: D = 128 and Q_S 1..16",
      src("V4", f"{SOURCE} (Q_S [1,16] Q_D=128)"))
def nz_dims(c: CallView) -> str | None:
    if _gqa_nz(c) and (c.D != NZ_D or not 1 <= c.S1 <= 16):
        return f"5-D key/value cache with D={c.D}, Q_S={c.S1}"
    return None


@rule("nz.heads", "5-D caches without rope: (num_heads, num_key_value_heads) in "
      "(10,1), (64,8), (80,8), (128,16)",
      src("V4", f"{SOURCE} (numHeads和numKeyValueHeads)"))
def nz_heads(c: CallView) -> str | None:
    if _gqa_nz(c) and (c.N, c.KV_N) not in NZ_HEADS:
        return f"5-D key/value cache with (num_heads, KV_N)=({c.N}, {c.KV_N})"
    return None


@rule("nz.layout", "5-D caches without rope: input_layout BSH, BSND or BNSD",
      src("V4", f"{SOURCE} (inputLayout BSH、BSND、BNSD)"))
def nz_layout(c: CallView) -> str | None:
    lay = c.attrs["input_layout"]
    if _gqa_nz(c) and lay not in NZ_LAYOUTS:
        return f"5-D key/value cache with input_layout={lay!r}"
    return None


@rule("nz.inner_precise", "5-D caches without rope: inner_precise 1 (high performance only)",
      src("V4", f"{SOURCE} (innerPrecise 1 仅支持高性能模式)"))
def nz_inner_precise(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    return f"5-D key/value cache with inner_precise={ip}" if _gqa_nz(c) and ip != 1 else None


@rule("nz.mask", "5-D caches without rope: Q_S=1 sparse 0 without mask; Q_S>1 sparse 3 "
      "with the 2048 mask",
      src("V4", f"{SOURCE} (Mask)"))
def nz_mask(c: CallView) -> str | None:
    if not _gqa_nz(c):
        return None
    mode, m = c.attr_int("sparse_mode"), c.spec("atten_mask")
    if c.decode:
        ok = mode == 0 and m is None
    else:
        ok = mode == 3 and m is not None and m.shape in OPTIMIZED_SHAPES
    if not ok:
        return f"5-D key/value cache, Q_S={c.S1}, sparse_mode={mode}, atten_mask=" \
               f"{list(m.shape) if m is not None else None}"
    return None


@rule("nz.antiquant", "5-D caches without rope: separate symmetric antiquant, modes (0,0) or (1,1)",
      src("V4", f"{SOURCE} (伪量化 仅支持KV分离; 不支持非对称量化; per-channel 0/0, per-to"
                f"ken 1/1)"))
def nz_antiquant(c: CallView) -> str | None:
    if not _gqa_nz(c):
        return None
    modes = (c.attr_int("key_antiquant_mode"), c.attr_int("value_antiquant_mode"))
    offsets = [n for n in ("antiquant_offset", "key_antiquant_offset", "value_antiquant_offset")
               if c.has(n)]
    if not c.separate_antiquant or c.has("antiquant_scale") or offsets or modes not in (
            (0, 0), (1, 1)):
        return f"5-D key/value cache: separate={c.separate_antiquant}, combined=" \
               f"{c.has('antiquant_scale')}, offsets={offsets}, modes={modes}"
    return None


@rule("nz.scale_shape", "5-D caches without rope: per-channel scale [H]/[N,1,D]/[N,D] by layout; "
      "per-token [B, >= block_table width * block_size]",
      src("V4", f"{SOURCE} (keyAntiquantScale)"))
def nz_scale_shape(c: CallView) -> str | None:
    if not _gqa_nz(c) or not c.separate_antiquant:
        return None
    kvn, d = c.KV_N, c.D
    for side in ("key", "value"):
        t = c.spec(f"{side}_antiquant_scale")
        if t is None:
            continue
        sh = tuple(t.shape)
        if c.attr_int(f"{side}_antiquant_mode") == 1:
            ok = len(sh) == 2 and sh[0] == c.B and sh[1] >= c.S2
        else:
            ok = sh == per_channel_shape(c.in_layout, kvn, d)
        if not ok:
            return f"{side}_antiquant_scale.shape={list(sh)} with a 5-D cache, layout " \
                   f"{c.in_layout}, B={c.B}, KV_S={c.S2}"
    return None


@rule("nz.block_size", "5-D caches without rope: block_size 128 or 512",
      src("V4", f"{SOURCE} (blockSize 128或512)"))
def nz_block_size(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    return f"5-D key/value cache with block_size={bs}" if _gqa_nz(c) and bs not in NZ_BLOCK_SIZES \
        else None


@rule("nz.no_extras", "5-D caches without rope: no left padding, pse, prefix or post-quant",
      src("V4", f"{SOURCE} (不支持左padding、tensorlist、pse、PagedAttention、prefix、后量化)"))
def nz_no_extras(c: CallView) -> str | None:
    if not _gqa_nz(c):
        return None
    bad = [n for n, on in (
        ("left padding", c.left_padding), ("pse_shift", c.has("pse_shift")),
        ("shared prefix", c.has("key_shared_prefix")),
        ("quant_scale2", c.has("quant_scale2"))) if on]
    return f"5-D key/value cache with {bad}" if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("nz.dtypes", "nz", {"query": T(1, 1, 1280)}),
    ("nz.dims", "nz", {"query": bf(1, 1, 10 * 256), "key": i8(2, 1, 8, 128, 32),
                       "value": i8(2, 1, 8, 128, 32), "key_antiquant_scale": bf(256),
                       "value_antiquant_scale": bf(256)}),
    ("nz.heads", "nz", {"query": bf(1, 1, 20 * 128), "num_heads": 20}),
    ("nz.layout", "nz", {"input_layout": "BNSD_BSND", "query": bf(1, 10, 2, 128),
                         "key_antiquant_scale": bf(1, 1, 128), "sparse_mode": 3,
                         "atten_mask": B(2048, 2048), "value_antiquant_scale": bf(1, 1, 128)}),
    ("nz.inner_precise", "nz", {"inner_precise": 0}),
    ("nz.mask", "nz", {"atten_mask": B(1, 256)}),
    ("nz.antiquant", "nz", {"key_antiquant_offset": bf(128), "value_antiquant_offset": bf(128)}),
    ("nz.scale_shape", "nz", {"key_antiquant_scale": bf(1, 128),
                              "value_antiquant_scale": bf(1, 128)}),
    ("nz.block_size", "nz", {"block_size": 256, "key": i8(2, 1, 4, 256, 32),
                             "value": i8(2, 1, 4, 256, 32), "block_table": [[0]]}),
    ("nz.no_extras", "nz", {"pse_shift": bf(1, 10, 1, 256)}),
]
