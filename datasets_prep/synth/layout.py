"""Box layout of a label's tree: where every glyph goes, in writing order.

The tree is made of the node types below (Sym, Row, Scripts, Frac, ...); `latex.parse_label` builds
it from the tokenizer's parse of the normalized label.

A TeX-like but deliberately simple model (handwriting is not typeset): every node becomes a `Box`
with a width, a top (< 0, above the baseline) and a bottom, holding `Item`s. An item is one glyph
template under an axis-aligned scale and a translation, tagged with the index of the visible symbol
it draws (for CROHME's per-symbol segmentation). Items are listed in the order a person writes them:
left to right, numerator then bar then denominator, radical sign before the radicand, an accent after
its base, limits after their operator.

All sizes are in em (capital height 1), y grows downward.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import NamedTuple

import numpy as np

from . import glyphs as G
from .errors import SynthError

AXIS = -0.43            # math axis: the centre of '+', '-', '='
SCRIPT_SCALE = 0.62     # superscripts and subscripts
LIMIT_SCALE = 0.62      # limits of big operators
FRAC_SCALE = 0.9        # numerator and denominator
INDEX_SCALE = 0.5       # root index
MIN_SCALE = 0.3
BIG_OP_HEIGHT = 1.55    # \sum, \int ... ink height (em)
INT_HEIGHT = 2.0

RELATIONS = {"=", "<", ">", "\\leq", "\\geq", "\\neq", "\\rightarrow", "\\leftarrow", "\\in", "\\notin",
             "\\approx", "\\equiv", "\\sim", "\\simeq", "\\cong", "\\subset", "\\supset", "\\subseteq",
             "\\supseteq", "\\Rightarrow", "\\Leftarrow", "\\Leftrightarrow", "\\leftrightarrow",
             "\\mapsto", "\\longrightarrow", "\\propto", "\\ll", "\\gg", "\\perp", "\\parallel", ":"}
BINARIES = {"+", "-", "\\pm", "\\mp", "\\times", "\\div", "\\cdot", "\\cup", "\\cap", "\\oplus",
            "\\otimes", "\\wedge", "\\vee", "\\setminus", "\\ast", "*", "\\star", "\\circ", "\\bullet"}


# ---- the tree it lays out (datasets_prep/synth/latex.py builds it from the tokenizer's parse) ----
@dataclass(slots=True)
class Sym:
    """A visible symbol: a character or a symbol command (`x`, `+`, `\\alpha`, `\\sin`, `\\sum`)."""
    name: str


@dataclass(slots=True)
class Row:
    """A horizontal list of nodes."""
    items: list = field(default_factory=list)


@dataclass(slots=True)
class Scripts:
    base: object
    sub: Row | None = None
    sup: Row | None = None


@dataclass(slots=True)
class Frac:
    num: Row
    den: Row


@dataclass(slots=True)
class Stack:
    """\\overset{top}{base}, \\underset{bottom}{base}, \\stackrel, \\binom{n}{k}."""
    kind: str
    first: Row
    second: Row


@dataclass(slots=True)
class Sqrt:
    body: Row
    index: Row | None = None


@dataclass(slots=True)
class Accent:
    kind: str
    body: Row


@dataclass(slots=True)
class Font:
    kind: str
    body: Row


@dataclass(slots=True)
class Text:
    kind: str
    text: str


@dataclass(slots=True)
class Fence:
    """Matching delimiters of a row and what they enclose (drawn as tall as the content)."""
    left: str
    body: Row
    right: str


@dataclass(slots=True)
class Matrix:
    env: str
    rows: list[list[Row]]


@dataclass(slots=True)
class Not:
    body: Sym



class Item(NamedTuple):
    tpl: G.Template
    sx: float
    sy: float
    tx: float
    ty: float
    sid: int


_new_item = partial(tuple.__new__, Item)  # Item(*values) without the namedtuple's Python-level __new__


class Box:
    """A laid-out node: entries are `Item`s or `Placed` sub-boxes (flattened once, at the end)."""

    __slots__ = ("items", "width", "top", "bottom", "ink")

    def __init__(self, items: list, width: float, top: float, bottom: float, ink: bool | None = None):
        self.items = items
        self.width = width
        self.top = top
        self.bottom = bottom
        self.ink = any(type(e) is Item or e.box.ink for e in items) if ink is None else ink


class Placed(NamedTuple):
    box: Box
    s: float
    dx: float
    dy: float


def _moved(box: Box, s: float, dx: float, dy: float) -> list:
    """`box` scaled by s about its origin, then translated (a reference, not a copy)."""
    return [Placed(box, s, dx, dy)]


def flatten(entries: list, s: float = 1.0, dx: float = 0.0, dy: float = 0.0, out: list | None = None) -> list:
    """All items under `entries` in root coordinates, in writing order."""
    if out is None:
        out = []
    moved = s != 1.0 or dx != 0.0 or dy != 0.0
    for e in entries:
        if type(e) is Item:
            out.append(_new_item((e[0], e[1] * s, e[2] * s, e[3] * s + dx, e[4] * s + dy, e[5])) if moved else e)
        else:
            flatten(e[0].items, s * e[1], dx + e[2] * s, dy + e[3] * s, out)
    return out


@lru_cache(maxsize=4096)
def _hline(length_q: int) -> G.Template:
    """A horizontal stroke of length length_q/8 em from x=0 (cached by quantized length)."""
    L = max(length_q, 1) / 8.0
    return G.make_template([np.array([[0.0, 0.0], [L, 0.0]])], width=L, pad=0.0)


@lru_cache(maxsize=4096)
def _radical(h_q: int, w_q: int) -> G.Template:
    """A radical sign with its overbar, in one stroke: tick, down, up to the top, along the bar.

    Height h (top at y=0, bottom at y=h), overbar length w; both quantized to 1/8 em.
    """
    h, w = max(h_q, 4) / 8.0, max(w_q, 2) / 8.0
    lead = 0.22 + 0.1 * h
    pts = np.array([[0.0, 0.55 * h], [0.09, 0.5 * h], [0.05 + 0.45 * lead, h], [lead, 0.0], [lead + w, 0.0]])
    return G.make_template([pts], width=lead + w, pad=0.0)


@lru_cache(maxsize=512)
def _accent(kind: str, w_q: int) -> G.Template:
    """Accent strokes over a base of width w (quantized): y=0 is the accent's bottom."""
    w = max(w_q, 2) / 8.0
    if kind in ("\\hat", "\\widehat", "\\check"):
        aw = min(max(0.35, 0.8 * w), 1.4) if kind != "\\widehat" else max(0.35, w)
        y0, y1 = (0.0, -0.22) if kind != "\\check" else (-0.22, 0.0)
        pts = [np.array([[0.0, y0], [aw / 2, y1], [aw, y0]])]
    elif kind in ("\\bar", "\\overline", "\\underline"):
        pts = [np.array([[0.0, 0.0], [w, 0.0]])]
    elif kind in ("\\vec", "\\overrightarrow"):
        L = max(w, 0.4)
        pts = [np.array([[0.0, -0.08], [L, -0.08]]), np.array([[L - 0.13, -0.18], [L, -0.08], [L - 0.13, 0.02]])]
    elif kind in ("\\tilde", "\\widetilde"):
        L = max(0.4, min(w, 1.6) if kind == "\\tilde" else w)
        t = np.linspace(0, 1, 9)
        pts = [np.stack([t * L, -0.07 * np.sin(2 * np.pi * t) - 0.05], axis=1)]
    elif kind == "\\dot":
        pts = [G._dot(0.03, -0.05)]
    elif kind == "\\ddot":
        pts = [G._dot(0.03, -0.05), G._dot(0.2, -0.05)]
    elif kind == "\\breve":
        t = np.linspace(0, np.pi, 7)
        pts = [np.stack([0.17 - 0.17 * np.cos(t), -0.2 + 0.15 * np.sin(t)], axis=1)]
    elif kind in ("\\acute", "\\grave"):
        pts = [np.array([[0.0, 0.0], [0.12, -0.2]]) if kind == "\\acute" else np.array([[0.0, -0.2], [0.12, 0.0]])]
    else:  # pragma: no cover - parser only lets known accents through
        raise KeyError(kind)
    return G.make_template(pts, pad=0.0)


