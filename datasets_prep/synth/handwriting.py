"""Real-hand synthesis: the layout engine places glyph-bank samples (real writers' symbols) instead
of Hershey glyphs, one writer per expression, as MathWriting built its synthetic set.

Per expression a writer is drawn among those who wrote most of its symbols (at least 60% of the best
writer's count, uniformly, so prolific writers do not dominate); each symbol is one of that writer's
samples, else another writer's (counted), else the Hershey glyph (counted per symbol). A sample is
fitted into the box of the Hershey glyph it replaces (height, or width for flat symbols like `-`),
so sizes and baselines follow the layout; the radical sign is the sample whose aspect is nearest the
radicand's, stretched to it. On top of the layout's per-glyph affine jitter, baseline drift and
per-glyph warp (synth/style.py), each stroke of a multi-stroke sample moves a little on its own
(stroke-level noise: a `+` whose bar misses the centre, an `=` with uneven bars).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate
from pathlib import Path

import numpy as np

from ..ink import Ink
from . import glyphs as G
from .bank_store import Bank
from .core import _ink
from .errors import SynthError
from .latex import parse_label
from .layout import layout
from .style import Marks, Style, render_batch

PAD = 0.06             # em of side bearing, as the Hershey templates have
STROKE_JITTER = 0.04   # per-stroke offset spread, as a fraction of the sample's size
WRITER_SHARE = 0.6     # candidate writers have at least this share of the best writer's symbols
FLAT = 0.2             # a Hershey box this flat (height/width) is fitted by width: -, ..., _
DEFAULT_BOX = (0.0, 0.6, -0.7, 0.0)  # x0, x1, top, bottom for a symbol with no Hershey glyph


def _as_template(pts: np.ndarray, starts: list[int], pad: float) -> G.Template:
    """A layout template from em points already sampled (G.make_template without its resampling)."""
    pts = pts - np.array([pts[:, 0].min() - pad, 0.0])
    w = float(pts[:, 0].max() + pad)
    top, bottom = float(pts[:, 1].min()), float(pts[:, 1].max())
    if bottom - top < 1e-6:  # a perfectly flat stroke: give it a hair of height for the warp maps
        bottom = top + 1e-6
    centred = np.ascontiguousarray((pts - np.array([w / 2, (top + bottom) / 2])).T)
    ends = starts[1:] + [len(pts)]
    rev_points = np.concatenate([np.arange(a, b) for a, b in zip(starts[::-1], ends[::-1])])
    rev_starts = tuple(accumulate([b - a for a, b in zip(starts[::-1], ends[::-1])][:-1], initial=0))
    return G.Template(pts, tuple(starts), w, top, bottom, len(pts), top + bottom, centred,
                      (w, top + bottom, bottom - top), (rev_starts, rev_points))


@lru_cache(maxsize=None)
def _hershey_box(name: str) -> tuple[float, float, float, float]:
    t = G.template(name, "futural")
    if t is None:
        return DEFAULT_BOX
    return float(t.points[:, 0].min()), float(t.points[:, 0].max()), t.top, t.bottom


class HandBank:
    """A Bank ready for synthesis: samples by symbol and by (symbol, writer), fitted samples cached."""

    def __init__(self, bank: Bank, *, stroke_jitter: float = STROKE_JITTER):
        self.bank = bank
        self.stroke_jitter = stroke_jitter
        a = bank.arrays
        self.by_symbol = bank.by_symbol()
        self.sym_id = {s: i for i, s in enumerate(bank.symbols)}
        writer = a["sample_writer"]
        self.by_writer: dict[tuple[str, int], np.ndarray] = {}
        for s, idx in self.by_symbol.items():
            w = writer[idx]
            order = np.argsort(w, kind="stable")
            ws, idx = w[order], idx[order]
            cuts = np.flatnonzero(np.diff(ws)) + 1
            for part in np.split(idx, cuts):
                self.by_writer[s, int(writer[part[0]])] = part
        self.has = np.zeros((len(bank.writers), len(bank.symbols)), dtype=np.int32)
        np.add.at(self.has, (writer, a["sample_symbol"]), 1)
        self.has = (self.has > 0).astype(np.int32)
        size = a["sample_size"].astype(np.float64)
        self.aspect = size[:, 0] / np.maximum(size[:, 1], 1e-3)
        self._fitted: dict[int, tuple[np.ndarray, list[int], np.ndarray]] = {}
        self._raw: dict[int, tuple[np.ndarray, list[int], np.ndarray]] = {}

    @classmethod
    def load(cls, folder: Path, **kw) -> "HandBank":
        return cls(Bank.load(folder), **kw)

    def choose_writer(self, tokens: list[str], rng: np.random.Generator) -> int:
        """A writer for an expression with these tokens (see the module docstring)."""
        cols = sorted({self.sym_id[t] for t in tokens if t in self.sym_id})
        if not cols:
            return int(rng.integers(len(self.bank.writers)))
        score = self.has[:, cols].sum(axis=1)
        cand = np.flatnonzero(score >= max(1.0, WRITER_SHARE * score.max()))
        return int(cand[int(rng.integers(len(cand)))])

    # ---- samples as em points --------------------------------------------------------------------
    def _strokes(self, g: int, scale: float) -> tuple[np.ndarray, list[int], np.ndarray]:
        """Sample g scaled by `scale`: (points, stroke starts, points per stroke). The writer's own
        digitizer sampling is kept (not resampled): its points are equal-time samples, which is what
        the renderer's constant per-point time step assumes."""
        a = self.bank.arrays
        s0, s1 = int(a["sample_strokes"][g]), int(a["sample_strokes"][g + 1])
        st = a["stroke_starts"][s0:s1 + 1]
        pts = a["points"][st[0]:st[-1]].astype(np.float64)
        pts *= scale
        counts = np.diff(st)
        return pts, (st[:-1] - st[0]).tolist(), counts

    def fitted(self, g: int, name: str) -> tuple[np.ndarray, list[int], np.ndarray]:
        """Sample g fitted into `name`'s Hershey box (em, y down, baseline 0)."""
        got = self._fitted.get(g)
        if got is None:
            x0, x1, top, bottom = _hershey_box(name)
            bw, bh = max(x1 - x0, 1e-3), max(bottom - top, 1e-3)
            w, h = (float(v) for v in self.bank.arrays["sample_size"][g])
            if bh < FLAT * bw:
                k = bw / max(w, 1e-3)
            else:  # by height, but no wider than 1.6 box widths (a thin box like l's counts as half its height)
                k = min(bh / max(h, 1e-3), 1.6 * max(bw, 0.5 * bh) / max(w, 1e-3))
            pts, starts, counts = self._strokes(g, k)
            pts[:, 1] += (top + bottom) / 2 - (h * k) / 2  # centred on the box vertically
            got = self._fitted[g] = (pts, starts, counts)
        return got

    def raw(self, g: int) -> tuple[np.ndarray, list[int], np.ndarray]:
        """Sample g in its normalized box (longer side 1), for stretching."""
        got = self._raw.get(g)
        if got is None:
            got = self._raw[g] = self._strokes(g, 1.0)
        return got

    def template(self, g: int, name: str, rng: np.random.Generator, aspect: float | None = None) -> G.Template:
        pts, starts, counts = self.raw(g) if aspect is not None else self.fitted(g, name)
        if len(counts) > 1 and self.stroke_jitter > 0:
            span = float(np.ptp(pts, axis=0).max())
            off = rng.standard_normal((len(counts), 2)) * (self.stroke_jitter * span)
            pts = pts + np.repeat(off, counts, axis=0)
        return _as_template(pts, list(starts), 0.0 if aspect is not None else PAD)


