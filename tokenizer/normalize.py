"""Label normalization (docs/sat.md §5): one canonical spelling per handwritten expression. Off unless asked.

MathWriting's normalizedLabel rules are not published; these are derived from its labels and made a
no-op on them wherever possible: synonyms to one command (`\\to` -> `\\rightarrow`, `\\dfrac` ->
`\\frac`, `\\le` -> `\\leq`), primes as `^{\\prime}`, every script and argument braced, subscript
before superscript, no spacing/sizing/style commands, `\\left`/`\\right` dropped (their delimiters
kept), redundant and empty groups removed except meaningful ones (`{}^{14}C`, `{a^{b}}^{c}`),
`array` -> `matrix`, NFC with stray unicode mapped to LaTeX. Idempotent: N(N(s)) == N(s).
A label that does not parse gets only the token-level rules (synonyms, unicode), never an exception
beyond the lexer's LatexError.

clean_crohme_truth strips what CROHME's InkML truths wrap labels in.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

from .errors import LatexError
from .grammar import Command, Env, Group, LeftRight, Middle, Optional, Scripts, validate
from .lexer import TEXT_COMMANDS, TEXT_SPACE, detokenize, tokenize

SYNONYMS: dict[str, str] = {
    "\\le": "\\leq", "\\ge": "\\geq", "\\ne": "\\neq", "\\leqslant": "\\leq", "\\geqslant": "\\geq",
    "\\to": "\\rightarrow", "\\gets": "\\leftarrow", "\\dfrac": "\\frac", "\\tfrac": "\\frac", "\\cfrac": "\\frac",
    "\\dbinom": "\\binom", "\\tbinom": "\\binom", "\\lt": "<", "\\gt": ">", "\\sp": "^", "\\sb": "_",
    "\\lbrace": "\\{", "\\rbrace": "\\}", "\\lbrack": "[", "\\rbrack": "]", "\\vert": "|", "\\Vert": "\\|",
    "\\dots": "\\ldots", "\\mbox": "\\text", "\\hbox": "\\text", "\\textrm": "\\text", "\\textnormal": "\\text",
    "\\land": "\\wedge", "\\lor": "\\vee", "\\lnot": "\\neg", "\\dag": "\\dagger", "\\ast": "*", "\\colon": ":",
    "\\cdotp": "\\cdot",
}
UNICODE_TO_LATEX: dict[str, str] = {
    "α": "\\alpha", "β": "\\beta", "γ": "\\gamma", "δ": "\\delta", "ε": "\\epsilon", "ϵ": "\\epsilon",
    "ζ": "\\zeta", "η": "\\eta", "θ": "\\theta", "ϑ": "\\vartheta", "ι": "\\iota", "κ": "\\kappa",
    "λ": "\\lambda", "μ": "\\mu", "ν": "\\nu", "ξ": "\\xi", "π": "\\pi", "ϖ": "\\varpi", "ρ": "\\rho",
    "ϱ": "\\varrho", "σ": "\\sigma", "ς": "\\varsigma", "τ": "\\tau", "υ": "\\upsilon", "φ": "\\phi",
    "ϕ": "\\phi", "χ": "\\chi", "ψ": "\\psi", "ω": "\\omega", "Γ": "\\Gamma", "Δ": "\\Delta",
    "Θ": "\\Theta", "Λ": "\\Lambda", "Ξ": "\\Xi", "Π": "\\Pi", "Σ": "\\Sigma", "Υ": "\\Upsilon",
    "Φ": "\\Phi", "Ψ": "\\Psi", "Ω": "\\Omega", "−": "-", "–": "-", "′": "'", "″": "''", "‴": "'''",
    "×": "\\times", "÷": "\\div", "·": "\\cdot", "⋅": "\\cdot", "∙": "\\cdot", "≤": "\\leq", "≥": "\\geq",
    "≠": "\\neq", "±": "\\pm", "∓": "\\mp", "∞": "\\infty", "→": "\\rightarrow", "←": "\\leftarrow",
    "↔": "\\leftrightarrow", "⇒": "\\Rightarrow", "⇐": "\\Leftarrow", "⇔": "\\Leftrightarrow",
    "∑": "\\sum", "∏": "\\prod", "∫": "\\int", "∮": "\\oint", "∂": "\\partial",
    "∇": "\\nabla", "∈": "\\in", "∉": "\\notin", "∋": "\\ni", "⊂": "\\subset", "⊃": "\\supset",
    "⊆": "\\subseteq", "⊇": "\\supseteq", "∪": "\\cup", "∩": "\\cap", "∀": "\\forall", "∃": "\\exists",
    "≈": "\\approx", "≡": "\\equiv", "∼": "\\sim", "≃": "\\simeq", "≅": "\\cong", "∝": "\\propto",
    "…": "\\ldots", "⋯": "\\cdots", "⋮": "\\vdots", "⋱": "\\ddots", "∅": "\\emptyset", "∠": "\\angle",
    "⊥": "\\perp", "∥": "\\parallel", "⊕": "\\oplus", "⊗": "\\otimes", "∧": "\\wedge", "∨": "\\vee",
    "¬": "\\neg", "ℝ": "\\mathbb{R}", "ℕ": "\\mathbb{N}", "ℤ": "\\mathbb{Z}", "ℚ": "\\mathbb{Q}",
    "ℂ": "\\mathbb{C}", "ℓ": "\\ell", "ℏ": "\\hbar", "°": "\\circ", "∘": "\\circ", "⟨": "\\langle",
    "⟩": "\\rangle", "∗": "*", "∣": "|",
}
DROP_ATOMS = frozenset({
    "\\,", "\\:", "\\;", "\\!", "\\ ", "\\quad", "\\qquad", "~", "\\enspace", "\\thinspace", "\\medspace",
    "\\thickspace", "\\negthinspace", "\\negmedspace", "\\negthickspace", "\\displaystyle", "\\textstyle",
    "\\scriptstyle", "\\scriptscriptstyle", "\\limits", "\\nolimits", "\\big", "\\Big", "\\bigg", "\\Bigg",
    "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\biggl", "\\biggr", "\\Biggl", "\\Biggr", "\\bigm", "\\Bigm",
    "\\biggm", "\\Biggm", "\\nonumber", "\\notag", "\\allowbreak", "\\nobreak", "\\mathstrut", "\\strut",
    "\\hfill", "\\smallskip", "\\medskip", "\\bigskip",
})
DROP_COMMANDS = frozenset({"\\hspace", "\\vspace", "\\phantom", "\\hphantom", "\\vphantom", "\\label", "\\tag",
                           "\\color"})
UNWRAP_LAST_ARG = frozenset({"\\textcolor", "\\colorbox", "\\fcolorbox", "\\mathit", "\\mathnormal"})
OPERATOR_NAMES = frozenset({
    "sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "lg", "lim", "exp", "max", "min", "sup", "inf", "det",
    "arg", "deg", "dim", "gcd", "hom", "ker", "Pr", "sinh", "cosh", "tanh", "coth", "arcsin", "arccos", "arctan",
    "liminf", "limsup",
})
ENV_RENAME = {"array": "matrix", "smallmatrix": "matrix", "matrix*": "matrix", "pmatrix*": "pmatrix",
              "bmatrix*": "bmatrix", "Bmatrix*": "Bmatrix", "vmatrix*": "vmatrix", "Vmatrix*": "Vmatrix"}
KEEP_GROUP = frozenset({"\\atop", "\\above", "\\brace", "\\brack", "\\cal", "\\bf", "\\rm", "\\it", "\\sf",
                        "\\tt", "\\mit", "\\boldmath", "\\tiny", "\\scriptsize", "\\footnotesize", "\\small",
                        "\\normalsize", "\\large", "\\Large", "\\LARGE", "\\huge", "\\Huge", "\\over",
                        "\\choose"})
INFIX_FRACTIONS = {"\\over": "\\frac", "\\choose": "\\binom"}
ROW_BREAK = "\\\\"


# -- the normalized tree (token strings instead of indices, so rewrites can build new nodes) -----------
@dataclass
class _Cmd:
    name: str
    opt: list | None
    args: list


@dataclass
class _Scripts:
    base: object
    sub: list | None
    sup: list | None


@dataclass
class _Env:
    name: str
    opt: list | None
    args: list
    body: list


@dataclass
class _Group:
    items: list


def _tree(nodes: list, t: list[str]) -> list:
    return [_item(n, t) for n in nodes]


def _item(n, t: list[str]):
    kind = type(n)
    if kind is int:
        return t[n]
    if kind is Group:
        return _Group(_tree(n.body, t))
    if kind is Command:
        return _Cmd(t[n.index], _tree(n.opt.body, t) if n.opt is not None else None,
                    [_arg(a, t) for a in n.args])
    if kind is Scripts:
        return _Scripts(None if n.base is None else _item(n.base, t),
                        None if n.sub is None else _arg(n.sub, t), None if n.sup is None else _arg(n.sup, t))
    if kind is LeftRight:  # dropped here: the delimiters stay, \left/\right and '.' go
        out = [t[n.left + 1]] + _tree(n.body, t) + [t[n.right + 1]]
        return _Splice(x for x in out if x != ".")
    if kind is Middle:
        return t[n.index + 1] if t[n.index + 1] != "." else _Splice()
    if kind is Env:
        return _Env(n.name, _tree(n.opt.body, t) if n.opt is not None else None, [_arg(a, t) for a in n.args],
                    _tree(n.body, t))
    if kind is Optional:
        return _Splice([t[n.open]] + _tree(n.body, t) + [t[n.close]])
    raise TypeError(kind)


class _Splice(list):
    """Items to insert in place (a dropped \\left...\\right keeps its content at the same level)."""


def _arg(a, t: list[str]) -> list:
    """An argument as an item list (a braced group's content, or the one token)."""
    if type(a) is Group:
        return _tree(a.body, t)
    item = _item(a, t)
    return list(item) if isinstance(item, _Splice) else [item]


# -- rewriting ---------------------------------------------------------------------------------------
def _is_separator(x) -> bool:
    return x == "&" or x == ROW_BREAK


def _rw_seq(items: list, text: bool = False) -> list:
    flat: list = []
    for it in items:
        if isinstance(it, _Splice):
            flat.extend(_rw_item(x, text) for x in it)
        else:
            flat.append(_rw_item(it, text))
    # infix \over / \choose split the whole sequence (the group around them delimits it)
    for k, x in enumerate(flat):
        if isinstance(x, str) and x in INFIX_FRACTIONS and not text:
            left = _rw_seq(flat[:k])
            right = _rw_seq(flat[k + 1:])
            return [_Cmd(INFIX_FRACTIONS[x], None, [left, right])]
    out: list = []
    k = 0
    while k < len(flat):
        x = flat[k]
        k += 1
        if x is None:
            continue
        if isinstance(x, list):  # spliced content (dropped wrapper)
            for y in x:
                if y is not None:
                    _append(out, y)
            continue
        if isinstance(x, str):
            if not text and x in DROP_ATOMS:
                continue
            if x == "'" and not text and out and not _is_separator(out[-1]) and out[-1] != "'":
                run = 1
                while k < len(flat) and flat[k] == "'":
                    run += 1
                    k += 1
                primes = ["\\prime"] * run
                prev = out[-1]
                if isinstance(prev, _Scripts):
                    if prev.sup is None:
                        prev.sup = primes
                    else:
                        out.extend(["'"] * run)
                else:
                    out[-1] = _Scripts(prev, None, primes)
                continue
            if text and x == TEXT_SPACE and (not out or out[-1] == TEXT_SPACE):
                continue
            out.append(x)
        elif isinstance(x, _Group):
            if any(isinstance(y, str) and y in KEEP_GROUP for y in x.items):
                out.append(x)
            else:
                for y in x.items:
                    _append(out, y)
                if text and out:  # unwrapping may have put two spaces side by side
                    out[:] = _collapse_spaces(out)
        else:
            _append(out, x)
    if text:
        while out and out[0] == TEXT_SPACE:
            out.pop(0)
        while out and out[-1] == TEXT_SPACE:
            out.pop()
    return out


def _append(out: list, x) -> None:
    if isinstance(x, _Scripts) and x.base is None and out and not _is_separator(out[-1]):
        x.base = _Group([])  # a prescript must not attach to what now precedes it: {}^{14}C
    out.append(x)


def _collapse_spaces(items: list) -> list:
    res: list = []
    for y in items:
        if y == TEXT_SPACE and res and res[-1] == TEXT_SPACE:
            continue
        res.append(y)
    return res


def _rw_item(x, text: bool):
    """One item rewritten; None = dropped, a plain list = splice these items."""
    if isinstance(x, str):
        return x
    if isinstance(x, _Group):
        return _Group(_rw_seq(x.items, text))
    if isinstance(x, _Scripts):
        sub = _rw_seq(x.sub, text) if x.sub is not None else None
        sup = _rw_seq(x.sup, text) if x.sup is not None else None
        sub = sub or None
        sup = sup or None
        base = _rw_item(x.base, text) if x.base is not None else None
        if isinstance(base, list):  # a spliced base (e.g. \left( x \right)): keep it together
            base = _Group(base)
        if isinstance(base, _Group):
            inner = base.items
            if len(inner) == 1 and (isinstance(inner[0], _Cmd) or (isinstance(inner[0], str)
                                                                   and not _is_separator(inner[0]))):
                base = inner[0]
            elif not inner and sub is None and sup is None:
                base = None
        if sub is None and sup is None:
            return base
        if isinstance(base, str) and base in DROP_ATOMS:
            base = _Group([])
        return _Scripts(base, sub, sup)
    if isinstance(x, _Cmd):
        name = x.name
        if name in DROP_COMMANDS:
            return None
        in_text = text or name in TEXT_COMMANDS
        args = [_rw_seq(a, in_text) for a in x.args]
        if name in UNWRAP_LAST_ARG and args:
            return list(args[-1])
        if name in ("\\operatorname", "\\operatorname*") and args:
            word = args[0]
            if word and all(isinstance(c, str) and len(c) == 1 for c in word) and "".join(word) in OPERATOR_NAMES:
                return "\\" + "".join(word)
        if name == ROW_BREAK:
            return ROW_BREAK
        if name in TEXT_COMMANDS and not args[0]:
            return None
        opt = _rw_seq(x.opt, text) if x.opt is not None else None
        return _Cmd(name, opt, args)
    if isinstance(x, _Env):
        name = ENV_RENAME.get(x.name, x.name)
        args = [] if x.name == "array" else [_rw_seq(a) for a in x.args]
        opt = None if x.name.endswith("*") and name != x.name else (_rw_seq(x.opt) if x.opt is not None else None)
        body = _rw_seq(x.body)
        while body and body[-1] == ROW_BREAK:
            body.pop()
        return _Env(name, opt, args, body)
    if isinstance(x, _Splice):
        return [y for y in (_rw_item(z, text) for z in x) if y is not None]
    return x


# -- serialization -----------------------------------------------------------------------------------
def _emit_seq(items: list, out: list[str]) -> None:
    for x in items:
        _emit(x, out)


def _emit_group(items: list, out: list[str]) -> None:
    out.append("{")
    _emit_seq(items, out)
    out.append("}")


def _emit_opt_args(x, out: list[str]) -> None:
    """A command's or environment's `[optional]` argument, then its braced arguments."""
    if x.opt is not None:
        out.append("[")
        _emit_seq(x.opt, out)
        out.append("]")
    for a in x.args:
        _emit_group(a, out)


def _emit(x, out: list[str]) -> None:
    if isinstance(x, str):
        out.append(x)
    elif isinstance(x, _Group):
        _emit_group(x.items, out)
    elif isinstance(x, _Scripts):
        if isinstance(x.base, (_Scripts, list)):
            _emit_group([x.base] if isinstance(x.base, _Scripts) else x.base, out)
        elif x.base is not None:
            _emit(x.base, out)
        if x.sub is not None:
            out.append("_")
            _emit_group(x.sub, out)
        if x.sup is not None:
            out.append("^")
            _emit_group(x.sup, out)
    elif isinstance(x, _Cmd):
        out.append(x.name)
        _emit_opt_args(x, out)
    elif isinstance(x, _Env):
        out.append("\\begin{" + x.name + "}")
        _emit_opt_args(x, out)
        _emit_seq(x.body, out)
        out.append("\\end{" + x.name + "}")
    elif isinstance(x, list):
        _emit_seq(x, out)


# -- entry points ------------------------------------------------------------------------------------
def _token_rules(latex: str) -> list[str]:
    """NFC, unicode -> LaTeX, synonyms: the rules that need no parse."""
    s = unicodedata.normalize("NFC", latex)
    out: list[str] = []
    for tok in tokenize(s):
        if len(tok) == 1 and tok in UNICODE_TO_LATEX:
            out.extend(tokenize(UNICODE_TO_LATEX[tok]))
            continue
        if len(tok) == 1 and unicodedata.combining(tok):
            continue  # NFC left it standalone: a stray accent that could merge with a new neighbour
        out.append(SYNONYMS.get(tok, tok))
    return out


def normalize(latex: str) -> str:
    """The canonical spelling of a label; idempotent; raises LatexError only when it does not lex."""
    out = _normalize_once(latex)
    for _ in range(3):  # the rules are designed to reach their fixed point at once; this makes sure
        again = _normalize_once(out)
        if again == out:
            break
        out = again
    return out


def _normalize_once(latex: str) -> str:
    tokens = _token_rules(latex)
    try:
        tree = validate(tokens)
    except LatexError:
        return detokenize(tokens, space_after_row_break=True)
    out: list[str] = []
    try:
        _emit_seq(_rw_seq(_tree(tree, tokens)), out)
    except RecursionError:  # the rewriting recurses a few frames per level: kept as lexed, like a
        return detokenize(tokens, space_after_row_break=True)  # label that does not parse
    return detokenize(out, space_after_row_break=True)


_DOLLARS = re.compile(r"^\s*\$+|(?<!\\)\$+\s*$")  # not the `$` of an escaped `\$`
_LT_GT = re.compile(r"\\([lg]t)(?![a-zA-Z])")


def clean_crohme_truth(raw: str) -> str:
    """CROHME InkML truth -> plain LaTeX: strip `$...$`, decode XML entities, collapse whitespace and
    line breaks to single spaces, `\\lt`/`\\gt` -> `<`/`>`."""
    s = html.unescape(raw)
    s = " ".join(s.split())
    s = _DOLLARS.sub("", s)
    s = _LT_GT.sub(lambda m: "<" if m.group(1) == "lt" else ">", s)
    return s.strip()
