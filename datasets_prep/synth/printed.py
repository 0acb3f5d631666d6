"""Printed formulas from any LaTeX corpus with the project's own layout engine: no TeX installation.

Why: printed-formula datasets (IM2LATEX-100K) pair arXiv formulas with pdflatex renders; a model or
a metric (tokenizer.markup_metrics.image_exact_match) that needs such images here gets them from the
same parse and layout as the handwriting synthesizer, drawn the way type is set instead of the way a
hand writes: no jitter of any kind, a straight baseline, one glyph size for every formula (fixed
pixels per em, the canvas cut to the ink), letters in the Hershey Times italic face (`timesi`, a
serif, as TeX sets math letters), digits, operators and Greek in the engine's own faces.

What is drawn is the label's normalized form (spacing commands, `\\left`/`\\right` sizes and
`\\displaystyle` do not show, as in the handwriting synthesizer). Two spellings the engine does not
take are rewritten for drawing only (`drawable`): old-style font declarations (`{\\cal L}`, `{\\bf x}`,
`{\\rm d}`) become the font command over the rest of their group, declarations with no drawn effect
(`\\it`, `\\boldmath`, sizes) are dropped, and a script with no base (`^ { 2 }` at the start of a group,
a prescript in arXiv formulas) gets an empty base `{ }`. Anything else the engine cannot draw raises
SynthError (a ValueError) with the reason; callers count and report those.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ink import Ink
from ..render import rasterize_at
from .core import synthesize
from .errors import SynthError
from .style import Style

PRINT_FONT = "timesi"
FONT_DECLARATIONS = {"\\cal": "\\mathcal", "\\rm": "\\mathrm", "\\bf": "\\mathbf", "\\sf": "\\mathsf",
                     "\\tt": "\\mathtt", "\\Bbb": "\\mathbb", "\\frak": "\\mathfrak"}
"""Old-style declarations -> the command the layout engine draws, applied to the rest of the group."""
NO_EFFECT = frozenset({"\\it", "\\mit", "\\sl", "\\em", "\\boldmath", "\\unboldmath", "\\normalfont",
                       "\\tiny", "\\scriptsize", "\\footnotesize", "\\small", "\\normalsize", "\\large",
                       "\\Large", "\\LARGE", "\\huge", "\\Huge"})
"""Declarations whose effect (italic, bold, size) a single-weight stroke font does not show."""
_OPENERS = ("{", "\\left")
_CLOSERS = ("}", "\\right")
_SEPARATORS = frozenset({"&", "\\\\", "\\middle"})


@dataclass(frozen=True)
class PrintStyle:
    """How a printed formula is drawn: size in pixels per em (capital height), stroke width and
    margin in pixels. The defaults give IM2LATEX-like images (capitals ~20 px high, 1.4 px strokes)."""

    px_per_em: float = 20.0
    stroke_width: float = 1.4
    margin: float = 4.0
    font: str = PRINT_FONT
    gap: float = 0.12          # em between neighbouring symbols (the layout engine's default)
    antialias: str = "fast"   # cairo 4x4 supersampling: invisible difference from "best", cheaper (render.py)

    def writer(self) -> Style:
        return Style.neat(font=self.font, em=100.0, gap=self.gap)


def drawable(latex: str) -> str:
    """The label as the layout engine is asked to draw it (see the module docstring); raises
    LatexError only where the lexer does."""
    from tokenizer import detokenize, tokenize

    toks = tokenize(latex)
    if not any(t in FONT_DECLARATIONS or t in NO_EFFECT or t in ("^", "_") for t in toks):
        return latex
    out: list[str] = []
    pending = 0              # font groups opened by declarations in the current group
    outer: list[int] = []    # the same count for each enclosing group ({...}, \left..\right, environments)
    for t in toks:
        if t in _CLOSERS or t.startswith("\\end{") or t in _SEPARATORS:
            out.extend("}" * pending)  # a declaration ends with its group (and with a matrix cell)
            pending = 0
            if t not in _SEPARATORS and outer:
                pending = outer.pop()
        if t in NO_EFFECT:
            continue
        if t in FONT_DECLARATIONS:
            out += [FONT_DECLARATIONS[t], "{"]
            pending += 1
            continue
        if t in ("^", "_") and _no_base(out[-1] if out else None):
            out += ["{", "}"]
        out.append(t)
        if t in _OPENERS or t.startswith("\\begin{"):
            outer.append(pending)
            pending = 0
    out.extend("}" * pending)
    return latex if out == toks else detokenize(out)


def _no_base(prev: str | None) -> bool:
    """Would a script after `prev` have no base? (start of the label, of a group, of a cell)"""
    return prev is None or prev in ("{", "&", "\\\\") or prev.startswith("\\begin{")


def print_ink(latex: str, style: PrintStyle = PrintStyle()) -> Ink:
    """The formula as strokes, laid out with no jitter (ink units: 100 per em, y down)."""
    from tokenizer import LatexError

    try:
        target = drawable(latex)
    except LatexError as e:
        raise SynthError(latex, e.verdict()) from None
    try:
        return synthesize(target, np.random.default_rng(0), style=style.writer())
    except SynthError as e:
        raise SynthError(latex, e.reason) from None


def render_print(latex: str, style: PrintStyle = PrintStyle()) -> np.ndarray:
    """The formula as a printed image: uint8 gray [H, W], 255 = background, black ink, the canvas cut
    to the ink plus the margin. Deterministic. Raises SynthError (a ValueError) if it cannot be drawn."""
    ink = print_ink(latex, style)
    return rasterize_at(ink, style.px_per_em / style.writer().em, style.stroke_width, style.margin,
                        style.antialias).image
