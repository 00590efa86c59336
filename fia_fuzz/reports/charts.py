"""The dashboard's charts as inline SVG: heatmaps, step ECDFs and a trend, no JS library.

A charting library inlined into the page weighed megabytes (plotly.js: 4.6 MB
of a 4.8 MB page); these three chart kinds need a few hundred lines of SVG.
Hover details are SVG <title> tooltips; a heatmap's policy selector shows one
layer per policy (`PICK_JS`). Every function returns an HTML fragment.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np

#: Shows the heatmap layer of the policy picked in the chart's selector.
PICK_JS = """
function pickPolicy(sel){
  sel.closest('.chart').querySelectorAll('[data-policy]').forEach(function(g){
    g.style.display = g.getAttribute('data-policy') === sel.value ? '' : 'none';});
}
"""
#: Colour stops of pass rates 0, 0.5 and 1 (red, yellow, green; ColorBrewer RdYlGn ends).
_STOPS = ((0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80)))
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
_CHAR_W = 7  # px per character of 12px labels, for margins


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def rate_colour(rate: float | None) -> str:
    """The fill of a pass rate in [0, 1] (grey when the cell has no decided case)."""
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return "#eeeeee"
    r = min(1.0, max(0.0, float(rate)))
    for (a, ca), (b, cb) in zip(_STOPS, _STOPS[1:], strict=False):
        if r <= b:
            t = (r - a) / (b - a)
            return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb,
                                                                                 strict=True))
    return "#1a9850"


class Cell:
    """One heatmap cell: pass rate (None when no decided case), label lines and a tooltip."""

    def __init__(self, rate: float | None, lines: Sequence[str], tip: str):
        self.rate, self.lines, self.tip = rate, lines, tip


def heatmap(title: str, row_name: str, col_name: str, ys: list[object], xs: list[object],
            layers: dict[str, dict[tuple[object, object], Cell]], shown: str,
            chart_id: str) -> str:
    """A heatmap with one layer per policy and a selector; `shown` is visible first."""
    cw, chh = 74, 36
    left = 16 + _CHAR_W * max([len(str(y)) for y in ys] + [len(row_name)])
    top, bottom = 8, 44
    width, height = left + cw * len(xs) + 8, top + chh * len(ys) + bottom
    parts = [f"<div class='chart heatmap' id='{_e(chart_id)}'><div class='chart-head'>"
             f"<b>pass rate by {_e(title)}</b> <select class='policy' "
             "onchange='pickPolicy(this)'>"
             + "".join(f"<option{' selected' if p == shown else ''}>{_e(p)}</option>"
                       for p in layers)
             + f"</select></div><svg viewBox='0 0 {width} {height}' width='{width}' "
             f"height='{height}' role='img'>"]
    for i, y in enumerate(ys):
        parts.append(f"<text x='{left - 6}' y='{top + chh * i + chh / 2 + 4}' "
                     f"text-anchor='end'>{_e(y)}</text>")
    for j, x in enumerate(xs):
        parts.append(f"<text x='{left + cw * j + cw / 2}' y='{top + chh * len(ys) + 16}' "
                     f"text-anchor='middle'>{_e(x)}</text>")
    parts.append(f"<text x='{left + cw * len(xs) / 2}' y='{height - 6}' text-anchor='middle' "
                 f"class='axis'>{_e(col_name)}</text>"
                 f"<text x='4' y='{top + chh * len(ys) + 16}' class='axis'>{_e(row_name)}"
                 "</text>")
    for policy, cells in layers.items():
        hidden = "" if policy == shown else " style='display:none'"
        parts.append(f"<g class='layer' data-policy='{_e(policy)}'{hidden}>")
        for i, y in enumerate(ys):
            for j, x in enumerate(xs):
                c = cells.get((y, x))
                if c is None:
                    continue
                cx, cy = left + cw * j, top + chh * i
                parts.append(f"<g class='cell'><title>{_e(c.tip)}</title>"
                             f"<rect x='{cx}' y='{cy}' width='{cw - 2}' height='{chh - 2}' "
                             f"fill='{rate_colour(c.rate)}'/>")
                for k, line in enumerate(c.lines):
                    parts.append(f"<text x='{cx + cw / 2 - 1}' y='{cy + 14 + 13 * k}' "
                                 f"text-anchor='middle'>{_e(line)}</text>")
                parts.append("</g>")
        parts.append("</g>")
    parts.append("</svg></div>")
    return "".join(parts)


def _decades(values: list[np.ndarray]) -> tuple[int, int]:
    lo = min(float(v.min()) for v in values)
    hi = max(float(v.max()) for v in values)
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return a, max(b, a + 1)


def ecdf(title: str, series: dict[str, np.ndarray], colours: dict[str, str]) -> str:
    """Step ECDFs on a log x axis (values floored at 1e-12), one line per series."""
    w, h, left, top, bottom = 330, 230, 46, 24, 34
    pw, ph = w - left - 10, h - top - bottom
    vals = {k: np.sort(np.maximum(np.asarray(v, dtype=np.float64), 1e-12))
            for k, v in series.items() if np.size(v)}
    parts = [f"<svg viewBox='0 0 {w} {h}' width='{w}' height='{h}' class='ecdf' role='img'>"
             f"<text x='{w / 2}' y='14' text-anchor='middle'>{_e(title)}</text>"]
    if vals:
        a, b = _decades(list(vals.values()))

        def px(x: float) -> float:
            return left + pw * (math.log10(x) - a) / (b - a)

        step = max(1, (b - a) // 5)
        for d in range(a, b + 1, step):
            parts.append(f"<line x1='{px(10.0 ** d):.1f}' x2='{px(10.0 ** d):.1f}' y1='{top}' "
                         f"y2='{top + ph}' class='grid'/><text x='{px(10.0 ** d):.1f}' "
                         f"y='{top + ph + 14}' text-anchor='middle'>1e{d}</text>")
        for q in (0.0, 0.5, 1.0):
            y = top + ph * (1 - q)
            parts.append(f"<line x1='{left}' x2='{left + pw}' y1='{y}' y2='{y}' class='grid'/>"
                         f"<text x='{left - 4}' y='{y + 4}' text-anchor='end'>{q:.0%}</text>")
        for name, v in vals.items():
            n = v.size
            d = [f"M{px(v[0]):.1f},{top + ph:.1f}"]
            for i, x in enumerate(v, start=1):
                d.append(f"H{px(x):.1f}V{top + ph * (1 - i / n):.1f}")
            parts.append(f"<path d='{''.join(d)}' fill='none' stroke='{colours[name]}' "
                         f"stroke-width='1.5'><title>{_e(name)}: {n} cases</title></path>")
    parts.append("</svg>")
    return "".join(parts)


def legend(colours: dict[str, str]) -> str:
    return "<div class='legend'>" + "".join(
        f"<span><i style='background:{c}'></i>{_e(k)}</span>" for k, c in colours.items()
    ) + "</div>"


def trend(runs: list[str], series: dict[str, list[float]]) -> str:
    """Pass rate per series over runs (categorical x, y from 0 to 100%)."""
    left, top, bottom = 46, 12, 60
    w = max(420, left + 90 * len(runs) + 20)
    h = 300
    pw, ph = w - left - 20, h - top - bottom
    colours = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(series)}

    def xy(i: int, r: float) -> tuple[float, float]:
        return left + pw * (i + 0.5) / len(runs), top + ph * (1 - r)

    parts = [f"<svg viewBox='0 0 {w} {h}' width='{w}' height='{h}' class='trend' role='img'>"]
    for q in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, y = xy(0, q)
        parts.append(f"<line x1='{left}' x2='{left + pw}' y1='{y}' y2='{y}' class='grid'/>"
                     f"<text x='{left - 4}' y='{y + 4}' text-anchor='end'>{q:.0%}</text>")
    for i, run in enumerate(runs):
        x, _ = xy(i, 0)
        parts.append(f"<text x='{x}' y='{top + ph + 16}' text-anchor='middle'>{_e(run)}</text>")
    for name, rates in series.items():
        pts = [(xy(i, r), r) for i, r in enumerate(rates) if r is not None and r == r]
        c = colours[name]
        parts.append(f"<polyline fill='none' stroke='{c}' stroke-width='2' points='"
                     + " ".join(f"{x:.1f},{y:.1f}" for (x, y), _ in pts) + "'/>")
        parts += [f"<circle cx='{x:.1f}' cy='{y:.1f}' r='4' fill='{c}'><title>{_e(name)}: "
                  f"{r:.1%}</title></circle>" for (x, y), r in pts]
    parts.append("</svg>")
    return parts[0] + "".join(parts[1:]) + legend(colours)
