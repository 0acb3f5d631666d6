"""`synthesize(latex, rng)`: one label in, one handwriting-like `Ink` out, label known by construction.

`synthesize_batch` does the same for many labels with one numeric pass (same inks, bit for bit,
several times the throughput), which is what `generate()` uses.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ink import Ink
from .errors import SynthError
from .latex import join_tokens, parse, to_latex, tokens_of
from .layout import layout
from .style import Marks, Style, render_batch


def canonical_label(latex: str) -> str:
    """The spelling the synthesizer writes for a label (raises SynthError if it cannot draw it)."""
    return to_latex(parse(latex))


def _prepare(latex: str, rng: np.random.Generator, style: Style | None):
    """Parse, lay out and make every random draw of one ink (in a fixed order): (marks, tokens, symbols)."""
    if not isinstance(latex, str):
        raise SynthError(repr(latex), "label is not a string")
    try:
        tree = parse(latex)
        if style is None:
            style = Style.sample(rng)
        gaps = 1.0 + style.gap_jitter * rng.standard_normal(64)
        box, symbols = layout(tree, latex, font=style.font, gap=style.gap, gaps=np.maximum(gaps, 0.2))
        return Marks(box, style, rng), tokens_of(tree), symbols
    except RecursionError:  # the parser bounds nesting; this is only a backstop
        raise SynthError(latex, "expression nested too deeply") from None


def _ink(tokens: list[str], symbols: list[str], strokes: list[np.ndarray], sids: list[int]) -> Ink:
    canonical = join_tokens(tokens)
    ann = {
        "label": canonical,
        "normalizedLabel": canonical,
        "truth": f"${' '.join(tokens)}$",
        "strokeSymbols": " ".join(map(str, sids)),
        "symbolLabels": "\t".join(symbols),
    }
    return Ink(strokes=strokes, annotations=ann)


def synthesize(latex: str, rng: np.random.Generator, *, style: Style | None = None) -> Ink:
    """Draw `latex` as handwriting.

    Returns an Ink with X Y T strokes (ink units, y down, T in ms, monotonic) and annotations:
    `label` and `normalizedLabel` (the canonical label), `truth` (CROHME-style `$...$`, space-tokenized)
    plus two synthesizer-only keys for CROHME's segmentation: `strokeSymbols` (the symbol index of
    each stroke, space-separated) and `symbolLabels` (each symbol's LaTeX, tab-separated).
    Raises SynthError(label, reason) on anything it cannot draw. Without `style`, a random writer
    is drawn from `rng`.
    """
    marks, tokens, symbols = _prepare(latex, rng, style)
    ((strokes, sids),) = render_batch([marks])
    return _ink(tokens, symbols, strokes, sids)


def synthesize_batch(labels: Sequence[str], rngs: Sequence[np.random.Generator],
                     styles: Sequence[Style | None] | None = None) -> list[Ink | SynthError]:
    """Many inks at once: item i equals `synthesize(labels[i], rngs[i], style=styles[i])`, or is the
    SynthError that call would raise (returned, not raised, so one bad label loses nothing else)."""
    if len(rngs) != len(labels) or (styles is not None and len(styles) != len(labels)):
        raise ValueError("labels, rngs (and styles) must have the same length")
    out: list = [None] * len(labels)
    ready, where = [], []
    for i, lab in enumerate(labels):
        try:
            ready.append(_prepare(lab, rngs[i], styles[i] if styles is not None else None))
            where.append(i)
        except SynthError as e:
            out[i] = e
    if ready:
        for i, (marks, tokens, symbols), (strokes, sids) in zip(where, ready, render_batch([r[0] for r in ready])):
            out[i] = _ink(tokens, symbols, strokes, sids)
    return out
