"""The Atlas A2 route model: per decision, a call that takes it and the calls on each side
of what decides it (fia_fuzz/rules/profiles/a2_routes)."""

from __future__ import annotations

from typing import Any

import pytest

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles import a2_routes
from fia_fuzz.rules.profiles.a2_routes import dispatch, fai, ifa, pfa, sizes, v3
from fia_fuzz.rules.profiles.a2_routes.tiling import Tiling
from fia_fuzz.rules.rulebook.bases import T, bf, call, i8


def view(base: str, **over: Any) -> CallView:
    return CallView(call(base, **over))


def route(base: str, **over: Any) -> str:
    return a2_routes.route_of(view(base, **over))


def bnsd(b: int, n: int, s: int, d: int, dtype: str = "float16") -> dict[str, Any]:
    """BNSD query, KV of kv_n = n heads: the pieces of a plain call."""
    return {"query": T(b, n, s, d, dtype=dtype), "key": T(b, n, 64, d, dtype=dtype),
            "value": T(b, n, 64, d, dtype=dtype), "num_heads": n, "num_key_value_heads": n}


def decode(b: int, n: int, kv_n: int, s2: int, d: int = 64, **over: Any) -> CallView:
    """A BSH fp16 decode call."""
    return view("decode", query=T(b, 1, n * d), key=T(b, s2, kv_n * d),
                value=T(b, s2, kv_n * d), num_heads=n, num_key_value_heads=kv_n, **over)


# ---- dispatch: which kernel and template ------------------------------------------------
def test_float_calls_with_a_v3_template_take_v3() -> None:
    assert route("prefill") == "v3.gqa"
    assert route("decode") == "v3.gqa"


@pytest.mark.parametrize("d, expected", [(64, "v3.gqa"), (128, "v3.gqa"), (256, "ifa.float")])
def test_head_dims_off_the_v3_table_fall_back_to_the_decode_kernel(d: int, expected: str
                                                                   ) -> None:
    assert a2_routes.route_of(decode(2, 8, 2, 16, d=d)) == expected


def test_a_float_prefill_off_the_v3_table_takes_the_prompt_kernel() -> None:
    assert route("prefill", **bnsd(2, 4, 4, 64)) == "v3.gqa"
    assert route("prefill", **bnsd(2, 4, 4, 256)) == "pfa.float"


def test_optional_inputs_without_a_v3_template_leave_v3() -> None:
    assert route("masked") == "pfa.float"  # pse_shift
    assert route("masked", pse_shift=None) == "v3.gqa"


def test_post_quant_takes_the_legacy_kernels() -> None:
    assert route("post_quant") == "pfa.post_quant"
    assert a2_routes.route_of(decode(2, 8, 2, 16, quant_scale2=T(1, dtype="float32"))) \
        == "ifa.post_quant"


def test_split_fuse_takes_plain_tnd_and_inner_precise_decides() -> None:
    assert route("tnd", inner_precise=0) == "fai"
    assert route("tnd", inner_precise=1) == "v3.gqa"  # G > 1 needs inner_precise 0
    assert route("tnd", inner_precise=0, sparse_mode=1) == "v3.gqa"


def test_mla_float_and_mla_full_quant() -> None:
    assert route("mla") == "v3.mla"
    assert route("tnd_rope") == "v3.gqa"  # rope with D 128: V3 without a GQA template check
    assert route("mla_int8") == "ifa.mla_quant"


def test_antiquant_takes_one_template_per_mode_in_decode_and_pfa_in_prefill() -> None:
    assert route("aq_combined").startswith("ifa.antiquant.")
    assert route("aq_combined", antiquant_mode=1) == "ifa.antiquant.1"
    assert route("aq_separate").startswith("ifa.antiquant.")
    assert route("aq_prefill") == "pfa.antiquant"


def test_full_quant_decode_and_prefill() -> None:
    assert route("int8") == "pfa.full_quant"
    q = call("int8")["query"]
    assert route("int8", query=i8(q.shape[0], q.shape[1], 1, q.shape[3])) == "ifa.full_quant"


def test_nz_mtp_takes_the_decode_kernel() -> None:
    """IsGqaMtp: Q_S 2..16 over 5-D caches stays on IFA; 17 rows go to the prompt kernel."""
    for s1, expected in ((16, "ifa"), (17, "pfa")):
        c = view("nz", query=bf(1, s1, 10 * 128))
        assert dispatch.to_ifa(c) is (expected == "ifa")


