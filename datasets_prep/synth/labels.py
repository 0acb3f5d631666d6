"""Labels to draw: random well-formed expressions over the CROHME symbol set, or a user's label file.

The generator builds expressions from a small grammar (terms joined by operators, at most one
relation, scripts, fractions, roots, fences, functions, big operators with limits), so every label
is well formed by construction; `random_label` returns it normalized, as the synthesizer writes it.
`depth` bounds the nesting of structures; `length` is the typical number of visible symbols.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tokenizer import normalize

# The CROHME 2014 symbol inventory (101 symbols as tokenized in the WAP captions).
LOWER = list("abcdefghijklmnopqrstuvwxyz")
UPPER = list("ABCEFGHILMNPRSTVXY")
DIGITS = list("0123456789")
GREEK = ["\\alpha", "\\beta", "\\gamma", "\\theta", "\\lambda", "\\mu", "\\pi", "\\phi", "\\sigma", "\\Delta"]
BINARY = ["+", "-", "\\times", "\\div", "\\pm", "\\cdot", "/"]
RELATION = ["=", "<", ">", "\\leq", "\\geq", "\\neq", "\\rightarrow", "\\in"]
INFTY = "\\infty"
FUNCTION = ["\\sin", "\\cos", "\\tan", "\\log"]
CROHME_SYMBOLS = frozenset(LOWER + UPPER + DIGITS + GREEK + BINARY + RELATION + FUNCTION + [
    "!", "(", ")", ",", ".", "[", "]", "|", "\\{", "\\}", "\\cdots", "\\ldots", "\\exists", "\\forall",
    "\\frac", "\\infty", "\\int", "\\lim", "\\prime", "\\sqrt", "\\sum", "\\limits"])


_INVISIBLE = {"{", "}", "^", "_", "[", "]", "\\limits"}


class _Gen:
    def __init__(self, rng: np.random.Generator, depth: int, length: int):
        self.rng = rng
        self.depth = depth
        self.budget = length

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def var(self) -> str:
        r = self.rng.random()
        if r < 0.62:
            return self.pick(LOWER[:4] * 2 + ["x", "y", "z", "n", "k", "t", "i", "j"] * 2 + LOWER)
        if r < 0.8:
            return self.pick(GREEK)
        return self.pick(UPPER)

    def number(self) -> str:
        n = 1 if self.chance(0.75) else int(self.rng.integers(2, 4))
        first = self.pick(DIGITS[1:]) if n > 1 else self.pick(DIGITS)
        digits = [first] + [self.pick(DIGITS) for _ in range(n - 1)]
        if n > 1 and self.chance(0.1):
            digits.insert(1, ".")  # a decimal: 3 . 1 4
        return " ".join(digits)

    def atom(self) -> str:
        return self.number() if self.chance(0.35) else self.var()

    def term(self, d: int) -> str:
        """One term: an atom or a structure, nesting at most d more levels."""
        if d <= 0 or self.budget < 3 or self.chance(0.45):
            t = self.atom()
            if self.chance(0.15):
                t = f"{t} {self.atom()}"  # implicit product: 2 x, a b
            return t
        kind = self.pick(["sup", "sup", "sub", "subsup", "frac", "frac", "sqrt", "root", "paren", "paren",
                          "func", "sum", "int", "lim", "abs", "prime", "fact", "brace", "dots"])
        inner = lambda: self.expr(d - 1, short=True)  # noqa: E731
        if kind == "sup":
            return f"{self.atom()} ^ {{ {inner()} }}"
        if kind == "sub":
            return f"{self.var()} _ {{ {inner()} }}"
        if kind == "subsup":
            return f"{self.var()} _ {{ {self.atom()} }} ^ {{ {inner()} }}"
        if kind == "frac":
            return f"\\frac {{ {inner()} }} {{ {inner()} }}"
        if kind == "sqrt":
            return f"\\sqrt {{ {inner()} }}"
        if kind == "root":
            return f"\\sqrt [ {self.pick(DIGITS[2:] + ['n'])} ] {{ {inner()} }}"
        if kind == "paren":
            o, c = self.pick([("(", ")"), ("(", ")"), ("[", "]"), ("\\{", "\\}")])
            body = f"{o} {self.expr(d - 1)} {c}"
            return body + (f" ^ {{ {self.atom()} }}" if self.chance(0.3) else "")
        if kind == "abs":
            return f"| {inner()} |"
        if kind == "func":
            f = self.pick(FUNCTION)
            if f == "\\log" and self.chance(0.4):
                f = f"\\log _ {{ {self.atom()} }}"
            elif self.chance(0.2):
                f = f"{f} ^ {{ {self.pick(DIGITS[2:4])} }}"
            arg = self.var() if self.chance(0.6) else f"( {inner()} )"
            return f"{f} {arg}"
        if kind == "sum":
            v = self.pick(["i", "k", "n", "j"])
            lim = "\\sum"
            upper = self.pick(["n", "N", INFTY, self.number()])
            return f"{lim} _ {{ {v} = {self.pick(DIGITS[:3])} }} ^ {{ {upper} }} {self.term(d - 1)}"
        if kind == "int":
            v = self.pick(["x", "t", "y", "u"])
            upper = self.pick([self.atom(), INFTY])
            lims = f" _ {{ {self.atom()} }} ^ {{ {upper} }}" if self.chance(0.7) else ""
            return f"\\int{lims} {self.term(d - 1)} d {v}"
        if kind == "lim":
            v = self.pick(["x", "n", "t", "h"])
            to = self.pick(["0", "\\infty", self.var(), "+ \\infty", "- \\infty"])
            return f"\\lim _ {{ {v} \\rightarrow {to} }} {self.term(d - 1)}"
        if kind == "prime":
            f = self.pick(["f", "g", "y", "h"])
            return f"{f} ^ {{ \\prime }} ( {self.var()} )"
        if kind == "fact":
            return f"{self.pick(['n', 'k', self.number()])} !"
        if kind == "brace":
            return f"\\{{ {self.var()} , {self.var()} \\}}"
        if kind == "dots":
            v = self.var()
            dots = self.pick(["\\cdots", "\\ldots"])
            op = "+" if dots == "\\cdots" else ","
            return f"{v} _ {{ 1 }} {op} {dots} {op} {v} _ {{ n }}"
        raise AssertionError(kind)  # pragma: no cover

    def spend(self, term: str) -> str:
        self.budget -= sum(1 for t in term.split() if t not in _INVISIBLE)
        return term

    def expr(self, d: int, short: bool = False) -> str:
        """Terms joined by binary operators, with at most one relation at the top level."""
        parts = [self.spend(self.term(d))]
        limit = 2 if short else 24
        used_relation = short
        while self.budget > 0 and len(parts) < limit and (not short or self.chance(0.4)):
            if not used_relation and len(parts) >= 2 and self.chance(0.35):
                op = self.pick(RELATION)
                used_relation = True
            else:
                op = self.pick(BINARY)
            parts.append(self.spend(op))
            parts.append(self.spend(self.term(d)))
        if not short and self.chance(0.05):
            q = self.pick(["\\forall", "\\exists"])
            parts = [q, self.var(), "\\in", self.pick(UPPER), ","] + parts
        return " ".join(parts)


def random_label(rng: np.random.Generator, *, depth: int = 2, length: int = 8) -> str:
    """A random well-formed label over the CROHME symbol set, normalized (`tokenizer.normalize`).

    depth: maximum nesting of scripts/fractions/roots/fences (0 = flat); length: typical number of
    visible symbols (the actual count varies around it).
    """
    if depth < 0 or length < 1:
        raise ValueError("depth must be >= 0 and length >= 1")
    target = max(1, int(round(length * (0.6 + 0.8 * rng.random()))))
    g = _Gen(rng, depth, target)
    return normalize(g.expr(depth))


def read_label_file(path: Path) -> list[tuple[int, str]]:
    """(line number, label) for every non-blank line; `name<TAB>latex` lines give the latex part, bare
    lines are labels (a file may mix both).

    Lines are decoded by the tokenizer's corpus reader (tokenizer/corpus.py: BOM, CRLF, invalid UTF-8
    and binary junk detected per line); a line it cannot decode, or an unreadable file, is a ValueError
    naming the file and the line.
    """
    from tokenizer.corpus import Skipped, read_corpus
    from tokenizer.files import open_regular

    try:
        f = open_regular(path)
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror})") from None
    out = []
    with f:
        for rec in read_corpus(f, str(path), fmt="plain"):
            if isinstance(rec, Skipped):
                what = "not UTF-8 text" if rec.reason == "encoding" else "binary data"
                raise ValueError(f"{path}:{rec.lineno}: {what} ({rec.detail})")
            line = rec.latex.split("\t", 1)[1] if "\t" in rec.latex else rec.latex
            if line.strip():
                out.append((rec.lineno, line.strip()))
    return out
