"""New labels from a corpus: the head of one label joined to the tail of another, and a filter that
keeps labels whose symbols a glyph bank has.

A cut is made only before a top-level relation or `+`/`-` (outside braces and brackets), so both
halves are whole terms and the result parses whenever its parts did; the caller still checks it
with the synthesizer's parser and drops what fails.
"""
from __future__ import annotations

import numpy as np

from tokenizer import LatexError, normalize, tokenize

from .glyphs import BIG_OPERATORS, FUNCTIONS, known_symbols

CUT_BEFORE = frozenset({"=", "+", "-", "<", ">", "\\leq", "\\geq", "\\neq", "\\rightarrow", "\\in", "\\pm", "\\times"})
_OPEN, _CLOSE = frozenset({"{", "(", "[", "\\{"}), frozenset({"}", ")", "]", "\\}"})
_GLYPHS = known_symbols() | FUNCTIONS | BIG_OPERATORS | {"\\sqrt"}


def _tokens(label: str) -> list[str] | None:
    try:
        return tokenize(normalize(label))
    except (LatexError, RecursionError):
        return None


def cut_points(tokens: list[str]) -> list[int]:
    """Indices i > 0 where tokens[i] is a top-level operator a label may be cut before."""
    out, depth = [], 0
    for i, t in enumerate(tokens):
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        elif depth == 0 and i > 0 and t in CUT_BEFORE and tokens[i - 1] not in ("^", "_"):
            out.append(i)
    return out


def recombine(a: str, b: str, rng: np.random.Generator) -> str | None:
    """a's tokens up to a cut, then b's from a cut (space-joined), or None when either has no cut."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return None
    ca, cb = cut_points(ta), cut_points(tb)
    if not ca or not cb:
        return None
    i = ca[int(rng.integers(len(ca)))]
    j = cb[int(rng.integers(len(cb)))]
    return " ".join(ta[:i] + tb[j:])


def bank_covers(label: str, symbols: set[str]) -> bool:
    """True when every symbol the label draws has samples in the bank (an operator name counts when
    the bank has it or each of its letters)."""
    toks = _tokens(label)
    if toks is None:
        return False
    for t in toks:
        if t in symbols or t not in _GLYPHS:
            continue
        if t in FUNCTIONS and all(ch in symbols for ch in t[1:]):
            continue
        return False
    return "-" in symbols or "\\frac" not in toks
