"""A normalised, data-free view of one call, the thing every rule reads.

Arguments arrive as arrays, torch tensors, TensorSpecs, lists or scalars; the
view reduces tensors to TensorSpec and value-carrying arguments to Python int
lists, fills attribute defaults, and derives the problem dimensions (B, N,
KV_N, S1, S2, D, Dv) from the layout (fia-semantics.md §1-2). A derived
dimension that cannot be read because its source is malformed raises
`Undetermined`, which `validate` turns into "rule skipped".

`CallView` assembles the parts of `fia_fuzz.op.view`, one module per concern
(arguments, layout, dims, paging, lengths, quant); every derived value is
computed once, on first use.
"""

from __future__ import annotations

from fia_fuzz.op.view.arguments import (
    INT64_MAX,
    INT64_MIN,
    BadArgument,
    int64_values,
    is_int64,
)
from fia_fuzz.op.view.dims import DimsView
from fia_fuzz.op.view.lengths import LengthsView
from fia_fuzz.op.view.paging import PagingView
from fia_fuzz.op.view.quant import QuantView

__all__ = ["INT64_MAX", "INT64_MIN", "BadArgument", "CallView", "int64_values", "is_int64"]


class CallView(DimsView, PagingView, LengthsView, QuantView):
    """Everything a rule may ask about a call, derived once and lazily."""
