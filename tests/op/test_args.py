"""The argument registry (fia_fuzz/op/args): every keyword of the signature has a module,
each module's declarations hold, and one new module is all an argument needs to be
drawn, classified, counted by coverage and validated."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fia_fuzz.op import args
from fia_fuzz.op.case import Case
from fia_fuzz.op.params import ALL_ARGS, ATTR_DEFAULTS, TENSOR_ARGS, V2_TO_CANONICAL
from fia_fuzz.op.registry import ARGS, TENSOR, Arg, Param, register, unregister
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rule import RULES, Rule
from fia_fuzz.rules.rulebook.bases import call
from fia_fuzz.rules.validate import case_violations, validate

ROOT = Path(__file__).resolve().parents[2]

#: torch_npu.npu_fused_infer_attention_score's keywords (v1, in order), and the v2/V4
#: additions (fia-semantics.md §1): the signature the registry must cover.
TORCH_NPU_V1 = (
    "query", "key", "value", "pse_shift", "atten_mask", "actual_seq_lengths",
    "actual_seq_lengths_kv", "dequant_scale1", "quant_scale1", "dequant_scale2",
    "quant_scale2", "quant_offset2", "antiquant_scale", "antiquant_offset", "block_table",
    "query_padding_size", "kv_padding_size", "key_antiquant_scale", "key_antiquant_offset",
    "value_antiquant_scale", "value_antiquant_offset", "key_shared_prefix",
    "value_shared_prefix", "actual_shared_prefix_len", "query_rope", "key_rope",
    "key_rope_antiquant_scale", "num_heads", "scale", "pre_tokens", "next_tokens",
    "input_layout", "num_key_value_heads", "sparse_mode", "inner_precise", "block_size",
    "antiquant_mode", "softmax_lse_flag", "key_antiquant_mode", "value_antiquant_mode")
ADDED = ("dequant_scale_query", "query_quant_mode", "learnable_sink")


def test_every_keyword_of_the_signature_has_a_module() -> None:
    signature = set(TORCH_NPU_V1) | set(ADDED) | set(V2_TO_CANONICAL.values())
    missing = sorted(k for k in signature if args.of_param(k) is None)
    assert missing == [], f"keywords without an argument module in fia_fuzz/op/args: {missing}"
    assert set(ALL_ARGS) == signature


def test_signature_order_is_the_modules_order() -> None:
    """MODULES follow torch_npu's order, so the derived tuples keep it."""
    tensors = [k for k in TORCH_NPU_V1 if k in TENSOR_ARGS]
    assert [k for k in TENSOR_ARGS if k in tensors] == tensors
    assert list(ATTR_DEFAULTS)[:2] == ["num_heads", "scale"]
    assert [m.ARG for m in args.MODULES] == list(ARGS.values())


@pytest.mark.parametrize("arg", list(ARGS.values()), ids=lambda a: a.name)
def test_module_declarations_hold(arg: Arg) -> None:
    assert arg.module == f"fia_fuzz.op.args.{arg.name}"
    assert arg.doc.strip(), "the module docstring describes the argument"
    for name in arg.rules:  # its rules and breakers, one hop from the module
        assert (ROOT / "fia_fuzz/rules/rulebook" / f"{name}.py").exists(), name
        assert (ROOT / "fia_fuzz/strategies/illegal" / f"{name}.py").exists(), name
    for mod in (*arg.golden, *arg.runners):
        importlib.import_module(mod)
    assert arg.golden and arg.runners
    for axis, values in (*arg.forms.items(), *arg.features.items()):
        assert len(set(values)) == len(values), axis
    assert set(arg.implies) <= set(arg.forms)
    assert (arg.form_of is None) == (not arg.forms)
    assert (arg.classify is None) == (not arg.features)
    for feature, value in (*arg.absent.items(), *arg.empty.items()):
        assert value in arg.features[feature], feature


def test_forms_and_features_come_from_the_modules() -> None:
    case = Case(params=call("decode", learnable_sink=TensorSpec((8,), "float32")))
    feats = case.features()
    for arg in ARGS.values():
        assert set(arg.features) <= set(feats), arg.name
        assert set(arg.forms) <= set(feats), arg.name
    assert feats["sink"] is True and feats["learnable_sink_form"] == "decode"


def test_rule_notes_have_distinct_numbers() -> None:
    from fia_fuzz.rules.ruledoc import NOTES
    own = {int(m) for m in re.findall(r"^(\d+)\. ", NOTES, re.M)}
    assert not own & set(args.notes())