def test_an_empty_kv_is_its_own_route() -> None:
    assert route("prefill", key=T(2, 2, 0, 64), value=T(2, 2, 0, 64)) == "empty"


def test_every_route_cites_its_source() -> None:
    assert all("ops-transformer attention/" in why for why in a2_routes.WHY.values())
    assert set(a2_routes.WHY) >= {"dispatch.v3", "dispatch.fai", "dispatch.ifa", "dispatch.pfa",
                                  "v3.s2_tile", "fai.s1_tile", "ifa.flash_decode",
                                  "pfa.tiles"}


# ---- V3 tiles and split --------------------------------------------------------------
@pytest.mark.parametrize("n, tile", [(4, 8192), (5, 4096), (9, 4096), (10, 2048)])
def test_v3_short_query_s2_tile_steps_with_the_group(n: int, tile: int) -> None:
    assert v3.gqa_s2_tile(decode(1, n, 1, 64)) == tile


def test_v3_long_queries_tnd_and_masks_take_smaller_tiles() -> None:
    assert v3.gqa_s2_tile(view("prefill", **bnsd(1, 1, 16, 64))) == 8192
    assert v3.gqa_s2_tile(view("prefill", **bnsd(1, 1, 17, 64))) == 512
    assert v3.gqa_s2_tile(view("tnd", inner_precise=1)) == 512
    assert v3.gqa_s2_tile(view("causal")) == 1024  # a short query's 8192, capped by the mask
    assert v3.gqa_s2_tile(view("causal", query=T(1, 4, 17, 64))) == 512


def test_v3_paged_tile_floors_to_the_block() -> None:
    c = view("paged_decode", block_size=48, key=T(8, 48, 128), value=T(8, 48, 128),
             actual_seq_lengths_kv=[40, 64])
    assert v3.gqa_s2_tile(c) == 8192 // 48 * 48


@pytest.mark.parametrize("b, cell", [(22, None), (23, "cores-1"), (24, "cores"),
                                     (25, "cores+1"), (26, None)])
def test_v3_work_units_against_the_cube_cores(b: int, cell: str | None) -> None:
    c = decode(b, 4, 1, 64)
    assert v3.tiling(c, mla=False).units == b
    assert a2_routes.cell(c) == ("v3.gqa", f"v3.gqa:{cell}" if cell else "free")


def test_v3_flash_decode_needs_fewer_units_than_cores_and_two_s2_tiles() -> None:
    assert v3.tiling(decode(23, 4, 1, 8193), mla=False).flash_decode
    assert not v3.tiling(decode(24, 4, 1, 8193), mla=False).flash_decode
    assert not v3.tiling(decode(23, 4, 1, 8192), mla=False).flash_decode


@pytest.mark.parametrize("s2, cell", [(8190, None), (8191, "s2-1"), (8192, "s2"),
                                      (8193, "s2+1"), (16384, "s2")])
def test_v3_s2_tile_cells(s2: int, cell: str | None) -> None:
    assert a2_routes.cell(decode(2, 4, 1, s2))[1] == (f"v3.gqa:{cell}" if cell else "free")


# ---- split-fuse ----------------------------------------------------------------------
@pytest.mark.parametrize("q_s, g, heads", [(1, 8, 8), (64, 8, 2), (65, 8, 1), (128, 8, 1),
                                           (2, 64, 64), (3, 64, 42)])
def test_fai_head_blocks(q_s: int, g: int, heads: int) -> None:
    assert fai.head_block(q_s, g) == heads


@pytest.mark.parametrize("q, cell", [(127, "s1-1"), (128, "s1"), (129, "s1+1")])
def test_fai_query_tile_cells(q: int, cell: str) -> None:
    c = view("tnd", inner_precise=0, query=bf(q + 4, 8, 128), actual_seq_lengths=[4, q + 4],
             key=bf(20, 2, 128), value=bf(20, 2, 128), actual_seq_lengths_kv=[8, 20])
    assert a2_routes.cell(c) == ("fai", f"fai:{cell}")


