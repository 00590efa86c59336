"""Special values placed into a materialised call: NaN and +-Inf in query, key, value, the
position bias and the antiquant scales and offsets, and fully masked rows in atten_mask
(the `values` feature axis).

A fill recipe may carry, beside its dist, a placement (docs/values.md):

    {"dist": "normal", "scale": 1.0, "special": "nan", "where": "masked", "count": 2}

`special` is "nan", "inf" or "-inf" (a float tensor) or "full_row" (atten_mask: every
column of a row masked); `where` names the region of the call the positions are drawn
from, by the op's own geometry and masks [SEM §3-4] (an antiquant scale or offset has no
region: any of its elements, each of which scales some keys' or values' channels or
tokens):

- attended: a valid query row that attends some key; a key/value column inside its
  batch's valid window that some valid row attends; a position-bias element of an
  attended (row, column) pair;
- masked: a key/value column inside the valid window that some valid row masks (the
  band or atten_mask excludes it); for the query, a valid row every key of which is
  masked;
- padding: positions outside the valid window that the tensor still holds: query rows
  past actual_seq_lengths (or before a left-padded window), key/value columns past
  actual_seq_lengths_kv (a left-padded window, a tensor-list entry longer than its
  length, the rest of a paged request's last block).

`count` positions are drawn (with repetition) from the region with the stream of
(seed, name + "/special"): integer arithmetic on PCG64 words only, so the same case
gives the same bits everywhere (op/values.py's contract). The dist's own values come
first and are untouched elsewhere: a recipe without `special` materialises as before.
A region the case does not have (no mask, no padding) places nothing; `unplaced` names
the fills whose region is empty in a call, so a strategy can drop their special and the
`values` label never names a value the call does not hold.

The regions are computed here from op/geometry.py (windows, band, user mask) for
placement only; what the op does with the values is the golden's business.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from fia_fuzz.numerics.narrow import narrow
from fia_fuzz.op.args import antiquant, pse, rope
from fia_fuzz.op.call import CallView
from fia_fuzz.op.geometry import (
    band_window,
    blocks_needed,
    kv_window,
    query_window,
    to_bnsd,
    user_mask,
)
from fia_fuzz.op.values import raw_bits

SPECIAL, WHERE, COUNT = "special", "where", "count"
#: The float specials and their values.
FLOAT_SPECIALS = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}
#: The mask special: every column of a row masked.
FULL_ROW = "full_row"
WHERES = ("attended", "masked", "padding")
#: Tensors a float special may sit in: by region, the position bias's attended pairs, or
#: anywhere in an antiquant scale or offset.
FLOAT_TARGETS = ("query", "key", "value", pse.NAME, *antiquant.TENSORS)
#: Raw words per placed position (batch/row/column choice, head, dim, spare).
WORDS = 4


def has_specials(fills: dict[str, dict[str, Any]]) -> bool:
    return any(SPECIAL in f for f in fills.values())


def apply_specials(fills: dict[str, dict[str, Any]], seed: int, call: dict[str, Any]) -> None:
    """Write every fill's special values into the materialised `call`, in place."""
    names = [n for n in (*FLOAT_TARGETS, "atten_mask")
             if SPECIAL in fills.get(n, {}) and call.get(n) is not None]
    if not names:
        return
    regions = _Regions(CallView(call), call)
    for name in names:
        fill = fills[name]
        count = max(0, int(fill.get(COUNT, 1)))
        raw = raw_bits(seed, f"{name}/{SPECIAL}", 0, WORDS * count).reshape(count, WORDS)
        where = str(fill.get(WHERE, "attended"))
        if name == "atten_mask":
            if fill[SPECIAL] == FULL_ROW:
                regions.full_rows(raw)
            continue
        value = FLOAT_SPECIALS[str(fill[SPECIAL])]
        if name == pse.NAME:
            regions.place_pse(raw, value)
        elif name in antiquant.TENSORS:
            _place_anywhere(call[name], raw, value)
        else:
            regions.place(name, where, raw, value)


def unplaced(fills: dict[str, dict[str, Any]], call: dict[str, Any]) -> list[str]:
    """The tensors whose special would place nothing in `call`: its region is empty (a
    bernoulli mask that masks no key inside the valid window, a band that masks nothing,
    every row fully masked). Only atten_mask needs its data: the regions read the others'
    shapes (`Case.call(data=False)` with the mask materialised)."""
    names = [n for n in (*FLOAT_TARGETS, "atten_mask")
             if SPECIAL in fills.get(n, {}) and call.get(n) is not None]
    if not names:
        return []
    regions = _Regions(CallView(call), call)
    return [n for n in names if not regions.placeable(n, str(fills[n].get(WHERE, "attended")))]