# ---- a toy argument: one module, its rule, its arithmetic ---------------------------------
TOY = "toy_gain"


def _toy_draw(dr: Any, allowed: bool = True) -> None:
    if dr.ch.pick("toy", (False, True) if allowed else (False,)):
        dr.ch.fixed("toy_gain_form", dr.branch)
        dr.set(TOY, TensorSpec((dr.n,), "float32"))
        dr.fills[TOY] = {"dist": "uniform", "scale": 1.0}


def _toy_arg() -> Arg:
    """What a new argument's module declares (its keyword, form, feature, family, draw)."""
    return Arg(
        name="toy", module="tests.op.test_args", doc="toy_gain: a per-head gain (N,).",
        params=(Param(TOY, TENSOR, roles=frozenset({"per_head"}),
                      alone=lambda c: TensorSpec((c.n,), "float32")),),
        forms={"toy_gain_form": ("none", "prefill", "decode")},
        implies={"toy_gain_form": lambda v: {"toy": True}},
        form_of=lambda case, v, branch: {
            "toy_gain_form": branch if case.params.get(TOY) is not None else "none"},
        features={"toy": (False, True)},
        classify=lambda case, v: {"toy": case.params.get(TOY) is not None},
        families=("dense",), absent={"toy": False}, empty={"toy": False},
        draw=_toy_draw, rules=("sink",), golden=("fia_fuzz.golden.api",),
        runners=("fia_fuzz.runners.composition.attend",))


def _toy_shape(v: Any) -> str | None:
    """The toy's rule: shape (N,)."""
    t = v.spec(TOY)
    return None if t is None or t.shape == (v.N,) else f"{TOY} shape {t.shape} is not (N,)"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Any:
    register(_toy_arg())
    monkeypatch.setitem(RULES, "toy.shape", Rule("toy.shape", "toy_gain is (N,)", "test",
                                                 _toy_shape))
    yield ARGS["toy"]
    unregister("toy")


def test_a_toy_argument_is_seen_everywhere(toy: Arg) -> None:
    from fia_fuzz.strategies.axes import AXES
    from fia_fuzz.strategies.families import EMPTY_OK, FAMILY_SCOPE
    from fia_fuzz.strategies.sample import draw_cases

    # the signature, coverage's axes, the family scopes
    assert TOY in ALL_ARGS and TOY in TENSOR_ARGS
    assert AXES["toy"] == (False, True) and AXES["toy_gain_form"][0] == "none"
    assert FAMILY_SCOPE["mla"]["toy"] == (False,) and "toy" not in FAMILY_SCOPE["dense"]
    assert EMPTY_OK["toy"] is False
    # the strategies draw it (a filter on its feature and on its form), legally
    drawn = draw_cases(5, 0, "smoke", toy=True)
    assert drawn and all(c.params[TOY].shape == (c.view().N,) for c in drawn)
    assert all(case_violations(c) == [] for c in drawn)
    feats = drawn[0].features()
    assert feats["toy"] is True and feats["toy_gain_form"] == feats["branch"]
    assert all(c.features()["toy_gain_form"] == "decode"
               for c in draw_cases(3, 0, "smoke", toy_gain_form="decode"))
    # validate knows the keyword (no args.unknown) and holds it to its rule
    base = call("decode")
    n = base["num_heads"]
    assert validate(**base, **{TOY: TensorSpec((n,), "float32")}) == []
    broken = validate(**base, **{TOY: TensorSpec((n + 1,), "float32")})
    assert [v.rule for v in broken] == ["toy.shape"]
    # its arithmetic (here: none) runs through the golden
    from fia_fuzz.golden import npu_fused_infer_attention_score as golden
    c = drawn[0]
    kwargs = c.call()
    out, _ = golden(**kwargs)
    plain = {k: v for k, v in kwargs.items() if k != TOY}
    assert np.array_equal(out, golden(**plain)[0], equal_nan=True)


def test_coverage_counts_a_toy_argument(toy: Arg, capsys: pytest.CaptureFixture[str]) -> None:
    from fia_fuzz.cli import main
    main(["coverage", "--cases", "30"])
    out = capsys.readouterr().out
    assert re.search(r"^\s*toy \| False: \d+, True: \d+", out, re.M), out
    assert re.search(r"^\s*toy_gain_form \| none: \d+", out, re.M), out


def test_the_toy_is_gone_after(toy: Arg) -> None:
    unregister("toy")
    assert TOY not in ALL_ARGS
    register(toy)
