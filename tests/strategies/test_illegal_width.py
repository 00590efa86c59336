"""Breakers reach across their rule's illegal range and across families.

`illegal/width.py` measures each breaker: the seeded draws that break its rule
alone, their distinct broken values and the families they come from
(`fia-fuzz coverage --illegal` prints it). The tests pin the width of
four examples and hold every breaker to a general bar.
"""

from __future__ import annotations

import pytest

from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.edits import DELETE, apply, kv_dtype, split_blocks
from fia_fuzz.strategies.illegal import BREAKERS, OWN_BREAKERS
from fia_fuzz.strategies.illegal.width import breaks, broken_value, bucket, family, table, width
from fia_fuzz.strategies.sample import draw_cases


def _breaks(rule: str, n: int = 40):
    # the change's width over the breaker's own bases (its route bases, spans.py, spread
    # the same change over routes: test_illegal_sides)
    return breaks(rule, OWN_BREAKERS[rule], n)


def test_bucket_keeps_edges_and_groups_the_rest() -> None:
    assert [bucket(x) for x in (-80, -3, 0, 16, 64, 80, 144, 1024, 1025)] == \
        ["-(64,128)", "-3", "0", "16", "64", "(64,128)", "(128,256)", "1024", "(1024,2048)"]
    assert broken_value("block_size=544 > 512") == "block_size=(512,1024) > 512"


def test_tnd_head_dims_reaches_d_64_and_256_and_dv_under_rope() -> None:
    found = _breaks("tnd.head_dims", 60)
    dims = {(b.broken.view().D, b.broken.view().Dv) for b in found}
    qd = {d for d, _ in dims}
    assert 64 in qd and max(qd) >= 256, qd     # both ends of the range: 64 and 256 or past
    rope_dv = {b.broken.view().Dv for b in found if b.broken.view().rope}
    assert len(rope_dv - {144}) >= 2, rope_dv
    assert any(b.broken.view().paged for b in found)
    assert len({b.base.features()["layout"] for b in found}) == 2


def test_kv_count_breaks_packed_paged_calls_and_several_families() -> None:
    # 120 draws: Hypothesis's first examples mutate a few early draws, so a one_of over six
    # bases reaches the paged TND one only after about 80
    found = _breaks("lengths.kv_count", 120)
    assert any(b.broken.view().packed and b.broken.view().paged for b in found)
    assert len(width(found).families) >= 3


def test_packed_monotonic_carries_mla_rope() -> None:
    # over 200 draws: the one_of of five bases spreads unevenly over few draws (80 missed
    # rope 512)
    found = _breaks("lengths.packed_monotonic", 200)
    ropes = {b.base.features()["rope_d"] for b in found}
    assert {"128", "512"} <= ropes, ropes
    assert any(not b.broken.view().paged for b in found)


def test_block_size_max_reaches_1024_in_tnd_and_several_sizes_elsewhere() -> None:
    found = _breaks("paged.block_size_max", 120)
    tnd = {b.broken.params["block_size"] for b in found if b.broken.view().packed}
    other = {b.broken.params["block_size"] for b in found if not b.broken.view().packed}
    assert tnd == {1024}        # the one size past 512 the packed layouts' list allows
    assert len(other) >= 3 and min(other) < 1024, other


def test_block_size_prefill_reaches_64_and_32() -> None:
    sizes = {b.broken.params["block_size"] for b in _breaks("paged.block_size_prefill")}
    assert {32, 64} <= sizes


