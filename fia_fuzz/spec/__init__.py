"""The case model and the legality model of FusedInferAttentionScore.

Public names (../shared/api-contract.md): TensorSpec, validate, infer_outputs,
IllegalCall, Violation, Case, RULES.
"""

from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.case import Case
from fia_fuzz.spec.rules import RULES, IllegalCall, Rule, Violation
from fia_fuzz.spec.tensors import DTYPES, TensorSpec
from fia_fuzz.spec.validate import infer_outputs, output_specs, require_legal, validate

__all__ = [
    "DTYPES", "RULES", "CallView", "Case", "IllegalCall", "Rule", "TensorSpec", "Violation",
    "infer_outputs", "output_specs", "require_legal", "validate",
]