def _place_anywhere(x: np.ndarray, raw: np.ndarray, value: float) -> None:
    """`value` at elements of `x` (flat positions)."""
    flat = x.reshape(-1)  # a view: the materialised tensors are contiguous
    if flat.size and np.shares_memory(flat, x):
        for words in raw:
            flat[_pick(words[0], flat.size)] = narrow(value, flat.dtype)


def _pick(raw: np.ndarray, n: int) -> int:
    return int(raw % np.uint64(n))


class _Regions:
    """The valid windows, band and mask of one call, per batch, in the golden's frame: query
    rows by absolute position, key columns with the shared prefix first."""

    def __init__(self, view: CallView, call: dict[str, Any]):
        self.view, self.call = view, call
        self.q_len, self.q_off = query_window(view)
        self.kv_len, self.kv_off = kv_window(view)
        self.prefix = view.prefix_len if call.get("key_shared_prefix") is not None else 0
        self.s2b = self.kv_len + self.prefix
        self.band = band_window(view, call, self.q_len, self.s2b)
        mode = view.attr_int("sparse_mode")
        self.uses_mask = (view.decode and call.get(rope.QUERY) is None) or mode in (0, 1)
        mask = call.get("atten_mask")
        self.mask = user_mask(mask, view.B, view.decode) if mask is not None and \
            self.uses_mask else None
        self.rows = int(self.q_len.max()) if view.packed and len(self.q_len) else view.S1
        self.B = view.B

    # ---- regions -------------------------------------------------------------
    def _kv_extent(self, b: int) -> int:
        """Key columns batch b's tensor holds (its own frame, prefix excluded)."""
        v = self.view
        if v.paged:
            bs = v.attr_int("block_size")
            return blocks_needed(int(self.kv_len[b]), bs) * bs
        if v.packed:
            return int(self.kv_len[b])
        return v.kv_seq(b)

    def excluded(self, b: int) -> np.ndarray:
        """bool (rows, prefix + columns): True where batch b's row must not attend the key."""
        cols = self.prefix + self._kv_extent(b)
        r = np.arange(self.rows)[:, None] - self.q_off[b]
        c = np.arange(cols)[None, :] - self.kv_off[b]
        ex = (r < 0) | (r >= self.q_len[b]) | (c < 0) | (c >= self.s2b[b])
        if self.band is not None:
            pre, nxt = int(self.band[0][b]), int(self.band[1][b])
            ex |= (c > r + nxt) | (c < r - pre)
        if self.mask is not None:
            m = self.mask[b if self.mask.shape[0] > 1 else 0, :self.rows, :cols]
            part = np.ones(ex.shape, bool)
            part[:m.shape[0], :m.shape[1]] = m
            ex |= part
        return ex

    def _valid_rows(self, b: int) -> np.ndarray:
        r = np.arange(self.rows) - self.q_off[b]
        return (r >= 0) & (r < self.q_len[b])

    def _hits(self, name: str, where: str) -> Iterator[tuple[int, np.ndarray]]:
        """Per batch: (batch, rows or key columns of the region in the tensor's own frame)."""
        for b in range(self.B):
            ex = self.excluded(b)
            rows = self._valid_rows(b)
            if name == "query":
                if where == "attended":
                    hit = rows & ~ex.all(axis=1)
                elif where == "masked":
                    hit = rows & ex.all(axis=1)
                else:
                    hit = ~rows if not self.view.packed else np.zeros_like(rows)
                yield b, np.flatnonzero(hit)
                continue
            c = np.arange(ex.shape[1]) - self.kv_off[b]
            inside = (c >= 0) & (c < self.s2b[b])
            if where == "attended":
                hit = inside & (~ex[rows]).any(axis=0)
            elif where == "masked":
                hit = inside & ex[rows].any(axis=0)
            else:
                hit = ~inside
            hit[:self.prefix] = False  # the shared prefix is another tensor
            yield b, np.flatnonzero(hit) - self.prefix

    def _candidates(self, name: str, where: str) -> list[tuple[int, int]]:
        """(batch, row or key column in the tensor's own frame) pairs of the region."""
        return [(b, int(s)) for b, hit in self._hits(name, where) for s in hit]

    def _pse_hits(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Per batch of the bias: (batch, rows, columns) of the pairs some valid row attends."""
        bias = self.call[pse.NAME]
        for b in range(self.B if bias.shape[0] > 1 else 1):
            ex = self.excluded(b)[:bias.shape[2], :bias.shape[3]]
            yield (b, *np.nonzero(~ex))

    def _pse_pairs(self) -> list[tuple[int, int, int]]:
        """(batch, row, column) pairs of the position bias some valid row attends."""
        return [(b, int(r), int(c)) for b, rows, cols in self._pse_hits()
                for r, c in zip(rows, cols, strict=True)]

    def _mask_rows(self) -> list[tuple[int, int]]:
        """(batch, row) of the valid rows of a used atten_mask (none when it is unused)."""
        if self.mask is None:
            return []
        return [(b, int(r)) for b in range(self.B if self.mask.shape[0] > 1 else 1)
                for r in np.flatnonzero(self._valid_rows(b))]

    def placeable(self, name: str, where: str) -> bool:
        """Whether the region of a special of `name` (`where`: its region; pse and mask have
        one) holds a position: the first batch that has one answers, no list is built."""
        if name == pse.NAME:
            return any(rows.size for _, rows, _ in self._pse_hits())
        if name == "atten_mask":
            return self.mask is not None and any(
                self._valid_rows(b).any() for b in range(self.B if self.mask.shape[0] > 1
                                                         else 1))
        if name in antiquant.TENSORS:
            return int(np.size(self.call[name])) > 0
        return any(hit.size for _, hit in self._hits(name, where))

    # ---- placement -------------------------------------------------------------
    def place(self, name: str, where: str, raw: np.ndarray, value: float) -> None:
        cands = self._candidates(name, where)
        if not cands:
            return
        heads = self.view.N if name == "query" else self.view.KV_N
        for words in raw:
            b, s = cands[_pick(words[0], len(cands))]
            self._write(name, b, _pick(words[1], heads), s, words[2], value)

    def _write(self, name: str, b: int, h: int, s: int, dword: np.uint64, value: float
               ) -> None:
        v, x = self.view, self.call[name]
        if v.paged and name != "query":
            bs = v.attr_int("block_size")
            blk = int(np.asarray(self.call["block_table"])[b][s // bs])
            off = s % bs
            if x.ndim == 3:
                d = _pick(dword, x.shape[2] // v.KV_N)
                x[blk, off, h * (x.shape[2] // v.KV_N) + d] = narrow(value, x.dtype)
            elif x.ndim == 4:
                x[blk, h, off, _pick(dword, x.shape[3])] = narrow(value, x.dtype)
            else:
                c0 = x.shape[4]
                d = _pick(dword, x.shape[2] * c0)
                x[blk, h, d // c0, off, d % c0] = narrow(value, x.dtype)
            return
        if isinstance(x, list):
            x, s_b = x[b], s
            target = to_bnsd(x, v.in_layout, v.KV_N)[0, h, s_b]
        elif v.packed:
            start = int(np.sum((self.q_len if name == "query" else self.kv_len)[:b]))
            target = x[start + s, h] if v.in_layout == "TND" else x[h, start + s]
        else:
            target = to_bnsd(x, v.in_layout, heads=v.N if name == "query" else v.KV_N)[b, h, s]
        if np.shares_memory(target, x):
            target[_pick(dword, target.shape[-1])] = narrow(value, target.dtype)

    def place_pse(self, raw: np.ndarray, value: float) -> None:
        """`value` at attended (row, column) pairs of the position bias (absolute positions)."""
        bias = self.call[pse.NAME]
        pairs = self._pse_pairs()
        if not pairs:
            return
        for words in raw:
            b, r, c = pairs[_pick(words[0], len(pairs))]
            bias[b, _pick(words[1], bias.shape[1]), r, c] = narrow(value, bias.dtype)

    def full_rows(self, raw: np.ndarray) -> None:
        """Mask every column of valid rows of atten_mask (a row of no attended key)."""
        mask = self.call["atten_mask"]
        rows = self._mask_rows()
        if not rows:
            return
        for words in raw:
            b, r = rows[_pick(words[0], len(rows))]
            if mask.ndim == 2 and not self.view.decode:
                mask[r, :] = 1
            elif mask.ndim == 2:
                mask[b, :] = 1
            elif mask.ndim == 3:
                mask[b if mask.shape[0] > 1 else 0, r, :] = 1
            else:
                mask[b if mask.shape[0] > 1 else 0, 0, r, :] = 1
