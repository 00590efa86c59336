"""Sparse modes 1-4 and the pre/next band vs mode 0 with the equivalent explicit mask.

[V4 §Mask, MS sparse_mode, fia-semantics.md §4]. The partner spells out, per
batch, every masked (row, column) pair of the source (`masks.effective_mask`)
as a (B, 1, S1, S2) boolean mask under sparse_mode 0 with no band; a source
without any mask gets the all-visible mask, which must change nothing.
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    keep_legal,
    relation,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.masks import effective_mask
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS

MASK_TOLERANCE = Tolerance(2, "sparse modes let the kernel skip fully masked tiles and start "
                              "the online softmax at another tile than the explicit-mask path, "
                              "which reorders the fp32 accumulation")


@relation("sparse_mask", "sparse modes 1-4 and the band equal mode 0 with the explicit mask",
          "V4 §Mask (sparseMode 0-4); fia-semantics.md §4",
          (MASK_TOLERANCE,))
def sparse_vs_explicit_mask(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE_LAYOUTS:
        raise NotApplicable(f"{v.in_layout}: packed-layout masks not modelled")
    if v.decode and call.get("query_rope") is None:
        raise NotApplicable("decode without rope ignores sparse_mode and the band")
    mode = int(v.attrs["sparse_mode"])
    masked = effective_mask(call, v)
    new = dict(call, sparse_mode=0, atten_mask=np.ascontiguousarray(masked[:, None]))
    new.pop("pre_tokens", None)
    new.pop("next_tokens", None)
    label = f"mode{mode}->explicit" if call.get("atten_mask") is not None or mode else \
        "none->all-visible"
    return keep_legal([Partner(label, new, MASK_TOLERANCE)], case.rules)
