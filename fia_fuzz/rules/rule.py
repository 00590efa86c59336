"""Rules as data: id, summary, source citation and a check over a CallView.

A rule lives once, here in `rules`; strategies construct around rules, the
golden and the runners validate with them, and the CLI explains with them.
A check returns None when the call satisfies the rule and a message naming
the offending values when it does not. A check that needs something which is
itself missing or malformed raises `Undetermined` and is skipped, so one bad
argument reports one rule, not a cascade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fia_fuzz.op.undetermined import Undetermined

if TYPE_CHECKING:
    from fia_fuzz.op.call import CallView


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    source: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message} (source: {self.source})"


class IllegalCall(ValueError):
    """Raised by everything that must not proceed on an illegal call."""

    def __init__(self, violations: list[Violation]):
        self.violations = list(violations)
        lines = "\n  ".join(str(v) for v in self.violations)
        super().__init__(f"illegal FusedInferAttentionScore call, {len(self.violations)} "
                         f"violation(s):\n  {lines}")


Check = Callable[["CallView"], "str | None"]


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    source: str
    check: Check


RULES: dict[str, Rule] = {}


def rule(id: str, summary: str, source: str, registry: dict[str, Rule] | None = None
         ) -> Callable[[Check], Check]:
    """Register a check function as the rule `id`; registration order is evaluation order.

    `registry` defaults to RULES, the documented rules; a device rule profile
    (`fia_fuzz.rules.profiles`) registers its own rules in its own registry.
    """
    into = RULES if registry is None else registry

    def register(fn: Check) -> Check:
        if id in into or id in RULES:
            raise RuntimeError(f"rule id {id!r} registered twice")
        into[id] = Rule(id, summary, source, fn)
        return fn

    return register


#: Short name -> the document a citation points to: the API it documents, then its file
#: under shared/ (seeds/README.md lists them).
SEEDS: dict[str, str] = {
    "V2": "aclnnFusedInferAttentionScoreV2 (seeds/000_123638891055dff8.txt)",
    "V4": "aclnnFusedInferAttentionScoreV4 (seeds/001_930a6e6a96d7cc24.txt)",
    "IFA": "aclnnIncreFlashAttentionV4 (seeds/002_d5416267547d618d.txt)",
    "MS": "mindspore.ops.fused_infer_attention_score (seeds/003_b2802b45e2f8b643.txt)",
    "TA": "torch_npu.npu_fused_infer_attention_score_v2 in TorchAir "
          "(seeds/004_e282959448026c7b.txt)",
    "SEM": "FIA semantics digest (fia-semantics.md)",
    "TNPU": "torch_npu-2.13.0 wheel, torch_npu/_op_plugin_docs.py "
            "(npu_fused_infer_attention_score_v2)",
    "A2-V3": "device-a2.md; ops-transformer fused_infer_attention_score/op_host/"
             "checkers/*.cpp (FIAChecker; V3 tiling arch22/..._tiling_v3.cpp RouteToFia)",
    "A2-FAI": "device-a2.md; ops-transformer fused_infer_attention_score/op_host/arch22/"
              "..._tiling_v3.cpp CheckSpecConditions, fused_infer_attention_score_tiling.cpp "
              "(TND split-fuse)",
    "A2-IFA": "device-a2.md; ops-transformer incre_flash_attention op_host tiling "
              "(older decode route)",
}


def src(doc: str, section: str) -> str:
    """A citation: the document (by its short name: its API, then its file) and section."""
    return f"{doc} {SEEDS[doc]} §{section}"


__all__ = ["RULES", "SEEDS", "IllegalCall", "Rule", "Undetermined", "Violation", "rule", "src"]
