"""LaTeX string <-> token list: MathWriting's token classes, with its failures fixed (docs/sat.md §1).

One compiled regex scan does the work. A command is `\\name` (ASCII letters), `\\` + one character,
or one of the merged forms `\\begin{env}`, `\\end{env}`, `\\mathbb{X}`, `\\operatorname*`; every other
non-space character is a token of its own. Whitespace is dropped in math mode, so `\\frac { 1 4 }`
and `\\frac{14}` give the same tokens; inside `\\text{...}`-like groups a run of whitespace is one
" " token (TeX collapses runs; it also skips spaces after a control word, and so do we).
"""
from __future__ import annotations

import re
from typing import Sequence

from .errors import LatexError

MODIFIERS = frozenset("^_{}")
"""The paper's invisible modifiers; `\\{` `\\}` `\\_` `\\^` are visible symbols."""

TEXT_COMMANDS = frozenset({
    "\\text", "\\mbox", "\\hbox", "\\textrm", "\\textbf", "\\textit", "\\texttt", "\\textsf", "\\textup",
    "\\textnormal", "\\textmd", "\\textsl", "\\textsc", "\\emph", "\\fbox", "\\framebox", "\\makebox",
})
"""Commands whose braced argument is typeset in text mode, where whitespace is significant."""

TEXT_SPACE = " "
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

# The backslash is factored out of the command alternatives (same ordered alternation, one test per
# character instead of six): 1.5x faster scans.
_TOKEN = (
    r"\\(?:begin\s*\{\s*[a-zA-Z]+\*?\s*\}"
    r"|end\s*\{\s*[a-zA-Z]+\*?\s*\}"
    r"|mathbb\s*\{\s*[a-zA-Z]\s*\}"
    r"|operatorname\s*\*"
    r"|[a-zA-Z]+"
    r"|.)"
    r"|\S"
)
# Fast path: no token starts with whitespace, so findall's own search skips it and yields tokens only
# (1.4x faster than consuming it with a leading `\s*(...)` group, same tokens: tests/test_tokenizer_lexer.py).
_FAST_RE = re.compile(_TOKEN, re.S)
# Text mode needs the general scan, which keeps whitespace so that it can emit text-mode spaces.
_SLOW_RE = re.compile(r"(\s+)|(" + _TOKEN + ")", re.S)
_TEXT_RE = re.compile(r"\\(?:" + "|".join(sorted(c[1:] for c in TEXT_COMMANDS)) + r")(?![a-zA-Z])")
# Either text mode, or a token the fast path must canonicalize: a merged command written with
# whitespace (`\\begin {matrix}`, `\\operatorname *`) or a control space spelled with a tab/newline.
_SPECIAL_RE = re.compile(
    _TEXT_RE.pattern
    + r"|\\[^\S ]"
    + r"|\\(?:begin|end|mathbb)(?:\s+\{|\s*\{[^}]*?\s)"
    + r"|\\operatorname\s+\*"
)
_WS_RE = re.compile(r"\s+")

_MATH, _TEXT, _TEXT_MATH = 0, 1, 2


def _trailing_backslash(position: int) -> LatexError:
    return LatexError("trailing-backslash",
                      f"token {position}: lone '\\' at the end of the input (expected a command name or a "
                      f"character after it)", position)


def _canonical(tok: str) -> str:
    """`\\<tab>` -> `\\ `; `\\begin { matrix }` -> `\\begin{matrix}`; anything else unchanged."""
    if len(tok) > 1 and tok[0] == "\\":
        if tok[1].isspace():
            return "\\ "
        if tok[-1] in "}*" and len(tok) > 3:
            return _WS_RE.sub("", tok)
    return tok


def tokenize(latex: str) -> list[str]:
    """Split a LaTeX string into tokens; raises LatexError only (a lone trailing backslash)."""
    if not isinstance(latex, str):
        raise LatexError("not-a-string", f"expected a str to tokenize, got {type(latex).__name__}")
    special = _SPECIAL_RE.search(latex)
    if special is not None and _TEXT_RE.search(latex, special.start()) is not None:
        return _tokenize_with_modes(latex)
    tokens = _FAST_RE.findall(latex)
    if tokens and tokens[-1] == "\\":
        raise _trailing_backslash(len(tokens) - 1)
    if special is not None:
        tokens = [_canonical(t) for t in tokens]
    return tokens


