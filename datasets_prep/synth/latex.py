"""Synth's view of a label: the tokenizer's parse tree, adapted to the nodes the layout engine draws.

The project has one grammar and one canonical spelling, both in `tokenizer/`. A label is normalized
(`tokenizer.normalize`), the normalized label is parsed by the tokenizer (`tokenizer.validate`), and
that tree is adapted here to layout nodes (`layout.Sym`, `Row`, `Frac`, ...). What is drawn is the
normalized label, and the normalized label is the truth written into the files: a fixed point of
`tokenizer.normalize` by construction. What stays here is layout knowledge: which commands the
engine can draw and which symbols have a glyph; matching delimiters around structure become a
`Fence` that grows with its content, as a hand draws it (normalize keeps the delimiters, not
\\left/\\right). Anything the engine cannot draw raises `SynthError(label, reason)`.
"""
from __future__ import annotations

from tokenizer import LatexError, normalize, tokenize, validate
from tokenizer.grammar import Command, Env, Group, Scripts as _TScripts
from tokenizer.lexer import TEXT_SPACE

from .errors import SynthError
from .glyphs import BIG_OPERATORS, FUNCTIONS, known_symbols
from .layout import Accent, Fence, Font, Frac, Matrix, Not, Row, Scripts, Sqrt, Stack, Sym, Text

ACCENTS = frozenset({"\\hat", "\\widehat", "\\bar", "\\overline", "\\vec", "\\overrightarrow", "\\tilde",
                     "\\widetilde", "\\dot", "\\ddot", "\\check", "\\breve", "\\underline", "\\acute", "\\grave",
                     "\\boxed"})
FONTS = frozenset({"\\mathrm", "\\mathbf", "\\mathsf", "\\mathtt", "\\mathbb", "\\mathcal", "\\mathscr",
                   "\\mathfrak", "\\boldsymbol", "\\bm", "\\operatorname", "\\operatorname*"})
TEXTS = frozenset({"\\text", "\\textit", "\\textbf"})  # normalize spells \mbox, \textrm, ... as \text
STACKS = frozenset({"\\overset", "\\underset", "\\stackrel", "\\binom"})
MATRIX_ENVS = frozenset({"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "cases", "aligned",
                         "align", "align*", "gathered", "split"})  # normalize renames array -> matrix
FENCES = {"(": ")", "[": "]", "\\{": "\\}", "\\langle": "\\rangle", "|": "|", "\\|": "\\|"}
_CLOSERS = frozenset(FENCES.values())
_DELIMS = _CLOSERS | set(FENCES)
SEPARATORS = frozenset({"&", "\\\\"})
MAX_TOKENS = 1500  # the longest real handwritten labels have a few hundred
MAX_DEPTH = 60  # far beyond handwritten math; keeps every later recursive pass inside Python's stack
_KNOWN = known_symbols() | FUNCTIONS | BIG_OPERATORS
_DRAWN = _KNOWN - SEPARATORS  # '&' has a glyph, but in a label it separates matrix cells


