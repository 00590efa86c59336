"""Each relation catches a bug planted in a test-double runner, with no golden comparison.

The doubles below are test doubles, named as such: each delegates the
attention to a real runner (torch-sdpa when torch is installed, else the
golden) after a deliberately wrong preprocessing step that only some calls
reach. The relation must flag exactly the partners that reach the bug.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from fia_fuzz.metamorphic import check_relations
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.runners import Runner, get_runner

from .sources import bool_mask, make_case

ENGINE = "torch-sdpa" if importlib.util.find_spec("torch") else "golden"


class _Double(Runner):
    """Delegates to a real runner after `rewrite`; supports whatever the rewrite removes."""

    name = "test-double"

    def __init__(self) -> None:
        self.engine = get_runner(ENGINE)

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        return self.engine.run(self.rewrite(dict(call)))

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        return call


def _bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    return x.transpose(0, 2, 1, 3) if layout == "BSND" else x


def _from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "BSH":
        b, n, s, d = x.shape
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(b, s, n * d))
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3) if layout == "BSND" else x)


class PagedMisreadDouble(_Double):
    """TEST DOUBLE: gathers paged KV itself, reading table entry j+1 for block_size 16.

    Contiguous calls pass through untouched (this engine's paths need full
    lengths, so the gather fills exactly act_kv rows of a B x max(act_kv) KV).
    """

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        if call.get("block_table") is None:
            return call
        view = CallView(call)
        table, bs = np.asarray(call.pop("block_table")), int(call.pop("block_size"))
        act = [int(a) for a in call.pop("actual_seq_lengths_kv")]
        assert len(set(act)) == 1, "the double's engine needs equal lengths"
        for name in ("key", "value"):
            cache = call[name]
            out = []
            for b in range(table.shape[0]):
                rows = []
                for s in range(act[b]):
                    j = s // bs
                    if bs == 16 and j + 1 < table.shape[1] and table[b, j + 1] >= 0:
                        j += 1  # the planted bug
                    blk = int(table[b, j])
                    if cache.ndim == 3:
                        rows.append(cache[blk, s % bs].reshape(view.KV_N, -1))
                    else:
                        rows.append(cache[blk, :, s % bs])
                out.append(np.stack(rows, axis=1))
            call[name] = _from_bnsd(np.stack(out), view.in_layout)
        return call


class HeadMapDouble(_Double):
    """TEST DOUBLE: expands GQA by tiling KV heads (query head n reads n % KV_N, not n // G)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        view = CallView(call)
        if view.G == 1:
            return call
        for name in ("key", "value"):
            x = _bnsd(call[name], view.in_layout, view.KV_N)
            call[name] = _from_bnsd(np.tile(x, (1, view.G, 1, 1)), view.in_layout)
        call["num_key_value_heads"] = view.N
        return call


class LayoutDouble(_Double):
    """TEST DOUBLE: reads a BSH hidden axis as (D, N) instead of (N, D) for key only."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        view = CallView(call)
        if view.in_layout != "BSH" or view.KV_N == 1:
            return call
        k = call["key"]
        b, s, h = k.shape
        d = h // view.KV_N
        call["key"] = np.ascontiguousarray(
            k.reshape(b, s, d, view.KV_N).transpose(0, 1, 3, 2).reshape(b, s, h))
        return call


class BatchShiftDouble(_Double):
    """TEST DOUBLE: batch b attends to the KV of batch (b + 1) % B."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        for name in ("key", "value"):
            call[name] = np.ascontiguousarray(np.roll(call[name], -1, axis=0))
        return call


class ListOrderDouble(_Double):
    """TEST DOUBLE: stacks a KV tensor list into one tensor in reverse batch order."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        for name in ("key", "value"):
            if isinstance(call[name], list):
                call[name] = np.ascontiguousarray(np.concatenate(call[name][::-1], axis=0))
        return call


class LeftPaddingDouble(_Double):
    """TEST DOUBLE: ignores kv_padding_size (reads left-padded KV as right-padded)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        call.pop("kv_padding_size", None)
        return call


class FirstPadDouble(_Double):
    """TEST DOUBLE: reads kv_padding_size[0] for every batch (as the vendor reference does)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        if call.get("kv_padding_size") is not None:
            call["kv_padding_size"] = np.asarray(call["kv_padding_size"])[:1]
        return call


class CausalAnchorDouble(_Double):
    """TEST DOUBLE: anchors sparse mode 3 top-left, like mode 2."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        if call.get("sparse_mode") == 3:
            call["sparse_mode"] = 2
        return call


class PrefixLengthDouble(_Double):
    """TEST DOUBLE: ignores actual_shared_prefix_len and attends the whole prefix tensor."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        call.pop("actual_shared_prefix_len", None)
        return call


class SinkDropDouble(_Double):
    """TEST DOUBLE: drops learnable_sink (the bug this relation found in the golden)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        call.pop("learnable_sink", None)
        return call


class DecodeScaleDouble(_Double):
    """TEST DOUBLE: the decode branch forgets the softmax scale."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        if CallView(call).decode:
            call["scale"] = 1.0
        return call


class StatefulDouble(_Double):
    """TEST DOUBLE: every second call perturbs one output element by one step."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        self.calls += 1
        if self.calls % 2 == 0:
            out = out.copy()
            out.reshape(-1)[0] = np.nextafter(out.reshape(-1)[0], np.inf)
        return out, lse


class InPlaceDouble(_Double):
    """TEST DOUBLE: zeroes a query column in place before running (a mutating kernel)."""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        call["query"][..., 0] = 0
        return super().run(call)


def _outcomes(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["variant"]: r["outcome"] for r in rows}


def test_paged_relation_catches_wrong_block_read_for_one_block_size() -> None:
    case = make_case("BNSD", b=2, n=2, kv_n=2, s1=1, s2=70)
    got = _outcomes(check_relations(case, PagedMisreadDouble(), ["paged"]))
    assert got["bs16-ordered-BnBsH"] == "fail"
    assert got["bs16-shuffled-BnBsH"] == "fail"
    assert got["bs16-shuffled-BnNBsD"] == "fail"
    assert got["bs128-shuffled-BnBsH"] == "pass", got


def test_gqa_relation_catches_wrong_head_mapping() -> None:
    case = make_case("BNSD", n=8, kv_n=2)
    got = _outcomes(check_relations(case, HeadMapDouble(), ["gqa_repeat"]))
    assert got == {"G4->G1": "fail", "G4->G2": "fail"}


def test_layout_relation_catches_misread_hidden_axis() -> None:
    case = make_case("BNSD", n=4, kv_n=2)
    got = _outcomes(check_relations(case, LayoutDouble(), ["layout"]))
    assert got["BSH"] == "fail"
    assert got["BSND"] == "pass" and got["BNSD_BSND"] == "pass"


def test_batch_relation_catches_batch_mixup() -> None:
    case = make_case("BNSD", b=3)
    got = _outcomes(check_relations(case, BatchShiftDouble(), ["batch_perm"]))
    assert set(got.values()) == {"fail"}


def test_list_relation_catches_wrong_element_order() -> None:
    case = make_case("BSND", b=3)
    got = _outcomes(check_relations(case, ListOrderDouble(), ["kv_list"]))
    assert got == {"split": "fail"}


def test_padding_relation_catches_ignored_kv_padding() -> None:
    case = make_case("BNSD", s1=1, actual_seq_lengths_kv=[33, 40])
    got = _outcomes(check_relations(case, LeftPaddingDouble(), ["padding"]))
    assert got == {"left-kv": "fail", "left-kv-per-batch": "fail"}


def test_padding_relation_flags_first_element_padding_reads() -> None:
    case = make_case("BNSD", s1=1, actual_seq_lengths_kv=[33, 40])
    got = _outcomes(check_relations(case, FirstPadDouble(), ["padding"]))
    assert got == {"left-kv": "pass", "left-kv-per-batch": "fail"}


def test_sparse_relation_catches_wrong_causal_anchor() -> None:
    case = make_case("BNSD", sparse_mode=3, s1=8, s2=40, atten_mask=bool_mask(2048, 2048),
                     fills={"atten_mask": {"dist": "triu", "k": 1}})
    got = _outcomes(check_relations(case, CausalAnchorDouble(), ["sparse_mask"]))
    assert got == {"mode3->explicit": "fail"}


def test_prefix_relation_catches_ignored_prefix_length() -> None:
    case = make_case("BSH", b=1, s2=30)
    got = _outcomes(check_relations(case, PrefixLengthDouble(), ["prefix"]))
    assert got == {"split": "pass", "split-longer-prefix": "fail"}


def test_sink_relation_catches_dropped_sink() -> None:
    case = make_case("BNSD", learnable_sink=TensorSpec((4,), "float16"))
    got = _outcomes(check_relations(case, SinkDropDouble(), ["sink_column"]))
    assert got == {"extra-column": "fail"}


def test_decode_relation_catches_branch_bug() -> None:
    case = make_case("BSND", s1=4)
    got = _outcomes(check_relations(case, DecodeScaleDouble(), ["decode_row"]))
    assert got == {"last": "fail", "first": "fail"}


@pytest.mark.parametrize("double", [StatefulDouble, InPlaceDouble])
def test_run_twice_catches_state_and_mutation(double: type[_Double]) -> None:
    case = make_case("BNSD")
    rows = check_relations(case, double(), ["run_twice"])
    assert [r["outcome"] for r in rows] == ["fail"], rows


class FlatOutputDouble(_Double):
    """TEST DOUBLE: returns attention_out flattened (a wrong output shape)."""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        out, lse = super().run(call)
        return out.reshape(-1), lse


def test_wrong_output_shape_is_a_failure_not_a_crash() -> None:
    rows = check_relations(make_case("BNSD"), FlatOutputDouble(), ["layout", "run_twice"])
    layout = [r for r in rows if r["relation"] == "layout"]
    assert layout and all(r["outcome"] == "fail" for r in layout), layout
    assert "one frame" in layout[0]["detail"]


class MaskBatchDouble(_Double):
    """TEST DOUBLE: reads batch 0's slice of a batched 4-D atten_mask for every batch."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        mask = call.get("atten_mask")
        if mask is not None and np.ndim(mask) == 4 and np.shape(mask)[0] > 1:
            call["atten_mask"] = np.ascontiguousarray(np.asarray(mask)[:1])
        return call


class MaskPast512Double(_Double):
    """TEST DOUBLE: ignores the mask past the first 512 keys (those keys stay visible)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        mask = call.get("atten_mask")
        if mask is not None and np.shape(mask)[-1] > 512:
            mask = np.array(mask)
            mask[..., 512:] = False
            call["atten_mask"] = mask
        return call


class KeyPastLengthDouble(_Double):
    """TEST DOUBLE: reads one key past each actual KV length (an off-by-one tail)."""

    def rewrite(self, call: dict[str, Any]) -> dict[str, Any]:
        if call.get("actual_seq_lengths_kv") is not None:
            s2 = CallView(call).S2
            call["actual_seq_lengths_kv"] = [min(int(a) + 1, s2)
                                             for a in call["actual_seq_lengths_kv"]]
        return call


def test_mask_shape_relation_catches_a_mask_read_from_batch_zero() -> None:
    case = make_case("BNSD", atten_mask=bool_mask(2, 1, 8, 40))
    assert _outcomes(check_relations(case, MaskBatchDouble(), ["mask_shape"])) == {
        "B,S1,S2": "fail"}


def test_mask_vs_lengths_catches_a_mask_ignored_past_512_keys() -> None:
    long = make_case("BNSD", s1=4, s2=600, actual_seq_lengths_kv=[530, 580])
    got = _outcomes(check_relations(long, MaskPast512Double(), ["mask_vs_lengths"]))
    assert got == {"lengths->mask": "fail"}
    short = make_case("BNSD", s1=4, s2=500, actual_seq_lengths_kv=[300, 450])
    got = _outcomes(check_relations(short, MaskPast512Double(), ["mask_vs_lengths"]))
    assert got == {"lengths->mask": "pass"}  # the bug needs keys past 512 to show


def test_kv_tail_relation_catches_a_read_past_the_length() -> None:
    case = make_case("BNSD", actual_seq_lengths_kv=[30, 17])
    got = _outcomes(check_relations(case, KeyPastLengthDouble(), ["kv_tail"]))
    assert got == {"changed-tail": "fail"}
