"""The public names of the case model and the legality model, in one import path.

`from fia_fuzz.spec import Case, TensorSpec, validate, infer_outputs, IllegalCall`
(../shared/api-contract.md). The code behind them lives in `fia_fuzz.op` (the
op's model: case, call view, geometry, tensors, values, outputs) and
`fia_fuzz.rules` (rules, profiles, validation); nothing in the package imports
this module.
"""

from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.tensors import DTYPES, TensorSpec
from fia_fuzz.rules.rule import RULES, IllegalCall, Rule, Violation
from fia_fuzz.rules.validate import infer_outputs, require_legal, validate

__all__ = [
    "DTYPES", "RULES", "CallView", "Case", "IllegalCall", "Rule", "TensorSpec", "Violation",
    "infer_outputs", "output_specs", "require_legal", "validate",
]
