"""Single-stroke glyph templates for every symbol the layout engine can draw.

Templates come from the public-domain Hershey stroke fonts (the MIT-licensed `Hershey-Fonts` package
ships them): `futural` (simplex Roman) for Latin letters, digits and punctuation, `scripts` as an
alternative hand, `greek` for Greek and `mathlow` for operators, relations and arrows. A few symbols
the fonts lack (forall, dots, prime, double bars, angle brackets, negations) are composed here.

Units are "em": the baseline is y = 0, capital height is 1, y grows downward (as in InkML), x = 0 is
the glyph's left edge. Every stroke is resampled once, at load time, to an even point spacing, so a
synthesized ink has digitizer-like sampling without any per-ink resampling cost.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import numpy as np

# Hershey fonts: baseline y=9, capital line y=-12 (y down).
_H_BASE = 9.0
_H_CAP = 21.0
SPACING = 0.07  # em between resampled points (MathWriting human inks: ~6-10 units at ~110 units/em)


@dataclass(frozen=True)
class Template:
    """A glyph: all its points in one array plus where each stroke starts.

    points: (P, 2) float64 in em; starts: stroke start offsets into points (first is 0);
    width: advance width; top/bottom: ink extent (top < 0 above the baseline).
    """

    points: np.ndarray
    starts: tuple[int, ...]
    width: float
    top: float
    bottom: float
    n: int = 0          # number of points (cached for the vectorized renderer)
    span: float = 0.0   # top + bottom (twice the vertical centre)
    centred: np.ndarray | None = None  # (2, P): x row and y row relative to the glyph centre
    geom: tuple = ()    # (width, span, bottom - top), gathered per glyph by style._glyph_maps
    rev_order: tuple = ()  # (stroke starts, point order) with the strokes in reverse order (style._reorder)

    @property
    def num_strokes(self) -> int:
        return len(self.starts)


def resample(stroke: np.ndarray, spacing: float = SPACING) -> np.ndarray:
    """Evenly spaced points along a polyline (keeps both ends; a dot stays a short stroke)."""
    stroke = np.asarray(stroke, dtype=np.float64)
    if len(stroke) < 2:
        return stroke.copy()
    seg = np.hypot(*np.diff(stroke, axis=0).T)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    total = arc[-1]
    if total < 1e-9:
        return stroke[:1].copy()
    n = max(2, int(np.ceil(total / spacing)) + 1)
    at = np.linspace(0.0, total, n)
    return np.stack([np.interp(at, arc, stroke[:, 0]), np.interp(at, arc, stroke[:, 1])], axis=1)


def make_template(strokes: list[np.ndarray], width: float | None = None, *, pad: float = 0.08,
                  spacing: float = SPACING) -> Template:
    """Build a template from em-unit strokes; shifts x so ink starts at `pad`, width = ink + 2*pad."""
    res = [resample(s, spacing) for s in strokes if len(s)]
    pts = np.concatenate(res)
    x0 = pts[:, 0].min()
    pts = pts - np.array([x0 - pad, 0.0])
    ink_w = float(pts[:, 0].max() - pad)
    starts, off = [], 0
    for r in res:
        starts.append(off)
        off += len(r)
    w = ink_w + 2 * pad if width is None else width
    top, bottom = float(pts[:, 1].min()), float(pts[:, 1].max())
    centred = np.ascontiguousarray((pts - np.array([w / 2, (top + bottom) / 2])).T)
    ends = starts[1:] + [len(pts)]
    rev_points = np.concatenate([np.arange(a, b) for a, b in zip(starts[::-1], ends[::-1])])
    rev_starts = tuple(accumulate([b - a for a, b in zip(starts[::-1], ends[::-1])][:-1], initial=0))
    return Template(pts, tuple(starts), float(w), top, bottom, len(pts), top + bottom, centred,
                    (float(w), top + bottom, bottom - top), (rev_starts, rev_points))


@lru_cache(maxsize=None)
def _font(name: str) -> dict:
    from HersheyFonts import HersheyFonts

    font = HersheyFonts()
    font.load_default_font(name)
    return font.all_glyphs


def hershey_strokes(font: str, char: str) -> list[np.ndarray]:
    """One Hershey glyph as em-unit strokes (baseline 0, capital height 1)."""
    glyph = _font(font)[char]
    out = []
    for s in glyph.strokes:
        a = np.array(s, dtype=np.float64)
        a[:, 1] = (a[:, 1] - _H_BASE) / _H_CAP
        a[:, 0] = a[:, 0] / _H_CAP
        out.append(a)
    return out


def _dot(x: float, y: float, r: float = 0.025) -> np.ndarray:
    """A pen dot: a tiny closed loop, as a digitizer records one."""
    a = np.linspace(0, 2 * np.pi, 5)
    return np.stack([x + r * np.cos(a), y + r * np.sin(a)], axis=1)


def _line(*pts: tuple[float, float]) -> np.ndarray:
    return np.array(pts, dtype=np.float64)


def _transform(strokes: list[np.ndarray], sx=1.0, sy=1.0, dx=0.0, dy=0.0) -> list[np.ndarray]:
    return [np.column_stack([s[:, 0] * sx + dx, s[:, 1] * sy + dy]) for s in strokes]


def _fit(strokes: list[np.ndarray], top: float, bottom: float) -> list[np.ndarray]:
    """Scale uniformly (about x=0) so the ink spans [top, bottom] vertically."""
    ys = np.concatenate([s[:, 1] for s in strokes])
    k = (bottom - top) / max(ys.max() - ys.min(), 1e-9)
    return [np.column_stack([s[:, 0] * k, (s[:, 1] - ys.min()) * k + top]) for s in strokes]


# Symbol -> (font, character) in the Hershey fonts.
_LATIN = {c: ("futural", c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}
_PUNCT = {c: ("futural", c) for c in "()[]|,.;:!/<>=+*?@#%&$"}
_PUNCT.update({"\\{": ("futural", "{"), "\\}": ("futural", "}"), "\\%": ("futural", "%"),
               "\\#": ("futural", "#"), "\\&": ("futural", "&"), "\\$": ("futural", "$"),
               "\\vert": ("futural", "|"), "\\mid": ("futural", "|"), "\\lbrace": ("futural", "{"),
               "\\rbrace": ("futural", "}"), "\\lbrack": ("futural", "["), "\\rbrack": ("futural", "]"),
               "\\slash": ("futural", "/"), "\\colon": ("futural", ":"), "\\ast": ("futural", "*"),
               "\\lt": ("futural", "<"), "\\gt": ("futural", ">")})
_GREEK = {
    "\\alpha": "a", "\\beta": "b", "\\chi": "c", "\\delta": "d", "\\epsilon": "e", "\\varepsilon": "e",
    "\\phi": "f", "\\varphi": "f", "\\gamma": "g", "\\eta": "h", "\\iota": "i", "\\kappa": "k",
    "\\lambda": "l", "\\mu": "m", "\\nu": "n", "\\omicron": "o", "\\pi": "p", "\\vartheta": "q",
    "\\rho": "r", "\\varrho": "r", "\\sigma": "s", "\\varsigma": "s", "\\tau": "t", "\\upsilon": "u",
    "\\omega": "w", "\\xi": "x", "\\psi": "y", "\\zeta": "z",
    "\\Gamma": "G", "\\Delta": "D", "\\Theta": "Q", "\\Lambda": "L", "\\Xi": "X", "\\Pi": "P",
    "\\Sigma": "S", "\\Upsilon": "U", "\\Phi": "F", "\\Psi": "Y", "\\Omega": "W",
}
_MATH = {
    "\\pm": "!", "\\mp": '"', "\\times": "#", "\\cdot": "$", "\\leq": "&", "\\le": "&", "\\geq": "'",
    "\\ge": "'", "-": "-", "\\neq": "?", "\\ne": "?", "\\equiv": "@", "\\propto": "^", "\\infty": "_",
    "\\circ": "`", "\\degree": "`", "\\subset": "d", "\\cup": "e", "\\supset": "f", "\\cap": "g",
    "\\in": "h", "\\rightarrow": "i", "\\to": "i", "\\uparrow": "j", "\\leftarrow": "k",
    "\\gets": "k", "\\downarrow": "l", "\\partial": "m", "\\nabla": "n", "\\exists": "v",
    "\\aleph": "w", "\\div": "x", "\\parallel": "y", "\\perp": "z", "\\therefore": "~",
    "\\sim": "\x7f", "\\int": "p", "\\setminus": "\\", "\\backslash": "\\",
}
# Big operators drawn larger than text and centred on the math axis.
BIG_OPERATORS = {"\\sum", "\\prod", "\\int", "\\oint", "\\iint", "\\bigcup", "\\bigcap", "\\coprod"}
# Operator names written upright as letter sequences.
FUNCTIONS = {
    "\\sin", "\\cos", "\\tan", "\\cot", "\\sec", "\\csc", "\\log", "\\ln", "\\lg", "\\exp", "\\lim",
    "\\max", "\\min", "\\sup", "\\inf", "\\det", "\\arg", "\\deg", "\\dim", "\\ker", "\\gcd",
    "\\sinh", "\\cosh", "\\tanh", "\\coth", "\\arcsin", "\\arccos", "\\arctan", "\\Pr", "\\hom",
    "\\liminf", "\\limsup", "\\mod", "\\bmod", "\\exp",
}
# Operators whose scripts go below/above (display limits) by default.
LIMIT_OPERATORS = {"\\sum", "\\prod", "\\bigcup", "\\bigcap", "\\coprod", "\\lim", "\\max", "\\min",
                   "\\sup", "\\inf", "\\det", "\\gcd", "\\Pr", "\\liminf", "\\limsup"}


def _flipped_A() -> list[np.ndarray]:
    return [np.column_stack([s[:, 0], -1.0 - s[:, 1]]) for s in hershey_strokes("futural", "A")]


def _empty_set() -> list[np.ndarray]:
    return hershey_strokes("futural", "0") + [_line((0.95 / 2.2, -1.1), (0.0, 0.15))]


def _subset_eq(glyph: str) -> list[np.ndarray]:
    base = hershey_strokes("mathlow", glyph)
    ys = np.concatenate([s[:, 1] for s in base])
    xs = np.concatenate([s[:, 0] for s in base])
    lifted = [np.column_stack([s[:, 0], s[:, 1] - 0.2]) for s in base]
    return lifted + [_line((xs.min(), ys.max() + 0.05), (xs.max(), ys.max() + 0.05))]


def _tilde(*bars: float, dy: float = 0.0) -> list[np.ndarray]:
    """The Hershey tilde shifted by dy, with horizontal bars at the given heights (approx, cong, simeq)."""
    sim = hershey_strokes("mathlow", "\x7f")
    xs = np.concatenate([s[:, 0] for s in sim])
    return _transform(sim, dy=dy) + [_line((xs.min(), y), (xs.max(), y)) for y in bars]


def _double_arrow(right: bool, left: bool) -> list[np.ndarray]:
    out = [_line((0.0, -0.56), (0.9, -0.56)), _line((0.0, -0.3), (0.9, -0.3))]
    if right:
        out.append(_line((0.75, -0.7), (0.98, -0.43), (0.75, -0.16)))
    if left:
        out.append(_line((0.15, -0.7), (-0.08, -0.43), (0.15, -0.16)))
    return out


def _circled(plus: bool) -> list[np.ndarray]:
    a = np.linspace(0, 2 * np.pi, 24)
    c = np.stack([0.35 + 0.33 * np.cos(a), -0.43 + 0.33 * np.sin(a)], axis=1)
    if plus:
        return [c, _line((0.02, -0.43), (0.68, -0.43)), _line((0.35, -0.76), (0.35, -0.1))]
    return [c, _line((0.12, -0.66), (0.58, -0.2)), _line((0.58, -0.66), (0.12, -0.2))]


def _doubled(ch: str) -> list[np.ndarray]:
    a = hershey_strokes("futural", ch)
    return a + _transform(a, dx=0.3)


def _integral(kind: str) -> list[np.ndarray]:
    s = _fit(hershey_strokes("mathlow", "p"), -1.0, 0.0)
    if kind == "\\iint":
        return s + _transform(s, dx=0.25)
    if kind == "\\oint":
        a = np.linspace(0, 2 * np.pi, 14)
        xs = np.concatenate([q[:, 0] for q in s])
        return s + [np.stack([xs.mean() + 0.14 * np.cos(a), -0.5 + 0.12 * np.sin(a)], axis=1)]
    return s


def _theta() -> list[np.ndarray]:
    """Handwritten theta: a narrow oval written from the top, then a bar right across it (capital
    Theta, from the Greek font, is wider with a short bar inside)."""
    a = np.linspace(-np.pi / 2, 1.5 * np.pi, 25)
    oval = np.stack([0.24 + 0.24 * np.cos(a), -0.5 + 0.5 * np.sin(a)], axis=1)
    return [oval, _line((-0.02, -0.5), (0.5, -0.5))]


_PRIME = lambda: [_line((0.16, -1.02), (0.04, -0.62))]  # noqa: E731
_BARS = lambda: [_line((0.0, -1.2), (0.0, 0.3)), _line((0.16, -1.2), (0.16, 0.3))]  # noqa: E731
_SQUARE = lambda: [_line((0.0, -0.8), (0.7, -0.8), (0.7, -0.1), (0.0, -0.1), (0.0, -0.8))]  # noqa: E731
_WEDGE = lambda: [_line((0.0, -0.05), (0.3, -0.75), (0.6, -0.05))]  # noqa: E731
_VEE = lambda: [_line((0.0, -0.75), (0.3, -0.05), (0.6, -0.75))]  # noqa: E731
_NEG = lambda: [_line((0.0, -0.5), (0.6, -0.5), (0.6, -0.3))]  # noqa: E731
_UNDERSCORE = lambda: [_line((0.0, 0.15), (0.6, 0.15))]  # noqa: E731

COMPOSED: dict[str, Callable[[], list[np.ndarray]]] = {
    "\\forall": _flipped_A,
    "\\prime": _PRIME, "'": _PRIME,
    "\\ldots": lambda: [_dot(0.05 + 0.22 * i, -0.03) for i in range(3)],
    "\\dots": lambda: [_dot(0.05 + 0.22 * i, -0.03) for i in range(3)],
    "\\cdots": lambda: [_dot(0.05 + 0.22 * i, -0.43) for i in range(3)],
    "\\vdots": lambda: [_dot(0.05, -0.1 - 0.3 * i) for i in range(3)],
    "\\ddots": lambda: [_dot(0.05 + 0.22 * i, -0.8 + 0.3 * i) for i in range(3)],
    "\\|": _BARS, "\\Vert": _BARS,
    "\\langle": lambda: [_line((0.3, -1.2), (0.0, -0.45), (0.3, 0.3))],
    "\\rangle": lambda: [_line((0.0, -1.2), (0.3, -0.45), (0.0, 0.3))],
    "\\emptyset": _empty_set, "\\varnothing": _empty_set,
    "\\notin": lambda: hershey_strokes("mathlow", "h") + [_line((0.55, -0.95), (0.1, 0.1))],
    "\\subseteq": lambda: _subset_eq("d"), "\\supseteq": lambda: _subset_eq("f"),
    "\\approx": lambda: _tilde(dy=-0.13) + _tilde(dy=0.13),
    "\\cong": lambda: _tilde(-0.38, -0.2, dy=-0.2),
    "\\simeq": lambda: _tilde(-0.28, dy=-0.12),
    "\\Rightarrow": lambda: _double_arrow(True, False), "\\implies": lambda: _double_arrow(True, False),
    "\\Leftarrow": lambda: _double_arrow(False, True),
    "\\Leftrightarrow": lambda: _double_arrow(True, True), "\\iff": lambda: _double_arrow(True, True),
    "\\leftrightarrow": lambda: [_line((0.0, -0.43), (0.95, -0.43)), _line((0.8, -0.55), (0.95, -0.43), (0.8, -0.31)),
                                  _line((0.15, -0.55), (0.0, -0.43), (0.15, -0.31))],
    "\\mapsto": lambda: [_line((0.0, -0.58), (0.0, -0.28)), _line((0.0, -0.43), (0.9, -0.43)),
                          _line((0.75, -0.55), (0.9, -0.43), (0.75, -0.31))],
    "\\longrightarrow": lambda: [_line((0.0, -0.43), (1.3, -0.43)), _line((1.15, -0.55), (1.3, -0.43), (1.15, -0.31))],
    "\\neg": _NEG, "\\lnot": _NEG,
    "\\wedge": _WEDGE, "\\land": _WEDGE,
    "\\vee": _VEE, "\\lor": _VEE,
    "\\oplus": lambda: _circled(True), "\\otimes": lambda: _circled(False),
    "\\bullet": lambda: [_dot(0.1, -0.43, 0.06)],
    "\\star": lambda: [_line((0.3, -0.8), (0.12, -0.1), (0.6, -0.55), (0.0, -0.55), (0.48, -0.1), (0.3, -0.8))],
    "\\angle": lambda: [_line((0.75, -0.9), (0.0, 0.0), (0.8, 0.0))],
    "\\triangle": lambda: [_line((0.4, -1.0), (0.0, 0.0), (0.8, 0.0), (0.4, -1.0))],
    "\\ll": lambda: _doubled("<"), "\\gg": lambda: _doubled(">"),
    "\\prod": lambda: _fit(hershey_strokes("greek", "P"), -1.0, 0.0),
    "\\sum": lambda: _fit(hershey_strokes("greek", "S"), -1.0, 0.0),
    "\\bigcup": lambda: _fit(hershey_strokes("mathlow", "e"), -1.0, 0.0),
    "\\bigcap": lambda: _fit(hershey_strokes("mathlow", "g"), -1.0, 0.0),
    "\\coprod": lambda: _fit([np.column_stack([s[:, 0], -s[:, 1]]) for s in hershey_strokes("greek", "P")], -1.0, 0.0),
    "\\int": lambda: _integral("\\int"), "\\oint": lambda: _integral("\\oint"),
    "\\iint": lambda: _integral("\\iint"),
    "\\theta": _theta,
    "\\because": lambda: [_dot(0.05, -0.7), _dot(0.4, -0.7), _dot(0.225, -0.05)],
    "\\hbar": lambda: hershey_strokes("futural", "h") + [_line((0.05, -0.8), (0.45, -0.9))],
    "\\ell": lambda: hershey_strokes("scripts", "l"),
    "_": _UNDERSCORE, "\\_": _UNDERSCORE,
    "\\square": _SQUARE, "\\Box": _SQUARE,
}
"""Symbols the Hershey fonts do not have, drawn from lines, dots and other glyphs (em units, left edge
near 0): one recipe per symbol, aliases sharing theirs."""


def _composed(sym: str) -> list[np.ndarray] | None:
    recipe = COMPOSED.get(sym)
    return recipe() if recipe is not None else None


def symbol_strokes(sym: str, font: str = "futural") -> list[np.ndarray] | None:
    """Em-unit strokes for one visible symbol, or None when it has no glyph."""
    composed = _composed(sym)
    if composed is not None:
        return composed
    if sym in _GREEK:
        return hershey_strokes("greek", _GREEK[sym])
    if sym in _MATH:
        return hershey_strokes("mathlow", _MATH[sym])
    if sym in _LATIN:
        face = font if (font != "futural" and sym.isalpha()) else "futural"
        return hershey_strokes(face, sym)
    if sym in _PUNCT:
        return hershey_strokes(*_PUNCT[sym])
    return None


def known_symbols() -> set[str]:
    """Every single symbol with a glyph (commands and characters), for validation and tests."""
    names = set(_LATIN) | set(_PUNCT) | set(_GREEK) | set(_MATH) | BIG_OPERATORS
    names |= {"\\forall", "\\prime", "'", "\\ldots", "\\dots", "\\cdots", "\\vdots", "\\ddots", "\\|",
              "\\Vert", "\\langle", "\\rangle", "\\emptyset", "\\varnothing", "\\notin", "\\subseteq",
              "\\supseteq", "\\approx", "\\cong", "\\simeq", "\\Rightarrow", "\\Leftarrow",
              "\\Leftrightarrow", "\\iff", "\\implies", "\\leftrightarrow", "\\mapsto",
              "\\longrightarrow", "\\neg", "\\lnot", "\\wedge", "\\land", "\\vee", "\\lor", "\\oplus",
              "\\otimes", "\\bullet", "\\star", "\\angle", "\\triangle", "\\ll", "\\gg", "\\theta",
              "\\hbar", "\\ell", "\\_", "\\square", "\\Box", "\\because"}
    return names


@lru_cache(maxsize=None)
def template(sym: str, font: str = "futural") -> Template | None:
    """The cached, resampled template of a symbol in a face (None if the symbol has no glyph)."""
    strokes = symbol_strokes(sym, font)
    if strokes is None:
        return None
    return make_template(strokes, pad=0.06)


def char_template(ch: str, font: str = "futural") -> Template | None:
    """Template for one text character (letters, digits, punctuation in \\text / operator names)."""
    return template(ch, font) if ch in _LATIN or ch in _PUNCT else None
