"""Hand-built source cases, each chosen to exercise one relation's transformation."""

from __future__ import annotations

from typing import Any

from fia_fuzz.spec import Case, TensorSpec, validate

SHAPES = {"BNSD": lambda b, n, s, d: (b, n, s, d), "BSND": lambda b, n, s, d: (b, s, n, d),
          "BSH": lambda b, n, s, d: (b, s, n * d)}


def make_case(layout: str = "BNSD", b: int = 2, n: int = 4, kv_n: int = 2, s1: int = 8,
              s2: int = 40, d: int = 16, dtype: str = "float16", lse: bool = True,
              seed: int = 3, **extra: Any) -> Case:
    """A small legal dense case; `extra` adds or overrides canonical parameters."""
    shape = SHAPES[layout]
    params: dict[str, Any] = {
        "query": TensorSpec(shape(b, n, s1, d), dtype),
        "key": TensorSpec(shape(b, kv_n, s2, d), dtype),
        "value": TensorSpec(shape(b, kv_n, s2, d), dtype),
        "num_heads": n, "num_key_value_heads": kv_n, "input_layout": layout,
        "scale": d ** -0.5, "softmax_lse_flag": lse, **extra,
    }
    case = Case(params=params, seed=seed)
    broken = validate(**case.specs())
    assert not broken, broken
    return case


#: relation -> source cases that exercise it (a mix of layouts, dtypes, branches, G).
SOURCES: dict[str, list[Case]] = {
    "layout": [make_case("BNSD"), make_case("BSH", dtype="bfloat16", kv_n=1),
               make_case("BSND", s1=1, seed=5), make_case("BNSD", n=2, kv_n=2, s1=3, s2=7)],
    "gqa_repeat": [make_case("BNSD", n=8, kv_n=2), make_case("BSH", n=6, kv_n=2, s1=1),
                   make_case("BSND", n=4, kv_n=1, dtype="bfloat16")],
    "paged": [make_case("BNSD", s1=1, s2=70), make_case("BSH", s1=1, s2=33, b=3),
              make_case("BSND", s1=4, s2=300, n=2, kv_n=1)],
    "decode_row": [make_case("BNSD", s1=6), make_case("BSH", s1=5, dtype="bfloat16", b=3)],
    "v1_v2": [make_case("BNSD"), make_case("BSH", kv_n=4, s1=1)],
    "eager_graph": [make_case("BNSD")],
    "run_twice": [make_case("BNSD"), make_case("BSH", s1=1, dtype="bfloat16")],
    "batch_perm": [make_case("BNSD", b=3), make_case("BSH", b=4, s1=1),
                   make_case("BSND", b=2, dtype="bfloat16")],
}
