"""CallView is assembled from one part per concern (fia_fuzz/op/view/): each member has
one home, so no part silently shadows another's through the method order."""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.view.arguments import Arguments


def _own(cls: type) -> set[str]:
    return {n for n in vars(cls) if not n.startswith("__")}


def test_every_member_has_one_home() -> None:
    parts = [c for c in CallView.__mro__ if c not in (CallView, object)]
    assert all(c.__module__.startswith("fia_fuzz.op.view.") for c in parts)
    homes: dict[str, list[str]] = {}
    for c in parts:
        for name in _own(c):
            homes.setdefault(name, []).append(c.__name__)
    assert {n: h for n, h in homes.items() if len(h) > 1} == {}
    assert _own(CallView) == set()


def test_parts_read_each_other_through_the_assembled_view() -> None:
    """A dimension of one part (dims) read through another (lengths, paging) on a paged call."""
    view = CallView({
        "query": TensorSpec((2, 1, 128), "float16"), "key": TensorSpec((4, 16, 128), "float16"),
        "value": TensorSpec((4, 16, 128), "float16"), "input_layout": "BSH", "num_heads": 1,
        "block_table": [[0, 1], [2, 3]], "block_size": 16, "actual_seq_lengths_kv": [20, 32],
    })
    assert isinstance(view, Arguments)
    assert (view.B, view.S2, view.Dk, view.cache_layout) == (2, 32, 128, "BnBsH")
    assert (view.act_q, view.act_kv, view.max_blocks_per_seq, view.decode) == ([1, 1], [20, 32],
                                                                               2, True)
