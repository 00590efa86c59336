"""query_rope / key_rope: the rotary part of Q and K split off, 64 more head dims [V4 §MLA].

MLA (query D 512, KV_N 1) and the packed TND D 128 path take the rope
tensors beside query/key; the scores are Q.K^T + Q_rope.K_rope^T, so the
logits span D + 64 dims. query_rope shares query's leading axes (S, or T
packed), key_rope key's (or the paged cache's). An int8 query's output takes
query_rope's dtype (`int8_out_dtype`). Features: `rope` and the head dim it
goes with (`rope_d`).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.shape_forms import safe_feature
from fia_fuzz.op.tensors import TensorSpec

QUERY, KEY = "query_rope", "key_rope"
#: The rope head dim of every documented rope path.
ROPE_D = 64


def present(view: Any) -> bool:
    """A call view (or its `has`) carries rope."""
    return view.has(QUERY) or view.has(KEY)


def int8_out_dtype(view: Any) -> str:
    """An int8 query's output dtype: query_rope's when there is one, else float16, as
    torch_npu's meta functions do [V4 MLA 全量化 attention BFLOAT16]."""
    return view.need(QUERY).dtype if view.has(QUERY) else "float16"


def extra_d(params: dict[str, Any]) -> int:
    """The head dims rope adds to D in the scores of a call with these params."""
    return ROPE_D if QUERY in params else 0


def worst_logit(dr: Any, fill_max: Any) -> float:
    """The rope part of the worst |q.k| of a draw (`dr`: the strategies' Draft) whose fills
    are bounded by fill_max(fill, dtype)."""
    if QUERY not in dr.params:
        return 0.0
    return ROPE_D * fill_max(dr.fills[QUERY], dr.q_dtype) * fill_max(dr.fills[KEY], dr.kv_dtype)


def set_query(dr: Any, shape: tuple[int, ...], dtype: str) -> None:
    dr.set(QUERY, TensorSpec(tuple(int(x) for x in shape), dtype))


def set_key(dr: Any, shape: tuple[int, ...], dtype: str) -> None:
    dr.set(KEY, TensorSpec(tuple(int(x) for x in shape), dtype))


def classify(case: Any, v: Any) -> dict[str, Any]:
    on = case.params.get(QUERY) is not None
    return {"rope": on, "rope_d": str(safe_feature(lambda: v.D)) if on else "none"}


ARG = register(Arg(
    name="rope",
    params=(Param(QUERY, TENSOR, roles=frozenset({"rope", "query_seq"}), partner=KEY,
                  alone=lambda c: TensorSpec((*c.q.shape[:-1], ROPE_D), c.q.dtype)),
            Param(KEY, TENSOR, roles=frozenset({"rope"}),
                  alone=lambda c: TensorSpec((*c.k0.shape[:-1], ROPE_D), c.k0.dtype))),
    features={"rope": (False, True), "rope_d": ("none", "128", "512")},
    classify=classify,
    families=("packed", "mla"),
    absent={"rope": False, "rope_d": "none"},
    scope={"packed": {"rope_d": ("none", "128")}, "mla": {"rope": (True,), "rope_d": ("512",)}},
    rules=("rope", "mla"),
    golden=("fia_fuzz.golden.api", "fia_fuzz.golden.mla_quant"),
    runners=("fia_fuzz.runners.composition.attend",),
    notes={6: """6. **MLA full-quant output dtype.** The V4 MLA table gives attention BFLOAT16
   for an int8 query; torch_npu's meta functions take the output dtype of an
   int8 query from query_rope's dtype (float16 without rope). `infer_outputs`
   does the same, which `rope.dtype` makes bfloat16 for MLA."""},
))
