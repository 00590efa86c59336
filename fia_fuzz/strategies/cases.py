"""`cases(**filters)`: legal cases drawn in dependency order, no rejection.

Order of `sampled_from` lists is the shrink order: a failing case shrinks
toward BNSD, float16, MHA, small sizes and no optional inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.spec import Case, TensorSpec

LAYOUTS = ("BNSD", "BSND", "BSH")
DTYPES = ("float16", "bfloat16")
BRANCHES = ("prefill", "decode")
GQA_GROUPS = (1, 2, 4, 8, 3, 5, 16, 64)
FILTERS = {"layout": LAYOUTS, "q_dtype": DTYPES, "branch": BRANCHES}


@dataclass(frozen=True)
class Profile:
    """Size budget of one draw: element counts of q+k+v and of the score matrix."""

    max_batch: int
    max_heads: int
    max_seq: int
    max_elements: int
    max_score_elements: int


PROFILES: dict[str, Profile] = {
    "smoke": Profile(max_batch=4, max_heads=16, max_seq=128, max_elements=1 << 18,
                     max_score_elements=1 << 18),
    "nightly": Profile(max_batch=8, max_heads=64, max_seq=1024, max_elements=1 << 22,
                       max_score_elements=1 << 23),
    "stress": Profile(max_batch=32, max_heads=128, max_seq=8192, max_elements=1 << 26,
                      max_score_elements=1 << 27),
}


def _check_filters(profile: str, filters: dict[str, Any]) -> None:
    if profile not in PROFILES:
        raise InvalidArgument(f"profile={profile!r}, expected one of {sorted(PROFILES)}")
    for name, value in filters.items():
        if name not in FILTERS:
            raise InvalidArgument(f"unknown filter {name}={value!r}; "
                                  f"filters are {sorted(FILTERS)}")
        if value not in FILTERS[name]:
            raise InvalidArgument(f"filter {name}={value!r} is not reachable; "
                                  f"expected one of {list(FILTERS[name])}")


def _pick(draw: st.DrawFn, filters: dict[str, Any], name: str) -> Any:
    if name in filters:
        return filters[name]
    return draw(st.sampled_from(FILTERS[name]))


def _shape(layout: str, b: int, n: int, s: int, d: int) -> tuple[int, ...]:
    return {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d)}[layout]


@st.composite
def _cases(draw: st.DrawFn, profile: Profile, filters: dict[str, Any]) -> Case:
    layout = _pick(draw, filters, "layout")
    dtype = _pick(draw, filters, "q_dtype")
    branch = _pick(draw, filters, "branch")
    g = draw(st.sampled_from(GQA_GROUPS))
    kv_n = draw(st.integers(1, max(1, profile.max_heads // g)))
    n = kv_n * g
    d = draw(st.sampled_from([16, 32, 64, 128, 48, 80, 256]))
    b = draw(st.integers(1, profile.max_batch))
    s1 = 1 if branch == "decode" else draw(st.integers(2, profile.max_seq))
    s2 = draw(st.integers(1, profile.max_seq))
    per_token = b * (n * s1 + 2 * kv_n * s2) * d
    while per_token > profile.max_elements or b * n * s1 * s2 > profile.max_score_elements:
        if s2 > 1 and s2 >= s1:
            s2 = max(1, s2 // 2)
        elif s1 > 2:
            s1 = max(2, s1 // 2)
        elif b > 1:
            b = max(1, b // 2)
        else:
            d = 16
            break
        per_token = b * (n * s1 + 2 * kv_n * s2) * d
    scale = draw(st.sampled_from([1.0 / d ** 0.5, 1.0, 0.0625]))
    params: dict[str, Any] = {
        "query": TensorSpec(_shape(layout, b, n, s1, d), dtype),
        "key": TensorSpec(_shape(layout, b, kv_n, s2, d), dtype),
        "value": TensorSpec(_shape(layout, b, kv_n, s2, d), dtype),
        "num_heads": n,
        "input_layout": layout,
        "scale": scale,
    }
    if kv_n != n or draw(st.booleans()):
        params["num_key_value_heads"] = kv_n
    if draw(st.booleans()):
        params["softmax_lse_flag"] = True
    dist = draw(st.sampled_from(["normal", "uniform", "outlier", "negative"]))
    fills = {name: {"dist": dist, "scale": draw(st.sampled_from([1.0, 0.25, 4.0]))}
             for name in ("query", "key", "value")}
    seed = draw(st.integers(0, 2**32 - 1))
    return Case(params=params, fills=fills, seed=seed)


def cases(profile: str = "smoke", **filters: Any) -> st.SearchStrategy[Case]:
    """Legal cases; `filters` pin features by their `case.features()` name."""
    _check_filters(profile, filters)
    return _cases(PROFILES[profile], filters)