def _tokenize_with_modes(latex: str) -> list[str]:
    """The general scan: tracks text-mode groups (where whitespace is a token) and canonicalizes."""
    out: list[str] = []
    append = out.append
    mode = _MATH
    saved: list[int] = []  # mode to restore at each closing brace
    pending_text = False  # last token was a text command: its `{` opens a text group
    after_word = False  # TeX skips whitespace after a control word
    for ws, tok in _SLOW_RE.findall(latex):
        if ws:
            if mode == _TEXT and not after_word and (not out or out[-1] != TEXT_SPACE):
                append(TEXT_SPACE)
            continue
        if tok[0] == "\\":
            if len(tok) == 1:
                raise _trailing_backslash(len(out))
            tok = _canonical(tok)
            append(tok)
            pending_text = tok in TEXT_COMMANDS
            after_word = tok[-1] in _LETTERS
            continue
        append(tok)
        if tok == "{":
            saved.append(mode)
            if pending_text:
                mode = _TEXT
        elif tok == "}":
            if saved:
                mode = saved.pop()
        elif tok == "$":
            if mode == _TEXT:
                mode = _TEXT_MATH
            elif mode == _TEXT_MATH:
                mode = _TEXT
        pending_text = after_word = False
    return out


def is_control_word(token: str) -> bool:
    """`\\alpha`-like tokens, after which TeX needs a space before a letter."""
    return len(token) > 1 and token[0] == "\\" and token[-1] in _LETTERS


_SEP = "\x00"
# A separator after a control word (its last two characters are `\\x` or two letters; a one-letter
# token is preceded by a separator) and before a letter; `*`: empty tokens in between. The pattern
# starts with the separator itself, so the scan skips to candidates instead of trying every position.
_WORD_THEN_LETTER = re.compile(r"\x00(?<=[\\a-zA-Z][a-zA-Z]\x00)\x00*(?=[a-zA-Z])")


def detokenize(tokens: Sequence[str], *, space_after_row_break: bool = False) -> str:
    """Concatenate tokens, with one space after a control word when the next token starts with a letter.

    space_after_row_break writes `\\\\ 3` instead of `\\\\3` (MathWriting's normalizedLabel spacing);
    both lex to the same tokens.
    """
    if not space_after_row_break:
        joined = _SEP.join(tokens)
        if joined.count(_SEP) == len(tokens) - 1:  # no token holds the separator itself
            return _WORD_THEN_LETTER.sub(" ", joined).replace(_SEP, "")
    out: list[str] = []
    prev_word = False
    prev_break = False
    for t in tokens:
        if t:
            if (prev_word and t[0] in _LETTERS) or (prev_break and t[0].isalnum()):
                out.append(" ")
            prev_word = t[0] == "\\" and t[-1] in _LETTERS and len(t) > 1
            prev_break = space_after_row_break and t == "\\\\"
        out.append(t)
    return "".join(out)


# Whitespace that matters outside text mode: after a control word before a letter (`\\alpha x`), and
# the space of a control space (`\\ `). Escaped backslashes are moved out of the way first, so the
# `alpha` of `\\\\alpha x` is not taken for a control word. Few matches per line; the rest is C-speed.
_SIGNIFICANT_SPACE_RE = re.compile(r"\\[a-zA-Z]+\s+(?=[a-zA-Z])|\\\s")
_MARK = "\x00"
_PAIR = "\x01\x01"


def _mark_space(m: re.Match) -> str:
    return m.group().rstrip() + _MARK


def squeeze_whitespace(latex: str) -> str:
    """The string up to insignificant whitespace: every whitespace run dropped, except one space after a
    control word before a letter and the space of a control space. Text-mode spacing is checked at
    token level (its spaces are tokens)."""
    if "\\" not in latex:
        return "".join(latex.split())
    if _MARK in latex or "\x01" in latex:  # the markers would be ambiguous: keep them visible
        latex = latex.replace(_MARK, "\\x00").replace("\x01", "\\x01")
    marked = _SIGNIFICANT_SPACE_RE.sub(_mark_space, latex.replace("\\\\", _PAIR))
    return "".join(marked.split()).replace(_MARK, " ").replace(_PAIR, "\\\\")