@pytest.mark.parametrize("kv, cell", [(511, "s2-1"), (512, "s2"), (513, "s2+1"), (700, None)])
def test_fai_kv_stack_cells(kv: int, cell: str | None) -> None:
    c = view("tnd", inner_precise=0, key=bf(kv + 8, 2, 128), value=bf(kv + 8, 2, 128),
             actual_seq_lengths_kv=[8, kv + 8])
    assert a2_routes.cell(c) == ("fai", f"fai:{cell}" if cell else "free")


def test_fai_tasks_against_the_cores() -> None:
    # one batch of 1 row: G 4 heads in one block per KV head
    def tasks(kv_n: int) -> int:
        c = view("tnd", inner_precise=0, query=bf(1, 4 * kv_n, 128), key=bf(8, kv_n, 128),
                 value=bf(8, kv_n, 128), num_heads=4 * kv_n, num_key_value_heads=kv_n,
                 actual_seq_lengths=[1], actual_seq_lengths_kv=[8])
        return fai.tiling(c).units
    assert [tasks(k) for k in (23, 24, 25)] == [23, 24, 25]


# ---- the decode kernel -----------------------------------------------------------------
def test_ifa_all_vector_template_splits_the_kv_under_half_the_vector_cores() -> None:
    """fp16 in and out, G 1, not paged: the all-vector template (EnableAllVec)."""
    on, off = decode(23, 1, 1, 64, d=256), decode(24, 1, 1, 64, d=256)
    assert ifa.perf_mode(on) == ifa.perf_mode(off) == "all_vec"
    assert ifa.tiling(on).flash_decode and not ifa.tiling(off).flash_decode
    assert a2_routes.cell(on)[1] == "ifa.float:split_on"
    assert a2_routes.cell(off)[1] == "ifa.float:split_off"


def test_ifa_normal_template_splits_the_kv_under_0_4_of_the_vector_cores() -> None:
    """A group of 2 leaves the all-vector template: the normal one's 0.4 of the cores."""
    on, off = decode(19, 2, 1, 2048, d=256), decode(20, 2, 1, 2048, d=256)
    assert ifa.perf_mode(on) == "normal" and ifa.split_threshold(on) == 19
    assert a2_routes.cell(on)[1] == "ifa.float:split_on"
    assert a2_routes.cell(off)[1] == "ifa.float:split_off"
    bf16 = view("decode", query=bf(2, 1, 8 * 256), key=bf(2, 16, 8 * 256),
                value=bf(2, 16, 8 * 256), num_heads=8, num_key_value_heads=8)
    assert ifa.perf_mode(bf16) == "normal"  # all-vector takes fp16 only