GlyphSource = Callable[..., "G.Template | None"]
"""`glyphs(symbol)` -> a template to draw instead of the font's (None: use the font), e.g. a real
handwritten sample (synth/handwriting.py); `glyphs(symbol, aspect=a)` asks for one to be stretched to
a box of width/height a (the radical sign)."""


class Layouter:
    """Lays out one expression; `symbols` collects the visible-symbol label of each sid."""

    def __init__(self, latex: str, font: str = "futural", gap: float = 0.12, gaps: np.ndarray | None = None,
                 glyphs: GlyphSource | None = None):
        self.latex = latex
        self.font = font
        self.gap = gap
        self.glyphs = glyphs
        self.symbols: list[str] = []
        self._gaps = (gaps if gaps is not None else np.ones(1)).tolist()
        self._ngaps = len(self._gaps)
        self._gi = 0

    def _sid(self, label: str) -> int:
        self.symbols.append(label)
        return len(self.symbols) - 1

    def _tpl(self, sym: str, font: str | None = None) -> G.Template:
        if self.glyphs is not None and font is None:
            t = self.glyphs(sym)
            if t is not None:
                return t
        t = G.template(sym, font or self.font)
        if t is None:
            raise SynthError(self.latex, f"no glyph for {sym!r}")
        return t

    def glyph(self, sym: str, font: str | None = None, label: str | None = None, tpl: G.Template | None = None) -> Box:
        t = tpl or self._tpl(sym, font)
        return Box([Item(t, 1.0, 1.0, 0.0, 0.0, self._sid(label or sym))], t.width, min(t.top, -0.05),
                   max(t.bottom, 0.0), True)

    def word(self, letters: str, label: str, font: str | None = None, extra=None) -> Box:
        """Several letters that form one symbol (`\\sin`, `\\lim`, a \\mathrm run)."""
        sid = self._sid(label)
        items, x, top, bot = [], 0.0, -0.05, 0.0
        for ch in letters:
            if ch == " ":
                x += 0.3
                continue
            t = self.glyphs(ch) if self.glyphs is not None and font is None else None
            if t is None:
                t = G.template(ch, font or "futural")
            if t is None:
                raise SynthError(self.latex, f"no glyph for {ch!r}")
            items.append(Item(t, 1.0, 1.0, x, 0.0, sid))
            if extra is not None:
                items.extend(extra(t, x, sid))
            x += t.width * 0.92
            top, bot = min(top, t.top), max(bot, t.bottom)
        return Box(items, x, top, bot, bool(items))

    # ---- nodes ----------------------------------------------------------------------------------
    def node(self, n) -> Box:
        if isinstance(n, Sym):
            return self.sym(n)
        if isinstance(n, Row):
            return self.row(n)
        if isinstance(n, Scripts):
            return self.scripts(n)
        if isinstance(n, Frac):
            return self.frac(n)
        if isinstance(n, Sqrt):
            return self.sqrt(n)
        if isinstance(n, Accent):
            return self.accent(n)
        if isinstance(n, Fence):
            return self.fenced(n)
        if isinstance(n, Matrix):
            return self.matrix(n)
        if isinstance(n, Font):
            return self.font_node(n)
        if isinstance(n, Text):
            return self.word(n.text, f"{n.kind}{{{n.text}}}")
        if isinstance(n, Stack):
            return self.stack(n)
        if isinstance(n, Not):
            inner = self.node(n.body)
            first = flatten(inner.items)
            sid = first[0].sid if first else self._sid("\\not")
            self.symbols[sid] = "\\not" + self.symbols[sid]  # one symbol: the negated relation
            h = max(inner.bottom - inner.top, 0.8)
            slash = G.make_template([np.array([[inner.width * 0.7, inner.top - 0.05],
                                               [inner.width * 0.3, inner.top + h + 0.05]])], pad=0.0)
            inner.items.append(Item(slash, 1.0, 1.0, inner.width * 0.3 - slash.points[:, 0].min(), 0.0, sid))
            return inner
        raise SynthError(self.latex, f"cannot lay out {type(n).__name__}")  # pragma: no cover

    def sym(self, n: Sym) -> Box:
        name = n.name
        if name in G.FUNCTIONS:
            t = self.glyphs(name) if self.glyphs is not None else None
            if t is not None:  # a sample of the whole name, written as one symbol
                return self.glyph(name, tpl=t)
            return self.word(name[1:], name)
        if name in G.BIG_OPERATORS:
            t = self._tpl(name)
            hgt = INT_HEIGHT if name in ("\\int", "\\oint", "\\iint") else BIG_OP_HEIGHT
            k = hgt / max(t.bottom - t.top, 1e-6)
            ty = AXIS - (t.top + t.bottom) / 2 * k
            sid = self._sid(name)
            return Box([Item(t, k, k, 0.0, ty, sid)], t.width * k, t.top * k + ty, t.bottom * k + ty, True)
        return self.glyph(name)

    def row(self, r: Row) -> Box:
        items, x, top, bot = [], 0.0, -0.05, 0.0
        prev_kind = None
        symbols, font, gap, gaps, ngaps = self.symbols, self.font, self.gap, self._gaps, self._ngaps
        for n in r.items:
            plain = None
            if type(n) is Sym:
                name = n.name
                plain = _PLAIN.get((name, font)) if self.glyphs is None else self._own(name)
                if plain is None and name not in _NOT_PLAIN:
                    plain = _plain(name, font, self.latex)
            if plain is not None:  # the common case: one glyph, inline
                t, kind, width, btop, bbot = plain
                b = None
                ink = True
            else:
                b = self.node(n)
                kind = _spacing_class(n)
                width, btop, bbot, ink = b.width, b.top, b.bottom, b.ink
            if kind == "bin" and prev_kind in (None, "rel", "bin"):
                kind = "ord"  # a unary sign (-x, x=-1) sits close to its operand
            if prev_kind is not None and ink:
                gi = self._gi
                g = gap * gaps[gi % ngaps]
                self._gi = gi + 1
                if kind in ("rel", "bin") or prev_kind in ("rel", "bin"):
                    g += 0.1 if "bin" in (kind, prev_kind) else 0.15
                elif kind == "digit" and prev_kind == "digit":
                    g *= 0.5  # the digits of a number are written close together
                elif prev_kind == "func":
                    g += 0.12  # \\sin x: a little room after an operator name
                x += g
            if b is None:
                symbols.append(name)
                items.append(_new_item((t, 1.0, 1.0, x, 0.0, len(symbols) - 1)))
            elif len(b.items) == 1 and type(b.items[0]) is Item:  # a lone glyph: shift it in place
                it = b.items[0]
                items.append(_new_item((it[0], it[1], it[2], it[3] + x, it[4], it[5])))
            else:
                items.append(Placed(b, 1.0, x, 0.0))
            x += width
            if btop < top:
                top = btop
            if bbot > bot:
                bot = bbot
            if ink:
                prev_kind = kind
        return Box(items, x, top, bot, prev_kind is not None)

    def _own(self, name: str) -> tuple | None:
        """row()'s inline-glyph tuple for a symbol from `glyphs` (None: not there, use the font)."""
        if name in _NOT_PLAIN:
            return None
        t = self.glyphs(name)
        if t is None:
            return None
        return (t, _KIND.get(name, "ord"), t.width, min(t.top, -0.05), max(t.bottom, 0.0))

    def scripts(self, n: Scripts) -> Box:
        base_node = n.base
        if isinstance(base_node, Sym) and base_node.name in G.LIMIT_OPERATORS:
            return self.limits(n)
        base = self.node(base_node)
        items = list(base.items)
        sup = self.row(n.sup) if n.sup is not None else None
        sub = self.row(n.sub) if n.sub is not None else None
        s = SCRIPT_SCALE
        is_int = isinstance(base_node, Sym) and base_node.name in ("\\int", "\\oint", "\\iint")
        sup_y = min(-0.45, base.top + 0.38) if not is_int else base.top + 0.25
        sub_y = max(0.22, base.bottom - 0.12) if not is_int else base.bottom - 0.05
        if sup is not None and sub is not None:
            clash = (sub_y + sub.top * s) - (sup_y + sup.bottom * s)
            if clash < 0.12:
                sub_y += (0.12 - clash) / 2
                sup_y -= (0.12 - clash) / 2
        x0 = base.width + 0.03
        width, top, bot = base.width, base.top, base.bottom
        if sub is not None:
            dx = x0 - (0.12 if is_int else 0.0)
            items += _moved(sub, s, dx, sub_y)
            width = max(width, dx + sub.width * s)
            top, bot = min(top, sub_y + sub.top * s), max(bot, sub_y + sub.bottom * s)
        if sup is not None:
            dx = x0 + (0.1 if is_int else 0.0)
            items += _moved(sup, s, dx, sup_y)
            width = max(width, dx + sup.width * s)
            top, bot = min(top, sup_y + sup.top * s), max(bot, sup_y + sup.bottom * s)
        ink = base.ink or (sub is not None and sub.ink) or (sup is not None and sup.ink)
        return Box(items, width, top, bot, ink)

    def limits(self, n: Scripts) -> Box:
        """Limits stacked under and over an operator (\\sum, \\lim)."""
        base = self.node(n.base)
        s = LIMIT_SCALE
        sub = self.row(n.sub) if n.sub is not None else None
        sup = self.row(n.sup) if n.sup is not None else None
        width = max([base.width] + [b.width * s for b in (sub, sup) if b is not None])
        items = _moved(base, 1.0, (width - base.width) / 2, 0.0)
        top, bot = base.top, base.bottom
        if sub is not None:
            y = base.bottom + 0.12 - sub.top * s
            items += _moved(sub, s, (width - sub.width * s) / 2, y)
            bot = y + sub.bottom * s
        if sup is not None:
            y = base.top - 0.12 - sup.bottom * s
            items += _moved(sup, s, (width - sup.width * s) / 2, y)
            top = y + sup.top * s
        return Box(items, width, top, bot, True)

    def frac(self, n: Frac) -> Box:
        num, den = self.row(n.num), self.row(n.den)
        s = FRAC_SCALE
        w = max(num.width, den.width) * s + 0.2
        gap = 0.2
        ny = AXIS - gap - num.bottom * s
        dy = AXIS + gap - den.top * s
        items = _moved(num, s, (w - num.width * s) / 2, ny)
        bar = self.glyphs("-") if self.glyphs is not None else None
        if bar is not None:  # a written bar, stretched along the fraction
            items.append(Item(bar, w / bar.width, 1.0, 0.0, AXIS - bar.span / 2, self._sid("-")))
        else:
            bar = _hline(max(1, int(round(w * 8))))
            items.append(Item(bar, w / bar.width, 1.0, 0.0, AXIS, self._sid("-")))
        items += _moved(den, s, (w - den.width * s) / 2, dy)
        return Box(items, w, ny + num.top * s, dy + den.bottom * s, True)

    def stack(self, n: Stack) -> Box:
        if n.kind == "\\binom":
            top_b, bot_b = self.row(n.first), self.row(n.second)
            s = FRAC_SCALE
            w = max(top_b.width, bot_b.width) * s
            ny = AXIS - 0.12 - top_b.bottom * s
            dy = AXIS + 0.12 - bot_b.top * s
            inner_items = _moved(top_b, s, (w - top_b.width * s) / 2, ny) + \
                _moved(bot_b, s, (w - bot_b.width * s) / 2, dy)
            inner = Box(inner_items, w, ny + top_b.top * s, dy + bot_b.bottom * s)
            return self.fence("(", inner, ")")
        small, base = (n.first, n.second)
        sb, bb = self.row(small), self.row(base)
        s = SCRIPT_SCALE
        w = max(bb.width, sb.width * s)
        items = _moved(bb, 1.0, (w - bb.width) / 2, 0.0)
        if n.kind == "\\underset":
            y = bb.bottom + 0.1 - sb.top * s
            items += _moved(sb, s, (w - sb.width * s) / 2, y)
            return Box(items, w, bb.top, y + sb.bottom * s)
        y = bb.top - 0.1 - sb.bottom * s
        items += _moved(sb, s, (w - sb.width * s) / 2, y)
        return Box(items, w, y + sb.top * s, bb.bottom)

    def sqrt(self, n: Sqrt) -> Box:
        body = self.row(n.body)
        top = min(body.top, -0.7) - 0.2
        bottom = max(body.bottom, 0.0) + 0.08
        h = bottom - top
        w = body.width + 0.15
        lead = 0.22 + 0.1 * (max(int(round(h * 8)), 4) / 8.0)
        rad = self.glyphs("\\sqrt", aspect=(lead + w) / h) if self.glyphs is not None else None
        if rad is None:
            rad = _radical(int(round(h * 8)), int(round(w * 8)))
        kx = (lead + w) / rad.width
        ky = h / max(rad.bottom - rad.top, 1e-6)
        sid = self._sid("\\sqrt")
        rad_top = top
        shift = 0.0
        index_items: list = []
        if n.index is not None:
            idx = self.row(n.index)
            s = INDEX_SCALE
            iw = idx.width * s
            shift = max(0.0, iw - 0.12)
            iy = rad_top + 0.45 * h - 0.06 - idx.bottom * s
            index_items = _moved(idx, s, shift + 0.12 - iw, iy)
            top = min(top, iy + idx.top * s)
        items = [Item(rad, kx, ky, shift, rad_top - rad.top * ky, sid)]
        items += _moved(body, 1.0, shift + lead + 0.08, 0.0)
        items += index_items  # the index is written after the radicand, as most people do
        return Box(items, shift + lead + w + 0.05, top, bottom, True)

    def accent(self, n: Accent) -> Box:
        body = self.row(n.body)
        if n.kind == "\\boxed":  # a frame drawn around the content, after it
            x0, x1, y0, y1 = -0.12, body.width + 0.12, body.top - 0.2, body.bottom + 0.2
            frame = G.make_template([np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])], pad=0.0)
            item = Item(frame, 1.0, 1.0, x0 + 0.1, 0.0, self._sid("\\boxed"))
            return Box(_moved(body, 1.0, 0.1, 0.0) + [item], body.width + 0.2, y0, y1, True)
        wq = int(round(max(body.width - 0.1, 0.2) * 8))
        t = _accent(n.kind, wq)
        sid = self._sid(n.kind)
        if n.kind == "\\underline":
            y = body.bottom + 0.12
            item = Item(t, 1.0, 1.0, 0.05, y, sid)
            return Box(body.items + [item], body.width, body.top, y + 0.03, True)
        y = min(body.top, -0.66) - 0.12
        x = max(0.0, (body.width - t.width) / 2)
        if isinstance(n.body.items[0] if len(n.body.items) == 1 else None, Sym):
            x += 0.06  # italic-ish: handwritten accents drift right over a single letter
        item = Item(t, 1.0, 1.0, x, y, sid)
        return Box(body.items + [item], max(body.width, x + t.width), y + t.top, body.bottom, True)

    def delim(self, d: str, top: float, bottom: float) -> Box:
        """A delimiter stretched to span [top, bottom]; '.' is an empty box."""
        if d == ".":
            return Box([], 0.0, top, bottom)
        t = self._tpl(d)
        k = (bottom - top) / max(t.bottom - t.top, 1e-6)
        kx = min(max(k ** 0.5, 1.0), 2.0) if d not in ("|", "\\|") else 1.0
        ty = top - t.top * k
        return Box([Item(t, kx, k, 0.0, ty, self._sid(d))], t.width * kx, top, bottom, True)

    def fence(self, left: str, inner: Box, right: str) -> Box:
        top = min(inner.top, -1.0) - 0.1
        bottom = max(inner.bottom, 0.25) + 0.1
        lb = self.delim(left, top, bottom)
        items = list(lb.items)
        x = lb.width + 0.05
        items += _moved(inner, 1.0, x, 0.0)
        x += inner.width + 0.05
        rb = self.delim(right, top, bottom)
        items += _moved(rb, 1.0, x, 0.0)
        return Box(items, x + rb.width, min(top, inner.top), max(bottom, inner.bottom), True)

    def fenced(self, n: Fence) -> Box:
        """Matching delimiters around structure: as written around one line of text, stretched over
        taller content (a fraction, a matrix, raised scripts), with the row's own jittered gaps."""
        inner = self.row(n.body)
        lt, rt = self._tpl(n.left), self._tpl(n.right)
        top = min(lt.top, rt.top, inner.top - 0.1)
        bottom = max(lt.bottom, rt.bottom, inner.bottom + 0.1)
        left, x = self._stretched(n.left, lt, top, bottom, 0.0)
        x += self._next_gap()
        items = [left, Placed(inner, 1.0, x, 0.0)]
        x += inner.width + self._next_gap()
        right, w = self._stretched(n.right, rt, top, bottom, x)
        items.append(right)
        return Box(items, x + w, top, bottom, True)

    def _stretched(self, d: str, t: G.Template, top: float, bottom: float, x: float) -> tuple[Item, float]:
        """A delimiter glyph at x spanning [top, bottom] (its own size when that is its extent)."""
        k = (bottom - top) / max(t.bottom - t.top, 1e-6)
        kx = min(max(k ** 0.5, 1.0), 2.0) if d not in ("|", "\\|") else 1.0
        return Item(t, kx, k, x, top - t.top * k, self._sid(d)), t.width * kx

    def _next_gap(self) -> float:
        g = self.gap * self._gaps[self._gi % self._ngaps]
        self._gi += 1
        return g

    def font_node(self, n: Font) -> Box:
        letters = _plain_letters(n.body)
        if letters is None:  # a font command around structure: draw the structure as is
            return self.row(n.body)
        if n.kind == "\\mathbb":
            def stem(t: G.Template, x: float, sid: int):
                line = G.make_template([np.array([[0.0, t.top], [0.0, 0.0]])], pad=0.0)
                return [Item(line, 1.0, 1.0, x + t.points[:, 0].min() + 0.1, 0.0, sid)]
            return self.word(letters, f"\\mathbb{{{letters}}}", extra=stem)
        if n.kind in ("\\mathcal", "\\mathscr"):
            return self.word(letters, f"{n.kind}{{{letters}}}", font="scripts")
        if n.kind.startswith("\\operatorname") or n.kind == "\\mathrm":
            return self.word(letters, f"{n.kind}{{{letters}}}")
        return self.row(n.body)

    def matrix(self, n: Matrix) -> Box:
        cells = [[self.row(c) for c in row] for row in n.rows]
        ncols = max(len(r) for r in cells)
        colw = [0.0] * ncols
        for r in cells:
            for j, b in enumerate(r):
                colw[j] = max(colw[j], b.width)
        asc = [max([-b.top for b in r] + [0.7]) for r in cells]
        desc = [max([b.bottom for b in r] + [0.1]) for r in cells]
        row_gap, col_gap = 0.4, 0.8
        total_h = sum(asc) + sum(desc) + row_gap * (len(cells) - 1)
        y = AXIS - total_h / 2
        items: list = []
        for i, r in enumerate(cells):
            y += asc[i]
            x = 0.0
            for j, b in enumerate(r):
                off = 0.0 if n.env == "cases" else (colw[j] - b.width) / 2
                items += _moved(b, 1.0, x + off, y)
                x += colw[j] + col_gap
            y += desc[i] + row_gap
        width = sum(colw) + col_gap * (ncols - 1)
        inner = Box(items, width, AXIS - total_h / 2, AXIS + total_h / 2)
        fences = {"pmatrix": ("(", ")"), "bmatrix": ("[", "]"), "Bmatrix": ("\\{", "\\}"),
                  "vmatrix": ("|", "|"), "Vmatrix": ("\\|", "\\|"), "cases": ("\\{", ".")}
        if n.env in fences:
            left, right = fences[n.env]
            return self.fence(left, inner, right)
        return inner


