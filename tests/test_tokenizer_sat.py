"""SAT-L: every docs/sat.md §3 case with its expected positions, and the round-trip properties of §2."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from tokenizer import LatexError, Position, decode, encode, is_canonical, tokenize, validate
from tokenizer.lexer import MODIFIERS
from tokenizer.sat import extended_masks


def P(pre: str, sym: str, post: str = "") -> Position:
    """Paper modifiers are single characters, so "^{" spells the pre ("^", "{")."""
    return Position(tuple(pre), sym, tuple(post))


CASES = {
    r"\frac{a}{b}": [P("", r"\frac"), P("{", "a", "}"), P("{", "b", "}")],
    r"\frac12": [P("", r"\frac"), P("", "1"), P("", "2")],
    r"\sqrt[3]{x}": [P("", r"\sqrt"), P("", "["), P("", "3"), P("", "]"), P("{", "x", "}")],
    "x^2": [P("", "x"), P("^", "2")],
    "x^{2}": [P("", "x"), P("^{", "2", "}")],
    r"x^\alpha": [P("", "x"), P("^", r"\alpha")],
    "x_{i}^{2}": [P("", "x"), P("_{", "i", "}"), P("^{", "2", "}")],
    "x^{2}_{i}": [P("", "x"), P("^{", "2", "}"), P("_{", "i", "}")],
    "a^{b^{c}}": [P("", "a"), P("^{", "b"), P("^{", "c", "}}")],
    "{a^{b}}^{c}": [P("{", "a"), P("^{", "b", "}}"), P("^{", "c", "}")],
    "f'(x)": [P("", "f"), P("", "'"), P("", "("), P("", "x"), P("", ")")],
    "f''": [P("", "f"), P("", "'"), P("", "'")],
    r"f^{\prime}": [P("", "f"), P("^{", r"\prime", "}")],
    "x^{}": [P("", "x", "^{}")],
    "x^{}+1": [P("", "x"), P("^{}", "+"), P("", "1")],
    "{}^{14}C": [P("{}^{", "1"), P("", "4", "}"), P("", "C")],
    "_{2}^{4}He": [P("_{", "2", "}"), P("^{", "4", "}"), P("", "H"), P("", "e")],
    r"\frac{}{}": [P("", r"\frac", "{}{}")],
    r"\frac{a}{}b": [P("", r"\frac"), P("{", "a", "}"), P("{}", "b")],
    "{a+b}": [P("{", "a"), P("", "+"), P("", "b", "}")],
    "{{a}}": [P("{{", "a", "}}")],
    r"\left( \frac12 \right)": [P("", r"\left"), P("", "("), P("", r"\frac"), P("", "1"), P("", "2"),
                                P("", r"\right"), P("", ")")],
    r"\left. x \right.": [P("", r"\left"), P("", "."), P("", "x"), P("", r"\right"), P("", ".")],
    r"\begin{matrix}1&0\\0&1\end{matrix}": [P("", r"\begin{matrix}"), P("", "1"), P("", "&"), P("", "0"),
                                             P("", "\\\\"), P("", "0"), P("", "&"), P("", "1"),
                                             P("", r"\end{matrix}")],
    r"\begin{matrix}1&&0\end{matrix}": [P("", r"\begin{matrix}"), P("", "1"), P("", "&"), P("", "&"), P("", "0"),
                                         P("", r"\end{matrix}")],
    r"\begin{array}{cc}a\end{array}": [P("", r"\begin{array}"), P("{", "c"), P("", "c", "}"), P("", "a"),
                                        P("", r"\end{array}")],
    r"\sum\limits_{i=1}^{n}": [P("", r"\sum"), P("", r"\limits"), P("_{", "i"), P("", "="), P("", "1", "}"),
                               P("^{", "n", "}")],
    r"\lim_{x\to0}": [P("", r"\lim"), P("_{", "x"), P("", r"\to"), P("", "0", "}")],
    r"\mathbb{R}^{n}": [P("", r"\mathbb{R}"), P("^{", "n", "}")],
    r"\operatorname{sin}x": [P("", r"\operatorname"), P("{", "s"), P("", "i"), P("", "n", "}"), P("", "x")],
    r"\sin x": [P("", r"\sin"), P("", "x")],
    r"\operatorname*{lim}": [P("", r"\operatorname*"), P("{", "l"), P("", "i"), P("", "m", "}")],
    r"\text{if }x": [P("", r"\text"), P("{", "i"), P("", "f"), P("", " ", "}"), P("", "x")],
    r"a\,b\;\!\quad~": [P("", "a"), P("", r"\,"), P("", "b"), P("", r"\;"), P("", r"\!"), P("", r"\quad"),
                        P("", "~")],
    r"\{x\}_{i}": [P("", r"\{"), P("", "x"), P("", r"\}"), P("_{", "i", "}")],
    r"x\_y": [P("", "x"), P("", r"\_"), P("", "y")],
    r"\%": [P("", r"\%")],
    r"\alpha x": [P("", r"\alpha"), P("", "x")],
    r"\alphax": [P("", r"\alphax")],
    "x^{2}^{3}": [P("", "x"), P("^{", "2", "}"), P("^{", "3", "}")],
    r"\not=": [P("", r"\not"), P("", "=")],
    r"\overline{ab}": [P("", r"\overline"), P("{", "a"), P("", "b", "}")],
    r"\hat x": [P("", r"\hat"), P("", "x")],
    r"\vec v": [P("", r"\vec"), P("", "v")],
    r"\overset{def}{=}": [P("", r"\overset"), P("{", "d"), P("", "e"), P("", "f", "}"), P("{", "=", "}")],
    r"\xrightarrow[a]{b}": [P("", r"\xrightarrow"), P("", "["), P("", "a"), P("", "]"), P("{", "b", "}")],
    r"\underbrace{x}_{n}": [P("", r"\underbrace"), P("{", "x", "}"), P("_{", "n", "}")],
    "α−′×≤中": [P("", "α"), P("", "−"), P("", "′"), P("", "×"), P("", "≤"), P("", "中")],
    r"\begin{matrix}a\\[2pt]b\end{matrix}": [P("", r"\begin{matrix}"), P("", "a"), P("", "\\\\"), P("", "["),
                                              P("", "2"), P("", "p"), P("", "t"), P("", "]"), P("", "b"),
                                              P("", r"\end{matrix}")],
    "}x": [P("}", "x")],
    "x{": [P("", "x", "{")],
    "x ^ 2": [P("", "x"), P("^", "2")],
}


@pytest.mark.parametrize("latex,expected", CASES.items(), ids=list(CASES))
def test_positions(latex, expected):
    toks = tokenize(latex)
    assert encode(toks) == expected
    assert decode(expected) == toks
    assert is_canonical(expected)


@pytest.mark.parametrize("latex", ["", "   ", "{}", "{{}}", "^{}", "_{}^{}"])
def test_no_visible_symbol_is_rejected(latex):
    with pytest.raises(LatexError) as exc:
        encode(tokenize(latex))
    assert exc.value.kind == "no-visible-symbol"


def test_paper_rule_cases_the_paper_gets_wrong():
    # the paper's rule would decode x^{}+1 to x}^{+1 and \frac{a}{}b to \frac{a}}{b; SAT-L is exact
    for latex in ["x^{}+1", r"\frac{a}{}b", "{}^{14}C", "x^{}", r"\frac{}{}"]:
        assert decode(encode(tokenize(latex))) == tokenize(latex)


# -- extended modifier set ---------------------------------------------------------------------------
EXTENDED = {
    r"\sqrt[3]{x}": [Position((), r"\sqrt", ()), Position(("[",), "3", ("]",)), Position(("{",), "x", ("}",))],
    r"\left( x \right)": [Position((r"\left",), "(", ()), Position((), "x", ()), Position((r"\right",), ")", ())],
    r"\sum\limits_{i}^{n}": [Position((), r"\sum", (r"\limits",)), Position(("_", "{"), "i", ("}",)),
                             Position(("^", "{"), "n", ("}",))],
    r"[x]\sqrt[n]{[y]}": [Position((), "[", ()), Position((), "x", ()), Position((), "]", ()),
                          Position((), r"\sqrt", ()), Position(("[",), "n", ("]",)), Position(("{",), "[", ()),
                          Position((), "y", ()), Position((), "]", ("}",))],
    r"\sqrt[3": [Position((), r"\sqrt", ()), Position((), "[", ()), Position((), "3", ())],
}


@pytest.mark.parametrize("latex,expected", EXTENDED.items(), ids=list(EXTENDED))
def test_extended_positions(latex, expected):
    toks = tokenize(latex)
    assert encode(toks, extended=True) == expected
    assert decode(expected) == toks


# -- properties ---------------------------------------------------------------------------------------
TOKENS = ["x", "y", "1", "+", "=", "(", ")", "[", "]", "\\frac", "\\sqrt", "\\alpha", "\\left", "\\right",
          "\\limits", "\\sum", "&", "\\\\", "'", "^", "_", "{", "}", "{", "}"]
token_lists = st.lists(st.sampled_from(TOKENS), max_size=40)


@settings(max_examples=500, deadline=None)
@given(token_lists, st.booleans())
def test_decode_encode_is_identity_on_arbitrary_token_lists(tokens, extended):
    is_mod = extended_masks(tokens)[0] if extended else [t in MODIFIERS for t in tokens]
    assume(not all(is_mod))
    positions = encode(tokens, extended=extended)
    assert decode(positions) == tokens
    assert len(positions) == is_mod.count(False)  # length == visible symbols


# well-formed labels: a tiny grammar
def _wellformed():
    atom = st.sampled_from(["x", "y", "2", "+", "\\alpha", "(", ")"])
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
            st.tuples(inner, st.sampled_from(["^", "_"]), inner).map(lambda p: f"{{{p[0]}}}{p[1]}{{{p[2]}}}"),
            st.tuples(inner, inner).map(lambda p: f"\\frac{{{p[0]}}}{{{p[1]}}}"),
            inner.map(lambda s: f"\\sqrt{{{s}}}"),
            st.tuples(inner, inner).map(lambda p: f"\\sqrt[{p[0]}]{{{p[1]}}}"),
            inner.map(lambda s: f"\\left({s}\\right)"),
            st.tuples(inner, inner, inner).map(lambda p: f"{{{p[0]}}}_{{{p[1]}}}^{{{p[2]}}}"),
        ),
        max_leaves=12,
    )


wellformed = _wellformed()


@settings(max_examples=300, deadline=None)
@given(wellformed, st.booleans())
def test_decode_encode_is_identity_on_wellformed_labels(latex, extended):
    toks = tokenize(latex)
    validate(toks)
    assert decode(encode(toks, extended=extended)) == toks


MODS = st.lists(st.sampled_from(["^", "_", "{", "}"]), max_size=4).map(tuple)
SYMS = st.sampled_from(["x", "1", "+", "\\alpha", "(", "'"])


@st.composite
def canonical_positions(draw):
    n = draw(st.integers(1, 8))
    out = []
    for i in range(n):
        pre = draw(MODS)
        while i > 0 and pre and pre[0] == "}":
            pre = pre[1:]
        post = draw(MODS) if i == n - 1 else tuple("}" * draw(st.integers(0, 3)))
        out.append(Position(pre, draw(SYMS), post))
    return out


@settings(max_examples=400, deadline=None)
@given(canonical_positions())
def test_encode_decode_is_identity_on_canonical_positions(positions):
    assert is_canonical(positions)
    assert encode(decode(positions)) == positions


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(MODS, SYMS, MODS).map(lambda t: Position(*t)), min_size=1, max_size=6))
def test_canonical_iff_encode_decode_is_identity(positions):
    assert is_canonical(positions) == (encode(decode(positions)) == positions)


@settings(max_examples=300, deadline=None)
@given(wellformed, st.sampled_from(["^", "_"]), st.sampled_from(["x", "2", "\\alpha", "("]),
       st.one_of(st.just(""), wellformed), st.data())
def test_locality_removing_a_one_symbol_script_changes_one_position(base, op, sym, tail, data):
    """Deleting `^{s}` / `_{s}` (one visible symbol s) deletes exactly one position. The others are untouched,
    except that closing braces which followed the script (it ended a group) join the left neighbour's post.
    Every label drawn has such a script (after a braced base), and any other one in it may be the one cut."""
    latex = f"{{{base}}}{op}{{{sym}}}{tail}"
    toks = tokenize(latex)
    spots = [i for i in range(1, len(toks) - 3)
             if toks[i] in ("^", "_") and toks[i + 1] == "{" and toks[i + 3] == "}" and toks[i + 2] not in MODIFIERS]
    assert spots
    i = data.draw(st.sampled_from(spots))
    cut = toks[:i] + toks[i + 4:]
    before, after = encode(toks), encode(cut)
    assert len(after) == len(before) - 1
    k = sum(t not in MODIFIERS for t in toks[:i])  # index of the removed symbol's position
    assert [p.sym for p in after] == [p.sym for p in before[:k] + before[k + 1:]]
    assert before[k + 1:] == after[k:]
    assert before[:k - 1] == after[:k - 1]
    left_before, left_after = before[k - 1], after[k - 1]
    assert left_after.pre == left_before.pre and left_after.sym == left_before.sym
    moved = before[k].post[1:]  # the closers after the script's own "}"
    assert left_after.post == left_before.post + moved
    if i + 4 < len(toks) and toks[i + 4] not in MODIFIERS:  # followed by a symbol: a pure one-position edit
        assert after == before[:k] + before[k + 1:]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["x", "|", "s", "^", "_", "{", "}", "}", "\\alpha"]), max_size=30))
def test_fast_split_equals_the_generic_rule(tokens):
    """The specialised loop for the paper's set and the mask-driven loop agree."""
    from tokenizer.sat import paper_masks, split_streams
    try:
        fast = split_streams(tokens)
    except LatexError as err:
        assert err.kind == "no-visible-symbol"
        assert all(t in MODIFIERS for t in tokens)
        return
    assert fast == split_streams(tokens, *paper_masks(tokens))
