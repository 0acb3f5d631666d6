"""Lexing: MathWriting's token classes with its failures fixed (docs/sat.md §1, §3)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import LatexError, detokenize, tokenize
from tokenizer.lexer import _FAST_RE, _tokenize_with_modes, squeeze_whitespace

CASES = {
    r"\frac{a}{b}": [r"\frac", "{", "a", "}", "{", "b", "}"],
    r"\frac12": [r"\frac", "1", "2"],
    r"\sqrt[3]{x}": [r"\sqrt", "[", "3", "]", "{", "x", "}"],
    "x^2": ["x", "^", "2"],
    r"x^\alpha": ["x", "^", r"\alpha"],
    "f''": ["f", "'", "'"],
    r"\mathbb{R}^{n}": [r"\mathbb{R}", "^", "{", "n", "}"],
    r"\mathbb { R }": [r"\mathbb{R}"],
    r"\mathbb{RS}": [r"\mathbb", "{", "R", "S", "}"],
    r"\operatorname*{lim}": [r"\operatorname*", "{", "l", "i", "m", "}"],
    r"\operatorname *{lim}": [r"\operatorname*", "{", "l", "i", "m", "}"],
    r"\operatorname{sin}x": [r"\operatorname", "{", "s", "i", "n", "}", "x"],
    r"\sin x": [r"\sin", "x"],
    r"\begin{pmatrix*}[r]a\end{pmatrix*}": [r"\begin{pmatrix*}", "[", "r", "]", "a", r"\end{pmatrix*}"],
    r"\begin{Bmatrix}x\end{Bmatrix}": [r"\begin{Bmatrix}", "x", r"\end{Bmatrix}"],
    r"\begin {matrix} 1 & 0 \\ 0 & 1 \end {matrix}": [r"\begin{matrix}", "1", "&", "0", "\\\\", "0", "&", "1",
                                                        r"\end{matrix}"],
    r"\text{if }x": [r"\text", "{", "i", "f", " ", "}", "x"],
    r"\text{a  b}": [r"\text", "{", "a", " ", "b", "}"],
    r"\mbox{\LaTeX x}": [r"\mbox", "{", r"\LaTeX", "x", "}"],
    r"\text{for $a < b$ ok}": [r"\text", "{", "f", "o", "r", " ", "$", "a", "<", "b", "$", " ", "o", "k", "}"],
    r"\text{x} y z": [r"\text", "{", "x", "}", "y", "z"],
    r"a\,b\;c\!d\quad e~f": ["a", r"\,", "b", r"\;", "c", r"\!", "d", r"\quad", "e", "~", "f"],
    r"\{x\}_{i}": [r"\{", "x", r"\}", "_", "{", "i", "}"],
    r"x\_y\^z": ["x", r"\_", "y", r"\^", "z"],
    r"\%": [r"\%"],
    r"\alpha x": [r"\alpha", "x"],
    r"\alphax": [r"\alphax"],
    r"\not=": [r"\not", "="],
    "α−′×≤中": ["α", "−", "′", "×", "≤", "中"],
    r"a\ b": ["a", "\\ ", "b"],
    "a\\\nb": ["a", "\\ ", "b"],
    r"\\[2pt]": ["\\\\", "[", "2", "p", "t", "]"],
    "": [],
    "  \t ": [],
}


@pytest.mark.parametrize("latex,expected", CASES.items(), ids=list(CASES))
def test_tokenize_cases(latex, expected):
    assert tokenize(latex) == expected
    assert tokenize(detokenize(expected)) == expected


def test_space_tokenized_equals_compact():
    assert tokenize(r"\frac { 1 4 } { x }") == tokenize(r"\frac{14}{x}")
    assert tokenize(r"x _ { i } ^ { 2 }") == tokenize(r"x_{i}^{2}")
    assert tokenize(r"\begin {matrix} a \end {matrix}") == tokenize(r"\begin{matrix}a\end{matrix}")


@pytest.mark.parametrize("latex", ["\\", "x\\", "x^{2}\\", "\\text{a \\"])
def test_lone_trailing_backslash_is_an_error(latex):
    with pytest.raises(LatexError) as exc:
        tokenize(latex)
    assert exc.value.kind == "trailing-backslash"
    assert exc.value.position == len(tokenize(latex[:-1]))
    assert "token" in str(exc.value) and "\\" in str(exc.value)


def test_escaped_backslash_at_end_is_fine():
    assert tokenize("a\\\\") == ["a", "\\\\"]


def test_detokenize_spacing():
    assert detokenize([r"\prime", "a"]) == r"\prime a"
    assert detokenize([r"\alpha", r"\beta"]) == r"\alpha\beta"
    assert detokenize([r"\alpha", "1"]) == r"\alpha1"
    assert detokenize(["\\\\", "3"], space_after_row_break=True) == "\\\\ 3"
    assert detokenize(["\\\\", "3"]) == "\\\\3"


def test_not_a_string_is_a_latex_error():
    with pytest.raises(LatexError):
        tokenize(None)  # type: ignore[arg-type]


# -- properties ---------------------------------------------------------------------------------------
PIECES = ["a", "b", "x", "1", "2", " ", "  ", "\t", "\n", "^", "_", "{", "}", "[", "]", "(", ")", "&", "'", "~",
          "$", "+", "=", "\\", "\\\\", "\\frac", "\\alpha", "\\text", "\\mbox", "\\textbf", "\\mathbb", "\\begin",
          "\\end", "{matrix}", "\\operatorname", "*", "\\,", "\\ ", "\\{", "é", "中", "−", "\u0301", "\xa0"]
latexish = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def _lexes(s: str):
    try:
        return tokenize(s)
    except LatexError:
        return None


@settings(max_examples=400, deadline=None)
@given(latexish)
def test_round_trip_on_latexish_strings(s):
    toks = _lexes(s)
    if toks is None:
        return
    assert tokenize(detokenize(toks)) == toks


@settings(max_examples=400, deadline=None)
@given(latexish)
def test_string_round_trip_up_to_whitespace(s):
    toks = _lexes(s)
    if toks is None:
        return
    assert squeeze_whitespace(detokenize(toks)) == squeeze_whitespace(s)


@settings(max_examples=300, deadline=None)
@given(latexish)
def test_fast_path_agrees_with_general_scan(s):
    """The single-findall fast path and the moded scan give the same tokens whenever both apply."""
    try:
        slow = _tokenize_with_modes(s)
    except LatexError as err:
        with pytest.raises(LatexError) as exc:
            tokenize(s)
        assert exc.value.kind == err.kind
        return
    assert tokenize(s) == slow
    if not any(c in s for c in ("\\text", "\\mbox", "\\hbox", "\\emph", "\\fbox", "\\framebox", "\\makebox")):
        if not any(p in s for p in ("\\ ", "\\\t", "\\\n", "\\\xa0", "\\begin", "\\end", "\\mathbb",
                                    "\\operatorname")):
            assert _FAST_RE.findall(s) == slow


ATOMS = ["a", "x", "1", "+", "(", ")", "[", "]", "^", "_", "{", "}", "&", "'", "\\\\", "\\alpha", "\\frac",
         "\\sqrt", "\\{", "\\}", "\\,", "\\ ", "\\mathbb{R}", "\\begin{matrix}", "\\end{matrix}", "\\operatorname*",
         "\\left", "\\right", ".", "é", "中", "$", "\\text", "\\sin", "b"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), max_size=40))
def test_detokenize_round_trips_arbitrary_token_lists(tokens):
    """Every list of lexer tokens re-lexes to itself (math-mode tokens: spaces only exist in text)."""
    assert tokenize(detokenize(tokens)) == tokens


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_lexer_is_total_on_arbitrary_unicode(s):
    try:
        toks = tokenize(s)
    except LatexError as err:
        assert err.kind == "trailing-backslash"
        return
    assert all(isinstance(t, str) and t for t in toks)
    assert tokenize(detokenize(toks)) == toks


@settings(max_examples=2000)
@given(st.one_of(latexish, st.text()))
def test_fast_scan_equals_the_whitespace_consuming_form(s):
    """The fast scan leaves whitespace to findall's search; the form that consumes it before each token
    (`\\s*(token)`) is the reference: same tokens on any string."""
    import re

    from tokenizer.lexer import _TOKEN

    assert _FAST_RE.findall(s) == re.compile(r"\s*(" + _TOKEN + ")", re.S).findall(s)