# ---- the adapter -------------------------------------------------------------------------------
class _Adapter:
    """Tokenizer grammar nodes (token indices into `toks`) -> layout nodes."""

    __slots__ = ("label", "toks")

    def __init__(self, label: str, toks: list[str]):
        self.label, self.toks = label, toks

    def fail(self, reason: str, at: int | None = None):
        raise SynthError(self.label, reason if at is None else f"{reason} (at token {at})")

    def row(self, nodes: list, depth: int) -> Row:
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
        toks, items, delims = self.toks, [], False
        i, n = 0, len(nodes)
        while i < n:
            x = nodes[i]
            i += 1
            if type(x) is int:
                t = toks[x]
                if t in _DRAWN:  # the common case: a symbol with a glyph
                    items.append(Sym(t))
                    delims = delims or t in _DELIMS
                elif t == "\\not":
                    if i == n or type(nodes[i]) is not int:
                        self.fail("\\not needs a symbol", x)
                    items.append(Not(self.symbol(nodes[i])))
                    i += 1
                else:
                    items.append(self.symbol(x))
            else:
                if type(x) is _TScripts and type(x.base) is int and toks[x.base] in _DELIMS:
                    delims = True
                items.append(self.node(x, depth))
        return Row(_fences(items) if delims else items)

    def arg(self, a, depth: int) -> Row:
        return self.row(a.body, depth + 1) if type(a) is Group else Row([self.node(a, depth + 1)])

    def symbol(self, i: int) -> Sym:
        t = self.toks[i]
        if t in SEPARATORS:
            self.fail(f"{t!r} outside a matrix environment", i)
        if t not in _KNOWN:
            if t.startswith("\\mathbb{"):
                return Font("\\mathbb", Row([Sym(t[8])]))  # the lexer's one-token \mathbb{R}
            what = f"command {t}" if t[0] == "\\" else f"character {t!r}"
            self.fail(f"unsupported {what} (no glyph)", i)
        return Sym(t)

    def node(self, x, depth: int):
        kind = type(x)
        if kind is int:
            return self.symbol(x)
        if kind is Group:  # kept by normalize only where it means something: {}^{14}C, {a^{b}}^{c}
            return self.row(x.body, depth + 1)
        if kind is _TScripts:
            if x.base is None:
                at = x.sub_op if x.sub_op is not None else x.sup_op
                self.fail(f"{self.toks[at]!r} has no base (write {{}}{self.toks[at]}{{...}} for a prescript)", at)
            return Scripts(self.node(x.base, depth + 1), None if x.sub is None else self.arg(x.sub, depth),
                           None if x.sup is None else self.arg(x.sup, depth))
        if kind is Command:
            return self.command(x, depth)
        if kind is Env:
            return self.matrix(x, depth)
        self.fail(f"cannot lay out {kind.__name__}")  # \left, \middle: normalize removes them

    def command(self, c: Command, depth: int):
        name = self.toks[c.index]
        args = c.args
        if c.opt is not None and name != "\\sqrt":
            self.fail(f"optional argument of {name} is not supported", c.index)
        if name == "\\frac":
            return Frac(self.arg(args[0], depth), self.arg(args[1], depth))
        if name == "\\sqrt":
            index = None if c.opt is None else self.row(c.opt.body, depth + 1)
            if index is not None and not index.items:
                self.fail("empty root index", c.index)
            return Sqrt(self.arg(args[0], depth), index)
        if name in STACKS:
            return Stack(name, self.arg(args[0], depth), self.arg(args[1], depth))
        if name in ACCENTS:
            return Accent(name, self.arg(args[0], depth))
        if name in FONTS:
            return Font(name, self.arg(args[0], depth))
        if name in TEXTS:
            return Text(name, self.text(args[0]))
        self.fail(f"unsupported command {name}", c.index)

    def text(self, a) -> str:
        """The literal content of a \\text argument (single characters and spaces)."""
        toks = self.toks
        nodes = a.body if type(a) is Group else [a]
        if not all(type(x) is int for x in nodes):
            self.fail("commands inside \\text are not supported")
        out = [toks[x] for x in nodes]
        for ch in out:
            if len(ch) != 1 or (ch != TEXT_SPACE and ch not in _KNOWN):
                self.fail("commands inside \\text are not supported" if len(ch) > 1 else
                          f"unsupported character {ch!r} in text")
        return "".join(out)

    def matrix(self, e: Env, depth: int) -> Matrix:
        if e.name not in MATRIX_ENVS or e.args or e.opt is not None:
            self.fail(f"unsupported environment {e.name!r}", e.begin)
        toks = self.toks
        rows: list[list[Row]] = [[]]
        cell: list = []
        for x in e.body + ["\\\\"]:  # a sentinel row break closes the last cell
            sep = x if type(x) is str else toks[x] if type(x) is int else \
                toks[x.index] if type(x) is Command and toks[x.index] == "\\\\" else None
            if sep not in SEPARATORS:
                cell.append(x)
                continue
            rows[-1].append(self.row(cell, depth + 1))
            cell = []
            if sep == "\\\\":
                rows.append([])
        rows.pop()
        if len(rows) > 1 and not any(c.items for c in rows[-1]):
            rows.pop()  # a trailing \\ before \end
        return Matrix(e.name, rows)


def _fences(items: list) -> list:
    """Matching delimiters of a row around structure (a fraction, scripts, a root...), and what is
    between them, as Fence nodes (innermost first); around plain symbols they stay symbols.

    A closer pairs with the nearest open delimiter of its kind (openers between them stay plain
    symbols, as in `\\{x|x>0\\}`); a closer with no opener stays a symbol (`[0,1)`). A script on a
    closer, as the tokenizer attaches `(a+b)^{2}`, goes on the whole fence."""
    out: list = []
    stack: list[int] = []
    for it in items:
        base = it.base if type(it) is Scripts else it
        name = base.name if type(base) is Sym else None
        if name in _CLOSERS:
            k = len(stack) - 1
            while k >= 0 and FENCES[out[stack[k]].name] != name:
                k -= 1
            if k >= 0:
                j = stack[k]
                del stack[k:]
                body = out[j + 1:]
                if all(type(x) is Sym for x in body):  # one line of symbols: the delimiters as written
                    out.append(it)
                    continue
                fence = Fence(out[j].name, Row(body), name)
                del out[j:]
                out.append(fence if base is it else Scripts(fence, it.sub, it.sup))
                continue
        if name in FENCES and base is it:
            stack.append(len(out))
        out.append(it)
    return out


def parse_label(label: str) -> tuple[str, list[str], Row]:
    """(normalized label, its tokens, layout tree); raises SynthError(label, reason) if it cannot be drawn."""
    if not isinstance(label, str):
        raise SynthError(repr(label), "label is not a string")
    try:
        norm = normalize(label)
        toks = tokenize(norm)
        if len(toks) > MAX_TOKENS:
            raise SynthError(label, f"label too long to be handwriting ({len(toks)} tokens, at most {MAX_TOKENS})")
        tree = validate(toks)
    except LatexError as e:
        raise SynthError(label, e.verdict()) from None
    except RecursionError:  # the tokenizer bounds group nesting; this is only a backstop
        raise SynthError(label, "expression nested too deeply") from None
    return norm, toks, _Adapter(label, toks).row(tree, 0)


def spaced(tokens: list[str]) -> str:
    """Space-tokenized label, as CROHME 2014 truths and the WAP captions are written; a \\text{...}
    group stays one chunk (its spaces are content)."""
    if TEXTS.isdisjoint(tokens):
        return " ".join(tokens)
    out, k = [], 0
    for i, t in enumerate(tokens):
        if i >= k:
            k = tokens.index("}", i) + 1 if t in TEXTS else i + 1  # drawn text holds no braces
            out.append("".join(tokens[i:k]))
    return " ".join(out)
