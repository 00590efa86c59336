"""`illegal_cases(rule)`: cases that break exactly one named rule, for negative testing.

Each breaker starts from a legal case drawn by `cases(**base)` (the base
filters put the case where the rule applies) and changes it just enough to
violate its rule. The simple breakers are here, the searched ones come from
breaker_table.py, and those that move one quantity in several places at once
from breakers_kv.py, breakers_features.py and breakers_mla_quant.py. The
result is checked against `validate`: a draw whose violations are not exactly
`[rule]` is discarded, and the meta-tests assert such discards stay rare.
Rules a `Case` cannot express (unknown keywords, non-tensor objects) and
rules without a breaker yet raise InvalidArgument naming the rule.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.spec import RULES, Case, TensorSpec, validate
from fia_fuzz.spec.profiles import DEFAULT
from fia_fuzz.spec.profiles import get as get_rules
from fia_fuzz.strategies.breaker import Breaker
from fia_fuzz.strategies.breaker_table import BREAKER_TABLE
from fia_fuzz.strategies.breakers_features import FEATURE_BREAKERS
from fia_fuzz.strategies.breakers_kv import KV_BREAKERS
from fia_fuzz.strategies.breakers_mla_quant import MLA_QUANT_BREAKERS
from fia_fuzz.strategies.choices import HypothesisChooser
from fia_fuzz.strategies.mutations import DELETE, MUTATIONS, Change, apply

#: Rules that a Case (JSON-serialisable TensorSpecs and int lists) cannot violate.
INEXPRESSIBLE = {
    "args.unknown_keyword": "a Case only holds the op's keywords (Case.__post_init__ rejects "
                            "others); call validate(**kwargs) directly to test this rule",
    "args.type": "a Case holds TensorSpecs and int lists only; pass a non-tensor object to "
                 "validate directly to test this rule",
}

#: Rules whose breaking cases cannot be sent to a backend as a call (unknown dtype,
#: negative or host-sized shapes, non-integer lengths that int() would silently repair,
#: a missing positional tensor, host-sized S above 20M or T above 1M tokens, a ragged
#: block_table that no tensor can hold);
#: illegal_cases() without a rule leaves them out, illegal_cases(rule) still draws them
#: for validate-level tests.
NOT_MATERIALISABLE = {"args.dtype_known", "args.shape_sane", "args.memory",
                      "args.values_integral", "args.required", "dims.s_max", "tnd.t_max",
                      "paged.block_table_rank"}

PLAIN_BNSD = {"plain": True, "layout": "BNSD"}


def _bnsd(case: Case) -> tuple[int, int, int, int, int, int, str]:
    """(B, N, S1, D, KV_N, S2, dtype) of a plain BNSD case."""
    b, n, s1, d = case.params["query"].shape
    _, kv_n, s2, _ = case.params["key"].shape
    return b, n, s1, d, kv_n, s2, case.params["query"].dtype


def _qkv(b: int, n: int, s1: int, d: int, kv_n: int, s2: int, dtype: str, dv: int | None = None
         ) -> Change:
    return {"query": TensorSpec((b, n, s1, d), dtype),
            "key": TensorSpec((b, kv_n, s2, d), dtype),
            "value": TensorSpec((b, kv_n, s2, dv or d), dtype),
            "num_heads": n, "num_key_value_heads": kv_n}


def _gqa_ratio(draw: st.DrawFn, case: Case) -> Change:
    """One KV head shared by more than 64 query heads."""
    b, _, s1, d, _, s2, dt = _bnsd(case)
    return _qkv(b, draw(st.sampled_from([65, 96, 128])), s1, d, 1, s2, dt)


def _gqa_divisible(draw: st.DrawFn, case: Case) -> Change:
    b, _, s1, d, _, s2, dt = _bnsd(case)
    kv_n = draw(st.sampled_from([3, 5, 7]))
    return _qkv(b, kv_n * 2 + 1, s1, d, kv_n, s2, dt)


def _n_max(draw: st.DrawFn, case: Case) -> Change:
    b, _, _, _, _, _, dt = _bnsd(case)
    kv_n = draw(st.sampled_from([5, 8, 16]))
    g = -(-257 // kv_n)
    return _qkv(1, kv_n * g, 2, 16, kv_n, 1, dt)


def _d_max(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, _, kv_n, s2, dt = _bnsd(case)
    return _qkv(1, 1, min(s1, 2), draw(st.sampled_from([528, 544, 1024])), 1, min(s2, 2), dt)


def _d_align(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, _, kv_n, s2, dt = _bnsd(case)
    return _qkv(b, n, s1, draw(st.sampled_from([24, 40, 72, 100])), kv_n, s2, dt)


def _b_max(draw: st.DrawFn, case: Case) -> Change:
    _, _, _, _, _, _, dt = _bnsd(case)
    return _qkv(65537, 1, 2, 16, 1, 1, dt)


def _memory(draw: st.DrawFn, case: Case) -> Change:
    """Within every documented limit (B, N, D, S) but above the framework's element cap."""
    dt = _bnsd(case)[6]
    return _qkv(65536, 256, draw(st.sampled_from([4, 8])), 512, 256, 4, dt)


