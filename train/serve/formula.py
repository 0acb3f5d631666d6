"""Show a LaTeX string as a picture without a browser-side math library: the synthesizer's own layout
engine (datasets_prep.synth, Hershey stroke fonts) places the glyphs, and each stroke becomes an SVG
polyline. Nothing is fetched and no third-party script runs in the page; the picture is drawn in the
"neat" style (no handwriting jitter), so it shows the layout the recognized LaTeX means."""
from __future__ import annotations

from html import escape

import numpy as np

STROKE_EM = 0.075  # line width as a share of the em, about a pen's
PAD_EM = 0.25


class FormulaError(ValueError):
    """LaTeX the layout engine cannot draw (it does not parse, or a symbol has no glyph)."""


def formula_svg(latex: str, height_px: int = 64) -> str:
    """A standalone SVG of `latex` (stroke colour `currentColor`, so the page's text colour applies).

    height_px: the rendered height of one line of text (one em plus padding); taller layouts
    (fractions, scripts) grow in proportion."""
    from datasets_prep.synth import Style, SynthError, synthesize

    style = Style.neat()
    try:
        ink = synthesize(latex, np.random.default_rng(0), style=style)
    except (SynthError, RecursionError) as exc:
        raise FormulaError(f"cannot draw this LaTeX: {exc}") from None
    x0, y0, x1, y1 = ink.bbox()
    pad = PAD_EM * style.em
    x0, y0, w, h = x0 - pad, y0 - pad, (x1 - x0) + 2 * pad, (y1 - y0) + 2 * pad
    scale = height_px / (style.em * (1 + 2 * PAD_EM))
    lines = []
    for s in ink.strokes:
        xy = s[:, :2] if len(s) > 1 else np.repeat(s[:, :2], 2, axis=0)  # a dot needs two points to show
        lines.append('<polyline points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy) + '"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{x0:.1f} {y0:.1f} {w:.1f} {h:.1f}" '
            f'width="{w * scale:.0f}" height="{h * scale:.0f}" role="img" aria-label="{escape(latex, quote=True)}">'
            f'<g fill="none" stroke="currentColor" stroke-width="{STROKE_EM * style.em:.1f}" '
            f'stroke-linecap="round" stroke-linejoin="round">' + "".join(lines) + "</g></svg>")