def _plain_letters(row: Row) -> str | None:
    """The letters of a font argument made only of single characters (`{R}`, `{sin}`), else None."""
    out = []
    for n in row.items:
        if isinstance(n, Sym) and len(n.name) == 1 and n.name.isalnum():
            out.append(n.name)
        else:
            return None
    return "".join(out) or None


_NOT_PLAIN = G.FUNCTIONS | G.BIG_OPERATORS  # symbols drawn as words or big operators
_KIND = {**{k: "rel" for k in RELATIONS}, **{k: "bin" for k in BINARIES},
         **{k: "digit" for k in "0123456789."}}


_PLAIN: dict[tuple[str, str], tuple] = {}  # (symbol, face) -> (template, spacing class, width, top, bottom)


def _plain(name: str, font: str, latex: str) -> tuple:
    """What row() needs of a symbol drawn as one inline glyph (cached per face)."""
    t = G.template(name, font)
    if t is None:
        raise SynthError(latex, f"no glyph for {name!r}")
    out = _PLAIN[name, font] = (t, _KIND.get(name, "ord"), t.width, min(t.top, -0.05), max(t.bottom, 0.0))
    return out


def _spacing_class(n) -> str:
    if isinstance(n, Sym):
        if n.name in RELATIONS:
            return "rel"
        if n.name in BINARIES:
            return "bin"
        if n.name.isdigit() or n.name == ".":
            return "digit"
        if n.name in G.FUNCTIONS:
            return "func"
    elif isinstance(n, Scripts) and isinstance(n.base, Sym) and n.base.name in G.FUNCTIONS:
        return "func"  # \\sin^{2}x, \\log_{2}x
    return "ord"


def layout(tree: Row, latex: str, *, font: str = "futural", gap: float = 0.12,
           gaps: np.ndarray | None = None, glyphs: GlyphSource | None = None) -> tuple[Box, list[str]]:
    """Lay out a parsed label: (box, visible-symbol label per sid). `glyphs`: see GlyphSource."""
    lay = Layouter(latex, font=font, gap=gap, gaps=gaps, glyphs=glyphs)
    box = lay.row(tree)
    if not box.ink:
        raise SynthError(latex, "label has no visible symbol")
    items = flatten(box.items)
    # number symbols in writing order (layout visits some parts before the strokes that precede them)
    firsts = list(dict.fromkeys([it[5] for it in items]))  # sids in order of first appearance
    if firsts != list(range(len(firsts))):
        order = {old: new for new, old in enumerate(firsts)}
        items = [Item(it.tpl, it.sx, it.sy, it.tx, it.ty, order[it.sid]) for it in items]
    symbols = lay.symbols
    return Box(items, box.width, box.top, box.bottom, True), [symbols[k] for k in firsts]