def _shape_sane(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    return {"query": TensorSpec((b, n, -draw(st.integers(1, 4)), d), dt)}


def _attr_type(draw: st.DrawFn, case: Case) -> Change:
    return {"softmax_lse_flag": draw(st.sampled_from([1, 0, "yes"]))}


def _values_integral(draw: st.DrawFn, case: Case) -> Change:
    s1 = _bnsd(case)[2]
    return {"actual_seq_lengths": [draw(st.sampled_from([0.5, 1.5])) * min(s1, 2)]}


def _required(draw: st.DrawFn, case: Case) -> Change:
    return {draw(st.sampled_from(["value", "key"])): DELETE}


def _dtype_known(draw: st.DrawFn, case: Case) -> Change:
    """A user mask of an unknown dtype (query/key dtypes have rules of their own)."""
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    return {"atten_mask": TensorSpec((b, 1, s1, s2),
                                     draw(st.sampled_from(["float64", "complex64"])))}


def _dtype_query(draw: st.DrawFn, case: Case) -> Change:
    """An int-KV (antiquant) case, so no float-KV-matches-query rule fires alongside."""
    shp = case.params["query"].shape
    return {"query": TensorSpec(shp, draw(st.sampled_from(["float32", "uint8"])))}


def _kv_match(draw: st.DrawFn, case: Case) -> Change:
    v = case.params["value"]
    other = "bfloat16" if v.dtype == "float16" else "float16"
    return {"value": TensorSpec(v.shape, other)}


def _kv_float_match(draw: st.DrawFn, case: Case) -> Change:
    k, v = case.params["key"], case.params["value"]
    other = "bfloat16" if k.dtype == "float16" else "float16"
    return {"key": TensorSpec(k.shape, other), "value": TensorSpec(v.shape, other)}


def _dtype_kv(draw: st.DrawFn, case: Case) -> Change:
    k, v = case.params["key"], case.params["value"]
    dt = draw(st.sampled_from(["float32", "uint8"]))
    return {"key": TensorSpec(k.shape, dt), "value": TensorSpec(v.shape, dt)}


def _num_heads_positive(draw: st.DrawFn, case: Case) -> Change:
    return {"num_heads": draw(st.sampled_from([0, -1]))}


def _kv_heads_nonneg(draw: st.DrawFn, case: Case) -> Change:
    return {"num_key_value_heads": draw(st.sampled_from([-1, -8]))}


def _layout_known(draw: st.DrawFn, case: Case) -> Change:
    return {"input_layout": draw(st.sampled_from(["BHSD", "SBH", "bnsd", "NSD"]))}


def _query_rank(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, *_ = _bnsd(case)
    return {"query": TensorSpec((b, n, s1, d, 1), case.params["query"].dtype)}


def _bsh_h_divisible(draw: st.DrawFn, case: Case) -> Change:
    b, s1, h = case.params["query"].shape
    n = case.params["num_heads"]
    return {"query": TensorSpec((b, s1, h + draw(st.integers(1, n - 1))),
                                case.params["query"].dtype)}


def _query_heads(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    return {"query": TensorSpec((b, n + kv_n, s1, d), dt)}


def _kv_rank(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    kv = TensorSpec((b, kv_n * s2, d), dt)
    return {"key": kv, "value": kv}


def _kv_batch(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    kv = TensorSpec((b + draw(st.integers(1, 3)), kv_n, s2, d), dt)
    return {"key": kv, "value": kv}


def _kv_heads(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    kv = TensorSpec((b, kv_n + 1, s2, d), dt)
    return {"key": kv, "value": kv}


def _kv_seq(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    return {"value": TensorSpec((b, kv_n, s2 + draw(st.integers(1, 4)), d), dt)}


def _qk_d(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    kd = d + 16 * draw(st.integers(1, 2)) if d < 480 else d - 16
    return {"key": TensorSpec((b, kv_n, s2, kd), dt)}


def _v_d(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = _bnsd(case)
    return {"value": TensorSpec((b, kv_n, s2, d + 16 if d < 512 else d - 16), dt)}


BREAKERS: dict[str, Breaker] = {
    "args.required": Breaker(_required, PLAIN_BNSD),
    "args.attr_type": Breaker(_attr_type, PLAIN_BNSD),
    "args.dtype_known": Breaker(_dtype_known, PLAIN_BNSD),
    "args.shape_sane": Breaker(_shape_sane, PLAIN_BNSD),
    "args.values_integral": Breaker(_values_integral, {**PLAIN_BNSD, "branch": "prefill"}),
    "args.memory": Breaker(_memory, PLAIN_BNSD),
    "dims.d_align_float": Breaker(_d_align, {**PLAIN_BNSD, "branch": "prefill"}),
    "dims.d_max": Breaker(_d_max, PLAIN_BNSD),
    "dims.n_max": Breaker(_n_max, PLAIN_BNSD),
    "dims.b_max": Breaker(_b_max, PLAIN_BNSD),
    "dtype.query": Breaker(_dtype_query, {"antiquant": "separate:1/1", "kv_dtype": "int8",
                                          "branch": "decode", "pse": False}),
    "dtype.kv_match": Breaker(_kv_match, PLAIN_BNSD),
    "dtype.kv_float_match_query": Breaker(_kv_float_match, PLAIN_BNSD),
    "dtype.kv": Breaker(_dtype_kv, PLAIN_BNSD),
    "gqa.num_heads_positive": Breaker(_num_heads_positive, PLAIN_BNSD),
    "gqa.kv_heads_nonnegative": Breaker(_kv_heads_nonneg, PLAIN_BNSD),
    "gqa.divisible": Breaker(_gqa_divisible, PLAIN_BNSD),
    "gqa.ratio_max_64": Breaker(_gqa_ratio, PLAIN_BNSD),
    "layout.known": Breaker(_layout_known, PLAIN_BNSD),
    "layout.query_rank": Breaker(_query_rank, PLAIN_BNSD),
    "layout.bsh_h_divisible": Breaker(_bsh_h_divisible, {"plain": True, "layout": "BSH",
                                                          "gqa": "gqa"}),
    "layout.query_heads": Breaker(_query_heads, PLAIN_BNSD),
    "layout.kv_rank": Breaker(_kv_rank, PLAIN_BNSD),
    "layout.kv_batch": Breaker(_kv_batch, PLAIN_BNSD),
    "layout.kv_heads": Breaker(_kv_heads, PLAIN_BNSD),
    "layout.kv_seq_match": Breaker(_kv_seq, PLAIN_BNSD),
    "layout.qk_head_dim": Breaker(_qk_d, PLAIN_BNSD),
    "layout.value_head_dim": Breaker(_v_d, PLAIN_BNSD),
}


BREAKERS.update(KV_BREAKERS)
BREAKERS.update(FEATURE_BREAKERS)
BREAKERS.update(MLA_QUANT_BREAKERS)


def _searched(mutation: str) -> Callable[[st.DrawFn, Case], Change]:
    """A breaker from the searched table: replay the named mutation with Hypothesis draws."""
    def change(draw: st.DrawFn, case: Case) -> Change:
        out = MUTATIONS[mutation](HypothesisChooser(draw, {}), case)
        if out is None:
            reject()
        return out
    return change


for _rid, (_base, _mutation) in BREAKER_TABLE.items():
    if _rid not in BREAKERS:
        BREAKERS[_rid] = Breaker(_searched(_mutation), _base)


def illegal_cases(rule: str | None = None, rules: str = DEFAULT) -> st.SearchStrategy[Case]:
    """Cases whose only violation is `rule` (None: any rule with a materialisable breaker)
    under the rule profile `rules` (see `illegal_profiles` for a device profile)."""
    if rules != DEFAULT:
        from fia_fuzz.strategies.illegal_profiles import profile_illegal_cases

        try:
            profile = get_rules(rules)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        return profile_illegal_cases(profile, rule, BREAKERS, NOT_MATERIALISABLE)
    if rule is not None and rule not in RULES:
        raise InvalidArgument(f"rule={rule!r} is not a rule id; see fia_fuzz.spec.RULES")
    if rule in INEXPRESSIBLE:
        raise InvalidArgument(f"rule={rule!r} cannot be broken by a Case: {INEXPRESSIBLE[rule]}")
    if rule is not None and rule not in BREAKERS:
        raise InvalidArgument(f"rule={rule!r} has no breaker yet in "
                              f"fia_fuzz.strategies.illegal.BREAKERS")
    ids = [rule] if rule else sorted(r for r in BREAKERS
                                     if r in RULES and r not in NOT_MATERIALISABLE)
    bases = {r: BREAKERS[r].cases() for r in ids}

    @st.composite
    def broken(draw: st.DrawFn) -> Case:
        rid = draw(st.sampled_from(ids))
        base = draw(bases[rid])
        case = apply(base, BREAKERS[rid].change(draw, base))
        if [v.rule for v in validate(**case.specs())] != [rid]:
            reject()
        return case

    return broken()
