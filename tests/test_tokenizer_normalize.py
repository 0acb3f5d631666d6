"""Normalization (docs/sat.md §5): canonical, idempotent, a no-op on MathWriting-style normalized labels."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import LatexError, clean_crohme_truth, label_verdict, normalize

# (label, MathWriting's normalizedLabel) pairs in the style of the published dataset
MATHWRITING_STYLE = [
    ("g(x) = G'(x) = 0", "g(x)=G^{\\prime}(x)=0"),
    (r"\tilde{\varphi}:\mathbb{S}^\lambda E \to M", r"\tilde{\varphi}:\mathbb{S}^{\lambda}E\rightarrow M"),
    (r"\frac{1}{16}\left[\begin{array}{ccccc}-&\# &7 \\ 3 &5 &1 \end{array}\right]",
     r"\frac{1}{16}[\begin{matrix}-&\#&7\\ 3&5&1\end{matrix}]"),
    (r"\tilde E = E \times \mathbb{Z}_{n}", r"\tilde{E}=E\times\mathbb{Z}_{n}"),
    (r"\int x^{s}\phi(x)dx", r"\int x^{s}\phi(x)dx"),
]


@pytest.mark.parametrize("label,normalized", MATHWRITING_STYLE)
def test_matches_mathwriting_normalized_labels(label, normalized):
    assert normalize(label) == normalized
    assert normalize(normalized) == normalized


RULES = {
    "x^2_i": "x_{i}^{2}",
    r"\frac12": r"\frac{1}{2}",
    r"\dfrac{a}{b}": r"\frac{a}{b}",
    r"{a \over b}": r"\frac{a}{b}",
    "{{a}}": "a",
    "{a+b}": "a+b",
    "{}^{14}C": "{}^{14}C",
    "{a^{b}}^{c}": "{a^{b}}^{c}",
    "x^{}+1": "x+1",
    r"\left( \frac12 \right)": r"(\frac{1}{2})",
    r"\left\{ x \middle| y \right.": r"\{x|y",
    r"\operatorname{sin}x": r"\sin x",
    r"\operatorname*{lim}_{x}": r"\lim_{x}",
    r"\operatorname{foo}x": r"\operatorname{foo}x",
    r"\sum\limits_{i=1}^{n}": r"\sum_{i=1}^{n}",
    r"\mbox { z }": r"\text{z}",
    r"a\,b\;c\quad d": "abcd",
    "x''": r"x^{\prime\prime}",
    "x_{1}'": r"x_{1}^{\prime}",
    r"\sqrt[3]x": r"\sqrt[3]{x}",
    r"x \le y \to z \ne w": r"x\leq y\rightarrow z\neq w",
    r"a \lt b \gt c": "a<b>c",
    "α−β×γ≤δ": r"\alpha-\beta\times\gamma\leq\delta",
    r"\begin{pmatrix*}[r]a\\b\\\end{pmatrix*}": r"\begin{pmatrix}a\\ b\end{pmatrix}",
    r"\displaystyle\int_0^1 f": r"\int_{0}^{1}f",
    r"\color{red}x\textcolor{blue}{y}": "xy",
    r"\hspace{1em}x\phantom{yy}": "x",
    r"\Big( x \Big)": "(x)",
    "x^{2}^{3}": "x^{2}^{3}",  # invalid: only token-level rules apply
}


@pytest.mark.parametrize("latex,expected", RULES.items(), ids=list(RULES))
def test_rules(latex, expected):
    assert normalize(latex) == expected
    assert normalize(expected) == expected


def test_normalized_valid_labels_stay_valid():
    for latex in RULES:
        if label_verdict(latex) is None:
            assert label_verdict(normalize(latex)) is None, latex


def test_only_lexer_errors_escape():
    with pytest.raises(LatexError):
        normalize("x\\")


PIECES = ["x", "y", "2", " ", "^", "_", "{", "}", "'", "\\frac", "\\dfrac", "\\sqrt", "[", "]", "\\left(",
          "\\right)", "\\left.", "\\alpha", "\\le", "\\,", "\\quad", "\\text", "\\mbox", "\\over", "\\operatorname",
          "{sin}", "\\begin{array}", "{cc}", "\\end{array}", "&", "\\\\", "\\limits", "\\sum", "α", "−", "′",
          "\u0301", "\\displaystyle", "\\color", "{red}", "\\hat", "$", "\\Big", "\\middle|"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_idempotent(latex):
    try:
        once = normalize(latex)
    except LatexError:
        return
    assert normalize(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_idempotent_on_arbitrary_unicode(latex):
    try:
        once = normalize(latex)
    except LatexError:
        return
    assert normalize(once) == once


CROHME = {
    "$x^{2} + y^{2} \\lt 1$": "x^{2} + y^{2} < 1",
    " $ a \\gt b $ ": "a > b",
    "\\frac{a}{\\sin A} = \\frac{b}{c}$\n": "\\frac{a}{\\sin A} = \\frac{b}{c}",
    "$a\n  +\r\n b$": "a + b",
    "a &lt; b &amp; c &#62; d": "a < b & c > d",
    "\\ltN": "\\ltN",
    "$$x$$": "x",
    "$10 \\$$": "10 \\$",
    "a \\$": "a \\$",
    "": "",
}


@pytest.mark.parametrize("raw,clean", CROHME.items(), ids=list(CROHME))
def test_clean_crohme_truth(raw, clean):
    assert clean_crohme_truth(raw) == clean


@pytest.mark.parametrize("n", [150, 200, 201, 600, 3000])
def test_deep_argument_nesting_never_overflows_the_stack(n):
    """`\\sqrt\\sqrt...x` nests through arguments, not groups: validate refuses it past MAX_DEPTH with a
    LatexError, normalize keeps what it cannot rewrite as lexed (idempotent), neither recurses out."""
    from tokenizer import LatexError, tokenize, validate

    label = "\\sqrt" * n + "x"
    out = normalize(label)
    assert normalize(out) == out
    if n >= 600:
        with pytest.raises(LatexError):
            validate(tokenize(label))