def paged_bnsd(kv: int, d: int = 128, kv_n: int = 8, **over: Any) -> CallView:
    """A paged BNSD fp16 decode, 2 batches of `kv` keys in blocks of 128, G = 1."""
    width = -(-kv // 128)
    return view("paged_decode", query=T(2, kv_n, 1, d), key=T(2 * width, 128, kv_n * d),
                value=T(2 * width, 128, kv_n * d), num_heads=kv_n, num_key_value_heads=kv_n,
                block_size=128, actual_seq_lengths_kv=[kv, kv],
                block_table=[list(range(width)), list(range(width, 2 * width))], **over)


def test_ifa_cube_view_template_takes_paged_bnsd_d128_past_128_chunks_of_work() -> None:
    """EnableCubeViewMM: B x KV_N x ceil(KV / 2048) past 128 (2 x 8 x 9 here, 2 x 8 x 8 is
    not), D 128, not high precision (CheckDataCopyNd2Nz); the cube cores' threshold."""
    assert ifa.perf_mode(paged_bnsd(16385)) == "cube_view"
    assert ifa.split_threshold(paged_bnsd(16385)) == 12
    assert ifa.perf_mode(paged_bnsd(16384)) == "normal"
    assert ifa.perf_mode(paged_bnsd(16385, inner_precise=0)) == "normal"
    assert ifa.perf_mode(paged_bnsd(16385, d=64)) == "normal"


def test_ifa_cube_templates_split_at_half_the_cube_cores() -> None:
    assert ifa.perf_mode(view("aq_combined")) == "normal"  # BSH, not paged
    assert ifa.perf_mode(view("mla_int8")) == "mla"
    assert ifa.split_threshold(view("mla_int8")) == 12
    assert ifa.perf_mode(view("nz")) == "cube_dd"


def test_ifa_gqa_splits_only_from_2048_keys() -> None:
    assert not ifa.split_allowed(decode(1, 8, 2, 2047, d=256))
    assert ifa.split_allowed(decode(1, 8, 2, 2048, d=256))
    assert ifa.split_allowed(decode(1, 8, 8, 64, d=256))  # G == 1: any length


def test_ifa_paged_short_kv_never_splits() -> None:
    c = view("paged_decode", query=T(2, 8, 1, 256), key=T(8, 16, 2 * 256),
             value=T(8, 16, 2 * 256), num_key_value_heads=8, actual_seq_lengths_kv=[40, 64])
    assert not ifa.split_allowed(c)


@pytest.mark.parametrize("n, tile", [(4, 8192), (5, 4096), (10, 2048)])
def test_ifa_s2_tiles(n: int, tile: int) -> None:
    assert ifa.s2_tile(decode(1, n, 1, 64, d=256)) == tile


def test_ifa_antiquant_and_rope_tiles() -> None:
    assert ifa.s2_tile(view("aq_combined")) == (1024 if view("aq_combined").G > 1 else 8192)
    assert ifa.s2_tile(view("mla_int8")) == 512


def test_ifa_antiquant_groups_take_2048_keys_under_the_cube_view_template() -> None:
    """CalcInnerSize: antiquant with G > 1 tiles 2048 keys under CUBE_VIEW_MM, else 1024."""
    def aq(kv: int) -> CallView:
        width = -(-kv // 128)
        return view("paged_decode", query=T(2, 16, 1, 128), key=i8(2 * width, 128, 8 * 128),
                    value=i8(2 * width, 128, 8 * 128), num_heads=16, num_key_value_heads=8,
                    block_size=128, actual_seq_lengths_kv=[kv, kv],
                    block_table=[list(range(width)), list(range(width, 2 * width))],
                    antiquant_scale=T(2, 8, 1, 128), antiquant_offset=T(2, 8, 1, 128))
    assert ifa.perf_mode(aq(16385)) == "cube_view" and ifa.s2_tile(aq(16385)) == 2048
    assert ifa.perf_mode(aq(16384)) == "normal" and ifa.s2_tile(aq(16384)) == 1024


def test_ifa_mla_over_ragged_batches_takes_the_balanced_split() -> None:
    assert ifa.balanced(view("mla"))  # BSND, act_kv 100 and 256
    assert not ifa.balanced(view("mla", actual_seq_lengths_kv=[256, 256]))


# ---- the prompt kernel ----------------------------------------------------------------
def test_pfa_s2_tile_by_kv_length_dtype_and_precision() -> None:
    short = view("prefill", **bnsd(1, 2, 4, 256))
    assert pfa.s2_tile(short) == 512
    long_kv = {**bnsd(1, 2, 4, 256), "key": T(1, 2, 1025, 256), "value": T(1, 2, 1025, 256)}
    assert pfa.s2_tile(view("prefill", **long_kv, inner_precise=1)) == 1024
    assert pfa.s2_tile(view("prefill", **long_kv, inner_precise=0)) == 512


def pfa_call(s1: int, s2: int, d: int = 256, n: int = 2, dtype: str = "float16",
             **over: Any) -> CallView:
    """A BNSD prefill that V3 declines (D 256 is off its table)."""
    return view("prefill", query=T(1, n, s1, d, dtype=dtype), key=T(1, n, s2, d, dtype=dtype),
                value=T(1, n, s2, d, dtype=dtype), num_heads=n, num_key_value_heads=n,
                **over)


def test_pfa_short_queries_take_16_row_blocks_and_2048_keys_without_a_mask() -> None:
    """AdjustCVTilingCVDiff: a query of at most 16 rows, unmasked over more than 2048 keys."""
    assert pfa.factors(pfa_call(16, 4096, inner_precise=1)) == (16, 2048)
    assert pfa.factors(pfa_call(17, 4096, inner_precise=1)) == (128, 1024)
    assert pfa.factors(pfa_call(16, 2048, inner_precise=1)) == (16, 1024)
    masked = pfa_call(16, 4096, inner_precise=1, atten_mask=T(16, 4096, dtype="bool"),
                      sparse_mode=0)
    assert pfa.factors(masked) == (16, 1024)


def test_pfa_high_precision_and_wide_heads_take_64_rows() -> None:
    assert pfa.factors(pfa_call(64, 4096, dtype="bfloat16")) == (64, 512)  # aligned D 256
    assert pfa.factors(pfa_call(64, 4096, d=192, dtype="bfloat16")) == (128, 512)
    assert pfa.factors(pfa_call(64, 4096, d=192, inner_precise=1)) == (128, 1024)
    paged = view("paged_prefill", query=T(1, 8, 32, 64), inner_precise=1)
    assert pfa.factors(paged)[0] == 64  # enablePA


def test_pfa_kv_antiquant_caps_the_keys_by_head_dim() -> None:
    """enableKvAntiquant (fp16 query, int8 KV): at most 256K / aligned D keys a block."""
    c = view("prefill", query=T(1, 2, 64, 512), key=i8(1, 2, 4096, 512),
             value=i8(1, 2, 4096, 512), num_heads=2, num_key_value_heads=2, inner_precise=1,
             antiquant_scale=T(2, 1, 1, 512), antiquant_offset=T(2, 1, 1, 512))
    assert pfa.factors(c) == (128, 512)


@pytest.mark.parametrize("s1, rows", [(256, 64), (257, 128), (128, 128)])
def test_pfa_halves_the_rows_when_the_query_fills_one_block_a_core_share(s1: int, rows: int
                                                                          ) -> None:
    """AdjustBasicBlock: 24 heads share the 48 vector cores two each; a query of exactly
    two 128-row blocks is split in 64-row halves."""
    c = pfa_call(s1, 4096, n=24, inner_precise=1)
    assert pfa.tiling(c).s1_tile == rows


@pytest.mark.parametrize("s1, cell", [(127, "s1-1"), (128, "s1"), (129, "s1+1")])
def test_pfa_query_tile_cells(s1: int, cell: str) -> None:
    c = view("prefill", **bnsd(1, 1, s1, 256))
    assert a2_routes.cell(c) == ("pfa.float", f"pfa.float:{cell}")


def test_every_cell_belongs_to_a_route() -> None:
    routes = {a2_routes.tiled_as(r) for r in a2_routes.ROUTES}
    assert all(cell.split(":")[0] in routes for cell in a2_routes.CELLS)


# ---- size classes against the route's tiling -------------------------------------------
@pytest.mark.parametrize("units, kind", [(23, "below"), (24, "cores"), (25, "above"),
                                         (95, "above"), (96, "many")])
def test_units_class_against_the_routes_cores(units: int, kind: str) -> None:
    assert sizes.units_class(Tiling(128, 512, units, 24, None, False)) == kind


@pytest.mark.parametrize("kv, kind", [(511, "within"), (512, "multiple"), (1024, "multiple"),
                                      (513, "past"), (1025, "past"), (700, "tiles"),
                                      (2047, "tiles"), (2050, "long")])
def test_kv_tiles_against_the_routes_s2_tile(kv: int, kind: str) -> None:
    assert sizes.kv_tiles(kv, 512) == kind


@pytest.mark.parametrize("q, kind", [(1, "1"), (2, "spec"), (16, "spec"), (17, "tile"),
                                     (128, "tile"), (129, "past")])
def test_q_rows_against_the_routes_query_tile(q: int, kind: str) -> None:
    assert sizes.q_rows(q, 128) == kind


def test_v3_query_rows_are_measured_in_its_g_by_s1_blocks() -> None:
    """A V3 GQA block holds G x S1 rows (CalcMBaseSize): with G 4 and 512-row blocks a
    query of 128 rows fills one, 129 rows pass it."""
    def feats(s1: int) -> dict[str, Any]:
        c = view("prefill", query=T(1, 8, s1, 64), key=T(1, 2, 600, 64),
                 value=T(1, 2, 600, 64))
        route, _, t = a2_routes._cell(c)
        assert route == "v3.gqa"
        return sizes.size_classes(c, route, t)
    assert feats(128)["q_rows"] == "tile" and feats(129)["q_rows"] == "past"
    assert feats(128)["kv_tiles"] == "tiles"  # 600 keys over 512-key tiles


def test_the_empty_call_has_no_size_classes() -> None:
    c = view("decode", key=T(2, 0, 128), value=T(2, 0, 128))
    assert a2_routes.route_of(c) == "empty"
    assert set(sizes.size_classes(c, "empty", None).values()) == {None}