def test_block_size_64_in_tnd_breaks_two_rules() -> None:
    # why no breaker reaches 64 in TND: it breaks the packed list and V2's prefill rule both
    base = draw_cases(1, 0, layout="TND", paged=True, rope=False)[0]
    assert base.params["block_size"] in (128, 512)
    broken = apply(base, split_blocks(base, base.params["block_size"] // 64))
    assert [v.rule for v in validate(**broken.specs())] == \
        ["paged.block_size_prefill", "tnd.block_size"]


def test_width_table_names_each_rule() -> None:
    found = _breaks("tnd.head_dims", 10)
    text = "\n".join(table({"tnd.head_dims": width(found)}))
    assert "tnd.head_dims" in text and "packed" in text
    assert {family(b.base.features()) for b in found} <= {"packed", "packed_mla"}


def test_coverage_illegal_prints_the_table(capsys) -> None:
    from fia_fuzz.cli import main

    assert main(["coverage", "--illegal", "tnd.head", "--cases", "8"]) == 0
    out = capsys.readouterr().out
    assert "tnd.head_dims" in out and "never landed: none" in out
    assert "routes: breakers reach" in out and "fai" in out


def _rules(base, change) -> list[str]:
    return [v.rule for v in validate(**apply(base, change).specs())]


def test_nz_layouts_other_than_bnsd_bsnd_break_a_second_rule() -> None:
    # why nz.layout is ONE_FORM: every other documented layout breaks another rule too
    base = draw_cases(1, 0, cache="NZ", rope=False, layout="BSND", q_seq="2-16")[0]
    q = base.params["query"]
    packed = {"input_layout": "TND", "query": TensorSpec((q.shape[0] * q.shape[1],
                                                          *q.shape[2:]), q.dtype),
              "actual_seq_lengths": [q.shape[1] * (i + 1) for i in range(q.shape[0])]}
    for change, other in (({"input_layout": "BSND_NBSD"}, "layout.nbsd_rope"),
                          ({"input_layout": "BSND_BNSD"}, "layout.known"),
                          (packed, "tnd.no_extras")):
        found = _rules(base, change)
        assert "nz.layout" in found and other in found, (change, found)


def test_nz_dtypes_other_than_a_float16_query_break_a_second_rule() -> None:
    base = draw_cases(1, 0, cache="NZ", rope=False, q_seq="1")[0]
    q, k = base.params["query"], base.params["key"]
    b, n, d1, bs, c0 = k.shape
    float_kv = {**{x: TensorSpec((b, n, d1 * c0 // 16, bs, 16), "bfloat16")
                   for x in ("key", "value")},
                **{x: DELETE for x in ("key_antiquant_scale", "value_antiquant_scale",
                                       "key_antiquant_mode", "value_antiquant_mode")}}
    for change, other in (({"query": TensorSpec(q.shape, "float32")}, "dtype.query"),
                          ({x: TensorSpec(k.shape, "int4") for x in ("key", "value")},
                           "paged.kv_dtype"),
                          (float_kv, "nz.antiquant")):
        found = _rules(base, change)
        assert "nz.dtypes" in found and other in found, (change, found)


def test_int4_paged_modes_and_a_value_side_per_tensor_scale_break_a_second_rule() -> None:
    # why antiquant.int4_modes and int8_only_forms are ONE_FORM
    base = next(c for c in draw_cases(20, 0, antiquant="separate:2/2", paged=False)
                if c.view().D % 64 == 0)
    int4 = apply(base, kv_dtype(base, "int4"))
    assert _rules(int4, {}) == ["antiquant.int4_modes"]
    assert {"antiquant.int4_modes", "antiquant.paged_modes"} <= set(
        _rules(int4, {"key_antiquant_mode": 4, "value_antiquant_mode": 4}))
    base = next(c for c in draw_cases(20, 0, antiquant="separate:0/0", kv_dtype="int4")
                if c.params["value_antiquant_scale"].shape != (1,))
    v = base.params["value_antiquant_scale"]
    found = _rules(base, {"value_antiquant_scale": TensorSpec((1,), v.dtype)})
    assert "antiquant.sep_shapes_match" in found, found


#: Breakers below the general bar (>= 2 families or >= 3 distinct broken values), and why:
#: each is a rule of one family's own (its inputs exist there only) whose range is narrow.
PRESENCE = "one family's rule broken by an input present or absent (or one of a pair)"
ONE_FORM = "one family's rule whose illegal range is the one or two forms drawn"
NARROW: dict[str, str] = {
    "antiquant.combined_prefill_query": ONE_FORM + " (a bfloat16 query)",
    # modes 4/5 need paging (antiquant.paged_modes), which takes no int4 (paged.kv_dtype)
    "antiquant.int4_modes": ONE_FORM + " (modes (2, 2) over int4 or int32-packed int4)",
    "antiquant.int4_separate_only": ONE_FORM + " (int4, int32-packed int4)",
    # the value side alone: sep_shapes_match fires in (0, 0), (0, 1) makes it per-token
    "antiquant.int8_only_forms": ONE_FORM + " (a (1,) key scale over int4 or int32 KV)",
    "antiquant.needs_int_kv": PRESENCE,
    "antiquant.offset_needs_scale": PRESENCE,
    "antiquant.paged_modes": ONE_FORM + " (modes 4 and 5)",
    "antiquant.scale_needed": PRESENCE,
    "antiquant.sep_offset_pair": PRESENCE,
    "dims.d_align_int4": ONE_FORM + " (int4 or int32 KV over the base's D < 64)",
    "dtype.all_int8_decode": ONE_FORM + " (Q_S = 1 in full quant)",
    "dtype.int8_query_kv": ONE_FORM + " (float16 or bfloat16 KV)",
    "dtype.kv_float_match_query": "float16 against bfloat16 either way is the whole range; "
                                  "MLA's key_rope follows the query (rope.dtype fires too)",
    "kvlist.no_left_padding": PRESENCE,
    "mla.actual_seq_lengths": PRESENCE,
    "mla.full_quant_nz": ONE_FORM + " (a 3-D or 4-D cache)",
    "mla.paged_required": PRESENCE,
    # float KV drops the antiquant nz.antiquant needs; int4 breaks paged.kv_dtype, float32
    # query dtype.query
    "nz.dtypes": ONE_FORM + " (a float16 query over the int8 cache, in decode)",
    # NBSD outputs need rope (layout.nbsd_rope), packed ones refuse antiquant (tnd.no_extras),
    # BSH_BNSD/BSND_BNSD are device-only (layout.known)
    "nz.layout": ONE_FORM + " (BNSD_BSND, of a BNSD prefill)",
    "paged.cache_layout_query": ONE_FORM + " (a BSND or BSH query)",
    "paged.int8_query": ONE_FORM + " (int8 query, key and value)",
    "paged.kv_dtype": ONE_FORM + " (int4; int32-packed int4 also breaks paged.cache_heads, "
                                 "which reads the packed D)",
    "prefix.not_all_int8": PRESENCE,
    "prefix.not_kv_list": PRESENCE,
    "quant.int4_no_post": PRESENCE,
    "quant.int8_query_needs_dequant": PRESENCE,
    # 64 breaks paged.block_size_prefill too (test_block_size_64_in_tnd_breaks_two_rules)
    "tnd.block_size": ONE_FORM + " (256 and 384, the 128-multiples between 128 and 512)",
    "tnd.d512_needs_rope": PRESENCE,
    "tnd.rope_not_paged": PRESENCE,
}


@pytest.mark.slow
@pytest.mark.parametrize("rule", sorted(BREAKERS))
def test_breaker_reaches_two_families_or_three_values(rule: str) -> None:
    w = width(_breaks(rule, 50))
    assert w.landed, f"{rule}: no draw broke it alone"
    wide = len(w.families) >= 2 or len(w.values) >= 3
    if rule in NARROW:
        assert not wide, f"{rule} is listed NARROW ({NARROW[rule]}) but reaches " \
                         f"{dict(w.families)} / {len(w.values)} values: drop it from NARROW"
    else:
        assert wide, f"{rule}: {dict(w.families)}, values {list(w.values)}"
