"""`synthesize(latex, rng)`: one label in, one handwriting-like `Ink` out, label known by construction.

The truth written is `tokenizer.normalize(latex)`, and what is drawn is the tokenizer's parse of that
normalized label (`latex.parse_label`), so truth and ink agree and the truth is the form training uses.

`synthesize_batch` does the same for many labels with one numeric pass (same inks, bit for bit,
several times the throughput), which is what `generate()` uses.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ink import Ink
from .errors import SynthError
from .latex import parse_label, spaced
from .layout import layout
from .style import Marks, Style, render_batch


def canonical_label(latex: str) -> str:
    """The spelling the synthesizer writes for a label: `tokenizer.normalize(latex)` (raises SynthError
    if it cannot draw it)."""
    return parse_label(latex)[0]


def _prepare(latex: str, rng: np.random.Generator, style: Style | None):
    """Normalize, parse, lay out and make every random draw of one ink (in a fixed order):
    (marks, (normalized label, its tokens), symbols)."""
    norm, tokens, tree = parse_label(latex)
    try:
        if style is None:
            style = Style.sample(rng)
        gaps = rng.standard_normal(64)
        gaps *= style.gap_jitter
        gaps += 1.0
        np.maximum(gaps, 0.2, out=gaps)
        box, symbols = layout(tree, latex, font=style.font, gap=style.gap, gaps=gaps)
        return Marks(box, style, rng), (norm, tokens), symbols
    except RecursionError:  # the adapter bounds nesting; this is only a backstop
        raise SynthError(latex, "expression nested too deeply") from None


def _ink(label: tuple[str, list[str]], symbols: list[str], strokes: list[np.ndarray], sids: list[int]) -> Ink:
    canonical, tokens = label
    ann = {
        "label": canonical,
        "normalizedLabel": canonical,
        "truth": f"${spaced(tokens)}$",
        "strokeSymbols": " ".join(map(str, sids)),
        "symbolLabels": "\t".join(symbols),
    }
    return Ink(strokes=strokes, annotations=ann)


def synthesize(latex: str, rng: np.random.Generator, *, style: Style | None = None) -> Ink:
    """Draw `latex` as handwriting.

    Returns an Ink with X Y T strokes (ink units, y down, T in ms, monotonic) and annotations:
    `label` and `normalizedLabel` (`tokenizer.normalize(latex)`), `truth` (the same, CROHME-style:
    `$...$`, space-tokenized) plus two synthesizer-only keys for CROHME's segmentation:
    `strokeSymbols` (the symbol index of each stroke, space-separated) and `symbolLabels` (each
    symbol's LaTeX, tab-separated).
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
