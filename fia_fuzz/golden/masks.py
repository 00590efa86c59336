"""Which (query row, key column) pairs a batch may attend, and pse_shift [SEM §3-5].

Three sources exclude a pair, OR-ed together:
- the valid windows (padding rows/columns, act lengths, left padding) [SEM §3];
- the sparse mode's band, relative to the valid window, anchored per batch
  for modes 3/4 with the shared prefix counted in S2 [V4 §Mask, SEM §4];
- the user atten_mask (modes 0/1, and the decode branch), indexed by
  absolute position in the padded tensors [SEM §3].
Every shape the docs allow, including masks larger than S1 x S2, reduces to a
(B or 1, rows, cols) bool array read by absolute position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import band_window, user_mask


def _crop(arr: np.ndarray, rows: slice, cols: slice, fill: Any) -> np.ndarray:
    """arr[..., rows, cols], padded with `fill` where the tile runs past arr's edges."""
    part = arr[..., rows, cols]
    want = (rows.stop - rows.start, cols.stop - cols.start)
    if part.shape[-2:] != want:
        pad = [(0, 0)] * (part.ndim - 2) + [(0, want[0] - part.shape[-2]),
                                            (0, want[1] - part.shape[-1])]
        part = np.pad(part, pad, constant_values=fill)
    return part


def _batches(arr: np.ndarray, bsl: slice) -> np.ndarray:
    """The tile's batches of a per-batch argument; a batch dim of 1 broadcasts."""
    return arr[bsl] if arr.shape[0] > 1 else arr


class Masking:
    """Excluded pairs of one call, produced tile by tile for the attention step."""

    def __init__(self, view: CallView, call: dict[str, Any], q_len: np.ndarray,
                 q_off: np.ndarray, kv_len: np.ndarray, kv_off: np.ndarray):
        self.q_len, self.q_off, self.kv_len, self.kv_off = q_len, q_off, kv_len, kv_off
        self._windows: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        self.band = band_window(view, call, q_len, kv_len)
        mode = view.attr_int("sparse_mode")
        uses_mask = (view.decode and call.get("query_rope") is None) or mode in (0, 1)
        mask = call.get("atten_mask")
        self.mask = (user_mask(mask, view.B, view.decode) if mask is not None and uses_mask
                     else None)

    def excluded(self, bsl: slice, rows: slice, cols: slice) -> np.ndarray | None:
        """bool (b, r, c): True where row/column of the tile must not be attended."""
        if self.band is None and self.mask is None and self._inside(bsl, rows, cols):
            return None
        r = np.arange(rows.start, rows.stop)[None, :] - self.q_off[bsl, None]
        c = np.arange(cols.start, cols.stop)[None, :] - self.kv_off[bsl, None]
        bad_r = (r < 0) | (r >= self.q_len[bsl, None])
        bad_c = (c < 0) | (c >= self.kv_len[bsl, None])
        ex = bad_r[:, :, None] | bad_c[:, None, :]
        if self.band is not None:
            pre, nxt = (x[bsl, None, None] for x in self.band)
            rr, cc = r[:, :, None], c[:, None, :]
            ex |= (cc > rr + nxt) | (cc < rr - pre)
        if self.mask is not None:
            ex |= _crop(_batches(self.mask, bsl), rows, cols, True)
        return ex if ex.any() else None


    def _inside(self, bsl: slice, rows: slice, cols: slice) -> bool:
        """Whether the whole tile lies inside every batch's valid window (the windows'
        intersection found once per batch slice: this runs for every tile and block)."""
        key = (bsl.start, bsl.stop)
        if key not in self._windows:
            q_off, kv_off = self.q_off[bsl], self.kv_off[bsl]
            self._windows[key] = (int(q_off.max()), int((q_off + self.q_len[bsl]).min()),
                                  int(kv_off.max()), int((kv_off + self.kv_len[bsl]).min()))
        r_lo, r_hi, c_lo, c_hi = self._windows[key]
        return rows.start >= r_lo and rows.stop <= r_hi and cols.start >= c_lo and cols.stop <= c_hi


def pse_bias(pse: np.ndarray | None, bsl: slice, rows: slice, cols: slice
             ) -> np.ndarray | None:
    """pse_shift (B|1, N, S1, S2) for a tile, indexed by absolute position [SEM §5]."""
    if pse is None:
        return None
    return _crop(_batches(pse, bsl), rows, cols, 0)