class Picker:
    """The glyph source of one expression (layout.GlyphSource): the writer's samples first."""

    def __init__(self, hb: HandBank, writer: int, rng: np.random.Generator):
        self.hb, self.writer, self.rng = hb, writer, rng
        self.stats: Counter = Counter()       # writer / other_writer / hershey / composed
        self.fallbacks: Counter = Counter()   # symbol -> Hershey uses

    def __call__(self, name: str, aspect: float | None = None) -> G.Template | None:
        hb = self.hb
        every = hb.by_symbol.get(name)
        if every is None:
            if name in G.FUNCTIONS:
                self.stats["composed"] += 1  # written letter by letter, each from the bank if it can be
            else:
                self.stats["hershey"] += 1
                self.fallbacks[name] += 1
            return None
        own = hb.by_writer.get((name, self.writer))
        pool = own if own is not None else every
        self.stats["writer" if own is not None else "other_writer"] += 1
        if aspect is None:
            g = int(pool[int(self.rng.integers(len(pool)))])
        else:  # the sample whose shape is nearest the box it will be stretched to
            near = pool[np.argsort(np.abs(np.log(hb.aspect[pool] / aspect)))[:3]]
            if own is not None and abs(np.log(hb.aspect[near[0]] / aspect)) > np.log(1.5):
                near = every[np.argsort(np.abs(np.log(hb.aspect[every] / aspect)))[:3]]
            g = int(near[int(self.rng.integers(len(near)))])
        return hb.template(g, name, self.rng, aspect)


