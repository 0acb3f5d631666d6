"""A small LaTeX math parser for the synthesizer: label -> layout tree -> canonical label.

The synthesizer needs structure (what is a fraction, a script, a radicand) to place glyphs, and it
must write back a label that is known by construction. Parsing and re-serializing gives both: the
tree drives the layout and `to_latex(tree)` is the one canonical spelling written into the files
(braced scripts, subscript before superscript, `\\frac{a}{b}`, `'` as `^{\\prime}`, compact).

Only what the layout engine can draw is accepted; anything else raises `SynthError` with the label
and the reason, so a batch run can record it and go on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import SynthError
from .glyphs import BIG_OPERATORS, FUNCTIONS, known_symbols

# MathWriting's token classes, plus `\begin{name*}` merged and whitespace kept (it matters in \text).
_TOKEN_RE = re.compile(r"\\(?:begin\{[a-zA-Z*]+\}|end\{[a-zA-Z*]+\}|operatorname\*|[a-zA-Z]+|[^a-zA-Z])|\s+|.",
                       re.S)

ACCENTS = {"\\hat", "\\widehat", "\\bar", "\\overline", "\\vec", "\\overrightarrow", "\\tilde",
           "\\widetilde", "\\dot", "\\ddot", "\\check", "\\breve", "\\underline", "\\acute", "\\grave",
           "\\boxed"}
FONTS = {"\\mathrm", "\\mathbf", "\\mathit", "\\mathsf", "\\mathtt", "\\mathbb", "\\mathcal",
         "\\mathscr", "\\mathfrak", "\\boldsymbol", "\\bm", "\\operatorname", "\\operatorname*"}
TEXTS = {"\\text", "\\mbox", "\\textrm", "\\textit", "\\textbf", "\\mathnormal"}
FRACS = {"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"}
STACKS = {"\\overset", "\\underset", "\\stackrel", "\\binom", "\\dbinom", "\\tbinom"}
SPACES = {"\\,": 0.17, "\\:": 0.22, "\\;": 0.28, "\\!": -0.08, "\\quad": 1.0, "\\qquad": 2.0,
          "~": 0.3, "\\ ": 0.3, "\\enspace": 0.5, "\\thinspace": 0.17}
STYLES = {"\\displaystyle", "\\textstyle", "\\scriptstyle", "\\scriptscriptstyle"}  # invisible: dropped
SIZED = {"\\big", "\\Big", "\\bigg", "\\Bigg", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\biggl",
         "\\biggr", "\\Biggl", "\\Biggr"}
DELIMITERS = {"(", ")", "[", "]", "|", "\\{", "\\}", "\\|", "\\langle", "\\rangle", "/", ".",
              "\\lbrace", "\\rbrace", "\\vert", "\\Vert", "\\lbrack", "\\rbrack", "\\lvert", "\\rvert",
              "\\lVert", "\\rVert"}
MATRIX_ENVS = {"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "array",
               "cases", "aligned", "align", "align*", "gathered", "split"}
_SYNONYMS = {"\\to": "\\rightarrow", "\\le": "\\leq", "\\ge": "\\geq", "\\ne": "\\neq", "\\lt": "<",
             "\\gt": ">", "\\gets": "\\leftarrow", "\\lbrace": "\\{", "\\rbrace": "\\}",
             "\\lbrack": "[", "\\rbrack": "]", "\\vert": "|", "\\dfrac": "\\frac", "\\tfrac": "\\frac",
             "\\cfrac": "\\frac", "\\dbinom": "\\binom", "\\tbinom": "\\binom", "\\Vert": "\\|",
             "\\implies": "\\Rightarrow", "\\land": "\\wedge", "\\lor": "\\vee", "\\lnot": "\\neg",
             "\\dots": "\\ldots", "\\geqslant": "\\geq", "\\leqslant": "\\leq", "\\bot": "\\perp",
             "\\lvert": "|", "\\rvert": "|", "\\lVert": "\\|", "\\rVert": "\\|"}


MAX_TOKENS = 1500  # the longest real handwritten labels have a few hundred
MAX_DEPTH = 60  # far beyond handwritten math; keeps every later recursive pass inside Python's stack

# ---- tree -------------------------------------------------------------------------------------
@dataclass
class Sym:
    """A visible symbol: a character or a symbol command (`x`, `+`, `\\alpha`, `\\sin`, `\\sum`)."""

    name: str
    limits: str = ""  # "\\limits" / "\\nolimits" as written after a big operator


@dataclass
class Row:
    """A horizontal list; `braced` rows were `{...}` in the label and keep their braces."""

    items: list = field(default_factory=list)
    braced: bool = False


@dataclass
class Scripts:
    base: object
    sub: Row | None = None
    sup: Row | None = None
    primes: int = 0  # sup made of `'`s, which merge with a following ^{...}


@dataclass
class Frac:
    num: Row
    den: Row


@dataclass
class Stack:
    """\\overset{top}{base}, \\underset{bottom}{base}, \\stackrel, \\binom{n}{k}."""

    kind: str
    first: Row
    second: Row


@dataclass
class Sqrt:
    body: Row
    index: Row | None = None


@dataclass
class Accent:
    kind: str
    body: Row


@dataclass
class Font:
    kind: str
    body: Row


@dataclass
class Text:
    kind: str
    text: str


@dataclass
class Space:
    cmd: str


@dataclass
class LeftRight:
    left: str
    body: Row
    right: str


@dataclass
class Sized:
    """`\\big(` and friends: a delimiter drawn larger than text."""

    size: str
    delim: str


@dataclass
class Matrix:
    env: str
    rows: list[list[Row]]
    colspec: str = ""


@dataclass
class Not:
    body: object


# ---- lexer -------------------------------------------------------------------------------------
def lex(latex: str) -> list[str]:
    """Tokens of a label, whitespace runs kept as ' ' (significant only inside \\text)."""
    toks = _TOKEN_RE.findall(latex)
    for i, t in enumerate(toks):
        if t[0].isspace():
            toks[i] = " "
        elif t[0] == "\\" and len(t) <= 2:
            if t == "\\":
                raise SynthError(latex, "lone trailing backslash")
            if t[1].isspace():
                toks[i] = "\\ "
    return toks


# ---- parser ------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, latex: str):
        self.latex = latex
        self.toks = lex(latex)
        if len(self.toks) > MAX_TOKENS:
            raise SynthError(latex, f"label too long to be handwriting ({len(self.toks)} tokens, at most {MAX_TOKENS})")
        self.i = 0
        self.depth = 0
        self.known = _KNOWN

    def fail(self, reason: str):
        raise SynthError(self.latex, f"{reason} (at token {self.i})")

    def peek(self, skip_space: bool = True) -> str | None:
        if skip_space:
            while self.i < len(self.toks) and self.toks[self.i] == " ":
                self.i += 1
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        t = self.peek()
        if t is None:
            self.fail("unexpected end of label")
        self.i += 1
        return t

    def expect(self, tok: str):
        t = self.peek()
        if t != tok:
            self.fail(f"expected {tok!r}, found {t!r}" if t is not None else f"expected {tok!r} at end")
        self.i += 1

    def parse(self) -> Row:
        row = self.row(stop=())
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r}")
        if not _has_ink(row):
            raise SynthError(self.latex, "label has no visible symbol")
        return row

    def row(self, stop: tuple[str, ...]) -> Row:
        items: list = []
        while True:
            t = self.peek()
            if t is None or t in stop:
                return Row(items)
            if t == "}":
                self.fail("unbalanced '}'")
            if t in ("^", "_"):
                self.i += 1
                self.attach_script(items, t)
                continue
            if t == "'":
                self.i += 1
                self.attach_prime(items)
                continue
            if t in ("\\limits", "\\nolimits"):
                self.i += 1
                base = items[-1] if items else None
                if not isinstance(base, Sym) or base.name not in BIG_OPERATORS | FUNCTIONS:
                    self.fail(f"{t} must follow a big operator")
                base.limits = t
                continue
            if t in ("&", "\\\\"):
                self.fail(f"{t!r} outside a matrix environment")
            if t in STYLES:
                self.i += 1
                continue
            items.append(self.atom())

    def attach_script(self, items: list, kind: str):
        if not items:
            self.fail(f"'{kind}' has no base (write {{}}{kind}{{...}} for a prescript)")
        base = items[-1]
        if not isinstance(base, Scripts):
            base = Scripts(base)
            items[-1] = base
        arg = self.argument()
        if kind == "_":
            if base.sub is not None:
                self.fail("double subscript")
            base.sub = arg
        else:
            if base.sup is not None and not base.primes:
                self.fail("double superscript")
            if base.primes:
                base.sup = Row(base.sup.items + arg.items)
                base.primes = 0
            else:
                base.sup = arg

    def attach_prime(self, items: list):
        if not items:  # `^{'}` as CROHME writes it: the prime symbol itself
            items.append(Sym("\\prime"))
            return
        base = items[-1]
        if not isinstance(base, Scripts):
            base = Scripts(base)
            items[-1] = base
        if base.sup is not None and not base.primes:
            self.fail("prime after a superscript")
        if base.sup is None:
            base.sup = Row([])
        base.sup.items.append(Sym("\\prime"))
        base.primes += 1

    def group(self) -> Row:
        self.expect("{")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} groups")
        r = self.row(stop=("}",))
        self.depth -= 1
        self.expect("}")
        return r

    def argument(self) -> Row:
        """A command or script argument: `{...}` or one token (`x^2`, `\\frac12`, `x^\\alpha`)."""
        t = self.peek()
        if t is None:
            self.fail("missing argument")
        if t == "{":
            return self.group()
        if t in ("}", "^", "_", "&", "\\\\", "'") or t.startswith("\\end"):
            self.fail(f"missing argument before {t!r}")
        if len(t) == 1 and not t.startswith("\\") and len(self.toks[self.i]) == 1:
            self.i += 1
            return Row([self.symbol(t)])
        return Row([self.atom()])

    def symbol(self, name: str) -> Sym:
        name = _SYNONYMS.get(name, name)
        if name not in self.known:
            what = f"command {name}" if name.startswith("\\") else f"character {name!r}"
            self.fail(f"unsupported {what} (no glyph)")
        return Sym(name)

    def atom(self):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                self.fail(f"nesting deeper than {MAX_DEPTH} levels")
            return self._atom()
        finally:
            self.depth -= 1

    def _atom(self):
        t = self.take()
        if t == "{":
            self.i -= 1
            g = self.group()
            g.braced = True
            return g
        if t in FRACS:
            return Frac(self.argument(), self.argument())
        if t in STACKS:
            return Stack(_SYNONYMS.get(t, t), self.argument(), self.argument())
        if t == "\\sqrt":
            index = None
            if self.peek() == "[":
                self.i += 1
                index = self.row(stop=("]",))
                self.expect("]")
                if not _has_ink(index):
                    self.fail("empty root index")
            return Sqrt(self.argument(), index)
        if t in ACCENTS:
            return Accent(t, self.argument())
        if t in FONTS:
            return Font(t, self.argument())
        if t in TEXTS:
            return Text(t, self.raw_group())
        if t in SPACES:
            return Space(t)
        if t == "\\left":
            left = self.delimiter()
            body = self.row(stop=("\\right",))
            if self.peek() != "\\right":
                self.fail("\\left without \\right")
            self.i += 1
            return LeftRight(left, body, self.delimiter())
        if t == "\\right":
            self.fail("\\right without \\left")
        if t in SIZED:
            return Sized(t, self.delimiter())
        if t.startswith("\\begin{"):
            return self.matrix(t[7:-1])
        if t.startswith("\\end{"):
            self.fail(f"{t} without \\begin")
        if t == "\\not":
            nxt = self.peek()
            if nxt is None or nxt in ("{", "}", "^", "_"):
                self.fail("\\not needs a symbol")
            return Not(self.symbol(self.take()))
        if t in ("[", "]") or len(t) == 1 or t.startswith("\\"):
            return self.symbol(t)
        self.fail(f"unsupported token {t!r}")

    def delimiter(self) -> str:
        t = self.take()
        t = _SYNONYMS.get(t, t)
        if t not in DELIMITERS:
            self.fail(f"{t!r} is not a delimiter")
        return t

    def raw_group(self) -> str:
        """The literal content of `{...}` (spaces kept) for \\text and \\mbox."""
        self.expect("{")
        out, depth = [], 0
        while True:
            if self.i >= len(self.toks):
                self.fail("unterminated \\text group")
            t = self.toks[self.i]
            self.i += 1
            if t == "{":
                depth += 1
            elif t == "}":
                if depth == 0:
                    break
                depth -= 1
            out.append(t)
        text = "".join(out)
        for ch in text:
            if ch != " " and ch not in self.known and ch not in "{}":
                self.fail(f"unsupported character {ch!r} in text")
        if "\\" in text or "{" in text:
            self.fail("commands inside \\text are not supported")
        return text

    def matrix(self, env: str):
        if env not in MATRIX_ENVS:
            self.fail(f"unsupported environment {env!r}")
        colspec = ""
        if env == "array":
            colspec = self.raw_group()
            if not colspec or any(c not in "lcr| " for c in colspec):
                self.fail(f"unsupported array column spec {colspec!r}")
        end = f"\\end{{{env}}}"
        rows: list[list[Row]] = [[]]
        while True:
            cell = self.row(stop=("&", "\\\\", end))
            rows[-1].append(cell)
            t = self.peek()
            if t is None:
                self.fail(f"\\begin{{{env}}} without {end}")
            self.i += 1
            if t == "&":
                continue
            if t == "\\\\":
                if self.peek() == "[":  # row spacing like \\[2pt]: not handwritten
                    self.fail("row spacing \\\\[..] is not supported")
                rows.append([])
                continue
            break
        if rows and len(rows) > 1 and all(not _has_ink(c) for c in rows[-1]):
            rows.pop()  # trailing \\ before \end
        return Matrix(env, rows, colspec)


def _has_ink(node) -> bool:
    if isinstance(node, Sym):
        return True
    if isinstance(node, Row):
        return any(_has_ink(n) for n in node.items)
    if isinstance(node, Scripts):
        return _has_ink(node.base) or (node.sub is not None and _has_ink(node.sub)) or (
            node.sup is not None and _has_ink(node.sup))
    if isinstance(node, Text):
        return bool(node.text.strip())
    if isinstance(node, Space):
        return False
    if isinstance(node, Sized):
        return node.delim != "."
    return True


_KNOWN = known_symbols() | FUNCTIONS | BIG_OPERATORS


def parse(latex: str) -> Row:
    """Parse a label into the layout tree; raises SynthError(label, reason) on anything unsupported."""
    return _Parser(latex).parse()


# ---- canonical serializer ------------------------------------------------------------------------
def tokens_of(node) -> list[str]:
    """Canonical LaTeX tokens of a tree (what `to_latex` joins and the CROHME writer space-separates)."""
    out: list[str] = []
    _emit(node, out)
    return out


def _emit_group(row: Row, out: list[str]):
    out.append("{")
    _emit(row, out)
    out.append("}")


def _emit(node, out: list[str]):
    if isinstance(node, Row):
        if node.braced:
            out.append("{")
        for n in node.items:
            _emit(n, out)
        if node.braced:
            out.append("}")
    elif isinstance(node, Sym):
        out.append(node.name)
        if node.limits:
            out.append(node.limits)
    elif isinstance(node, Scripts):
        _emit(node.base, out)
        if node.sub is not None:
            out.append("_")
            _emit_group(node.sub, out)
        if node.sup is not None:
            out.append("^")
            _emit_group(node.sup, out)
    elif isinstance(node, Frac):
        out.append("\\frac")
        _emit_group(node.num, out)
        _emit_group(node.den, out)
    elif isinstance(node, Stack):
        out.append(node.kind)
        _emit_group(node.first, out)
        _emit_group(node.second, out)
    elif isinstance(node, Sqrt):
        out.append("\\sqrt")
        if node.index is not None:
            out.append("[")
            _emit(node.index, out)
            out.append("]")
        _emit_group(node.body, out)
    elif isinstance(node, (Accent, Font)):
        out.append(node.kind)
        _emit_group(node.body, out)
    elif isinstance(node, Text):
        out.append(f"{node.kind}{{{node.text}}}")
    elif isinstance(node, Space):
        out.append(node.cmd)
    elif isinstance(node, LeftRight):
        out += ("\\left", node.left)
        _emit(node.body, out)
        out += ("\\right", node.right)
    elif isinstance(node, Sized):
        out += (node.size, node.delim)
    elif isinstance(node, Matrix):
        out.append(f"\\begin{{{node.env}}}")
        if node.env == "array":
            out.append(f"{{{node.colspec}}}")
        for r, row in enumerate(node.rows):
            if r:
                out.append("\\\\")
            for c, cell in enumerate(row):
                if c:
                    out.append("&")
                _emit(cell, out)
        out.append(f"\\end{{{node.env}}}")
    elif isinstance(node, Not):
        out.append("\\not")
        _emit(node.body, out)
    else:  # pragma: no cover - every node type is handled above
        raise TypeError(type(node))


def join_tokens(tokens: list[str]) -> str:
    """Concatenate, with a space after a control word when the next chunk starts with a letter."""
    parts: list[str] = []
    prev = ""
    for t in tokens:
        if t[:1].isalpha() and prev and _ends_with_control_word(prev):
            parts.append(" ")
        parts.append(t)
        prev = t
    return "".join(parts)


def _ends_with_control_word(chunk: str) -> bool:
    i = chunk.rfind("\\")
    return i >= 0 and i + 1 < len(chunk) and chunk[i + 1:].isalpha()


def to_latex(node) -> str:
    """The canonical compact label (MathWriting normalizedLabel style)."""
    return join_tokens(tokens_of(node))


def to_spaced(node) -> str:
    """Space-tokenized label, as CROHME 2014 truths and the WAP captions are written."""
    return " ".join(tokens_of(node))
