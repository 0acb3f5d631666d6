"""Position-forest labels from the validated parse (docs/sat.md §7): aligned with SAT, never hanging."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import LatexError, encode, position_forest, tokenize

CASES = {
    "x ^ 2": ["M", "ML"],
    "x_{i}^{2}": ["M", "MR", "ML"],
    "a^{b^{c}}": ["M", "ML", "MLL"],
    "a^{b_{c}}": ["M", "ML", "MLR"],
    r"\frac{a}{b}": ["M", "ML", "MR"],
    r"\frac12+x": ["M", "ML", "MR", "M", "M"],
    r"\sqrt[3]{x}": ["M", "ML", "ML", "ML", "MR"],
    r"\frac{x^{2}}{y}": ["M", "ML", "MLL", "MR"],
    "{}^{14}C": ["ML", "ML", "M"],
    "_{2}^{4}He": ["MR", "ML", "M", "M"],
    r"\sum\limits_{i=1}^{n}": ["M", "M", "MR", "MR", "MR", "ML"],
    r"\overset{def}{=}": ["M", "ML", "ML", "ML", "M"],
    r"\underset{x}{y}": ["M", "MR", "M"],
    r"\xrightarrow[a]{b}": ["M", "MR", "MR", "MR", "ML"],
    r"\left( x^{2} \right)": ["M", "M", "M", "ML", "M", "M"],
    r"\begin{matrix}a&b\end{matrix}": ["M", "M", "M", "M", "M"],
    r"\hat{x}^{2}": ["M", "M", "ML"],
}


@pytest.mark.parametrize("latex,paths", CASES.items(), ids=list(CASES))
def test_paths(latex, paths):
    assert position_forest(latex) == paths
    assert len(paths) == len(encode(tokenize(latex)))
    assert position_forest(tokenize(latex)) == paths


def test_unbraced_scripts_do_not_hang():
    # PosFormer's label maker loops forever on this; ours is a walk over the parse
    assert position_forest("x ^ 2 + y _ 1 ^ 3") == ["M", "ML", "M", "M", "MR", "ML"]


@pytest.mark.parametrize("latex,kind", [("x^{2}^{3}", "double-script"), ("{}", "no-visible-symbol"),
                                        ("x\\", "trailing-backslash"), ("}", "unbalanced-brace")])
def test_invalid_labels_raise_latex_error(latex, kind):
    with pytest.raises(LatexError) as exc:
        position_forest(latex)
    assert exc.value.kind == kind


PIECES = ["x", "2", "+", "^", "_", "{", "}", "\\frac", "\\sqrt", "[", "]", "\\left(", "\\right)", "\\alpha",
          "\\begin{matrix}", "\\end{matrix}", "&", "\\\\", "\\limits", "\\overset", "\\text", " "]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_aligned_with_encode_whenever_valid(latex):
    try:
        paths = position_forest(latex)
    except LatexError:
        return
    assert len(paths) == len(encode(tokenize(latex)))
    assert all(p and p[0] == "M" and set(p) <= set("MLR") for p in paths)