def _prepare(latex: str, rng: np.random.Generator, hb: HandBank, style: Style | None):
    norm, tokens, tree = parse_label(latex)
    try:
        if style is None:
            style = Style.sample(rng)
        style = replace(style, font="futural")  # Hershey fallbacks in print, as most bank samples are
        gaps = rng.standard_normal(64)
        gaps *= style.gap_jitter
        gaps += 1.0
        np.maximum(gaps, 0.2, out=gaps)
        picker = Picker(hb, hb.choose_writer(tokens, rng), rng)
        box, symbols = layout(tree, latex, font=style.font, gap=style.gap, gaps=gaps, glyphs=picker)
        return Marks(box, style, rng), (norm, tokens), symbols, picker
    except RecursionError:
        raise SynthError(latex, "expression nested too deeply") from None


def synthesize_hand_batch(labels: list[str], rngs: list[np.random.Generator], hb: HandBank,
                          styles: list[Style | None] | None = None) -> list[Ink | SynthError]:
    """Like core.synthesize_batch, with bank glyphs. Each ink's annotations add `writer` (the bank
    writer drawn), `bankGlyphs` ("same other hershey": glyphs of that writer, of other writers, and
    Hershey fallbacks) and `hersheySymbols` (the symbols that fell back, space-separated)."""
    if len(rngs) != len(labels) or (styles is not None and len(styles) != len(labels)):
        raise ValueError("labels, rngs (and styles) must have the same length")
    out: list = [None] * len(labels)
    ready, where = [], []
    for i, lab in enumerate(labels):
        try:
            ready.append(_prepare(lab, rngs[i], hb, styles[i] if styles is not None else None))
            where.append(i)
        except SynthError as e:
            out[i] = e
    if ready:
        for i, (marks, tokens, symbols, picker), (strokes, sids) in zip(where, ready,
                                                                        render_batch([r[0] for r in ready])):
            ink = _ink(tokens, symbols, strokes, sids)
            st = picker.stats
            ink.annotations["writer"] = hb.bank.writers[picker.writer]
            ink.annotations["bankGlyphs"] = f"{st['writer']} {st['other_writer']} {st['hershey']}"
            ink.annotations["hersheySymbols"] = " ".join(sorted(picker.fallbacks.elements()))
            out[i] = ink
    return out


def synthesize_hand(latex: str, rng: np.random.Generator, hb: HandBank, *, style: Style | None = None) -> Ink:
    """One label drawn with bank glyphs (raises SynthError as synthesize() does)."""
    (ink,) = synthesize_hand_batch([latex], [rng], hb, None if style is None else [style])
    if isinstance(ink, SynthError):
        raise ink
    return ink
