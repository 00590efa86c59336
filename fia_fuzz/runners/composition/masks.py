"""Masks, sparse modes and pse_shift as one additive fp32 bias per batch [SEM §4, §5].

A masked (row, key) gets -inf, pse_shift is added to the scaled scores. Row
i and key j are 0-based within the batch's valid window for the band and
sparse modes 2-4; a user atten_mask and pse_shift are read at their own
coordinates (`Window.mask_row0`/`mask_col0`, absolute under left padding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fia_fuzz.runners.composition.geometry import Window
from fia_fuzz.runners.torch_convert import to_torch


def _mask4(mask: np.ndarray, decode: bool) -> np.ndarray:
    """Any documented atten_mask shape as (B|1, 1, S1, S2) booleans (1 = do not attend).

    Prefill: (S1,S2), (B|1,S1,S2), (B|1,1,S1,S2); decode: (B,S2), (B,1,S2), (B,1,1,S2).
    """
    m = np.asarray(mask) != 0
    if m.ndim == 2:
        return m[:, None, None, :] if decode else m[None, None]
    if m.ndim == 3:
        return m[:, None]
    return m


def band(rows: int, keys: int, pre: int, nxt: int) -> torch.Tensor:
    """(rows, keys) True where key j is outside [i - pre, i + next] [SEM §4]."""
    i = torch.arange(rows).unsqueeze(1)
    j = torch.arange(keys).unsqueeze(0)
    return (j > i + nxt) | (j < i - pre)


@dataclass
class MaskPlan:
    """What decides the masked set of every batch: mode, band, user mask, pse."""

    sparse_mode: int
    pre: int
    nxt: int
    user_mask: np.ndarray | None
    pse: torch.Tensor | None
    left_padded: bool

    @classmethod
    def of(cls, call: dict[str, Any], decode: bool, device: str) -> MaskPlan:
        mask = call.get("atten_mask")
        pse = call.get("pse_shift")
        left = (call.get("query_padding_size") is not None
                and call.get("actual_seq_lengths") is not None) or (
                call.get("kv_padding_size") is not None
                and call.get("actual_seq_lengths_kv") is not None)
        mode = int(call.get("sparse_mode") or 0)
        pre = int(call.get("pre_tokens", 2147483647))
        nxt = int(call.get("next_tokens", 2147483647))
        if decode:
            # Q_S == 1 without rope ignores sparse_mode, pre_tokens, next_tokens [SEM §4].
            mode, pre, nxt = 0, 2147483647, 2147483647
        return cls(mode, pre, nxt,
                   None if mask is None else _mask4(mask, decode),
                   None if pse is None else to_torch(np.asarray(pse), device).float(),
                   left)

    def masked(self, b: int, w: Window) -> torch.Tensor:
        """(rows, keys) booleans: True = excluded from the softmax."""
        rows, keys = w.rows, w.keys
        mode = self.sparse_mode
        if mode == 2:
            return band(rows, keys, 2147483647, 0)
        if mode == 3:
            return band(rows, keys, 2147483647, keys - rows)
        if mode == 4:
            return band(rows, keys, rows - keys + self.pre, keys - rows + self.nxt)
        if self.user_mask is None:
            return torch.zeros(rows, keys, dtype=torch.bool)
        user = torch.from_numpy(np.ascontiguousarray(self._user(b, w)))
        if mode == 0 and not self.left_padded:
            user = user | band(rows, keys, self.pre, self.nxt)
        return user

    def _user(self, b: int, w: Window) -> np.ndarray:
        m = self.user_mask
        assert m is not None
        plane = m[b if m.shape[0] > 1 else 0, 0]
        return plane[w.mask_row0:w.mask_row0 + w.rows][:, _columns(w)]

    def bias(self, b: int, w: Window) -> torch.Tensor:
        """(N|1, rows, keys) fp32: -inf where masked, plus pse_shift."""
        masked = self.masked(b, w)
        bias = torch.zeros(masked.shape, dtype=torch.float32)
        bias[masked] = float("-inf")
        bias = bias.unsqueeze(0)
        if self.pse is not None:
            plane = self.pse[b if self.pse.shape[0] > 1 else 0]
            rows = plane[:, w.mask_row0:w.mask_row0 + w.rows]
            bias = bias.to(plane.device) + rows[:, :, torch.from_numpy(_columns(w))]
        return bias


def _columns(w: Window) -> np.ndarray:
    """Mask/pse columns of the batch's keys: prefix first, then its KV tokens [SEM §6]."""
    prefix = np.arange(w.prefix_len)
    kv = np.arange(w.mask_col0, w.mask_col0 + w.keys - w.prefix_len)
    return np.concatenate([prefix, kv]).astype(np.int64)
