"""The layout pair and the KV source form (tensor, tensor list, paged cache)."""

from __future__ import annotations

from functools import cached_property

from fia_fuzz.op.geometry import LAYOUTS, PACKED_LAYOUTS
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.view.arguments import Arguments


class LayoutView(Arguments):
    @cached_property
    def layout_pair(self) -> tuple[str, str]:
        lay = self.attrs["input_layout"]
        if not isinstance(lay, str) or lay not in LAYOUTS:
            raise Undetermined("input_layout")
        return LAYOUTS[lay]

    @property
    def in_layout(self) -> str:
        return self.layout_pair[0]

    @property
    def out_layout(self) -> str:
        return self.layout_pair[1]

    @cached_property
    def packed(self) -> bool:
        return self.in_layout in PACKED_LAYOUTS

    @property
    def is_kv_list(self) -> bool:
        return isinstance(self.specs.get("key"), list)

    @cached_property
    def paged(self) -> bool:
        return "block_table" in self.present
