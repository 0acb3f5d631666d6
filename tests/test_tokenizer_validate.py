"""Validation (docs/sat.md §4): errors name the token position and what was expected."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import LatexError, label_verdict, tokenize, validate
from tokenizer.grammar import quick_accept

VALID = [
    r"\frac{a}{b}", r"\frac12", r"\frac 1 2", r"\sqrt[3]{x}", r"\sqrt x", "x^2", "x^{2}", r"x^\alpha", "x_{i}^{2}",
    "x^{2}_{i}", "a^{b^{c}}", "{a^{b}}^{c}", "f'(x)", "f''", r"f^{\prime}", "x^{}", "x^{}+1", "{}^{14}C",
    "_{2}^{4}He", r"\frac{}{}", r"\frac{a}{}b", "{a+b}", "{{a}}", r"\left( \frac12 \right)", r"\left. x \right.",
    r"\left\{ x \middle| y \right\}", r"\begin{matrix}1&0\\0&1\end{matrix}", r"\begin{matrix}1&&0\end{matrix}",
    r"\begin{array}{cc}a&b\end{array}", r"\sum\limits_{i=1}^{n}", r"\lim_{x\to0}", r"\mathbb{R}^{n}",
    r"\operatorname{sin}x", r"\operatorname*{lim}_{x}", r"\text{if }x", r"a\,b\;\!\quad~", r"\{x\}_{i}", r"x\_y",
    r"\%", r"\alpha x", r"\not=", r"\overline{ab}", r"\hat x", r"\vec v", r"\overset{def}{=}",
    r"\xrightarrow[a]{b}", r"\xrightarrow{b}", r"\underbrace{x}_{n}", "α−′×≤中",
    r"\begin{matrix}a\\[2pt]b\end{matrix}", r"\begin{pmatrix*}[r]a\end{pmatrix*}", r"\binom{n}{k}",
    r"\stackrel{?}{=}", r"\boxed{x}", r"\hspace*{1em}x", r"x^\frac12", r"\begin{cases}a&b\\c&d\end{cases}",
    r"a\\[b]", r"x'^2", r"{a \over b}", "x ^ 2", r"\left(\begin{matrix}a\end{matrix}\right)",
]


@pytest.mark.parametrize("latex", VALID)
def test_valid(latex):
    validate(tokenize(latex))
    assert label_verdict(latex) is None


INVALID = [
    # latex, kind, position
    ("x^{2}^{3}", "double-script", 5),
    ("x_1_2", "double-script", 3),
    ("x^a_b^c", "double-script", 5),
    ("}x", "unbalanced-brace", 0),
    ("x{", "unbalanced-brace", 1),
    ("{x", "unbalanced-brace", 0),
    ("a}b{", "unbalanced-brace", 1),
    (r"\frac{a}", "missing-argument", 0),
    (r"\frac", "missing-argument", 0),
    (r"\frac{a}^2", "missing-argument", 0),
    ("x^", "missing-argument", 1),
    ("x_}", "missing-argument", 1),
    ("{x^}", "missing-argument", 2),
    (r"\sqrt", "missing-argument", 0),
    (r"\sqrt[3", "unbalanced-bracket", 1),
    (r"\sqrt[3]", "missing-argument", 0),
    (r"\left( x", "unpaired-left", 0),
    (r"x \right)", "unpaired-right", 1),
    (r"{\left( x} \right)", "unpaired-left", 1),
    (r"\left", "missing-argument", 0),
    (r"\left( x \right", "missing-argument", 3),
    (r"\begin{matrix} a", "unpaired-begin", 0),
    (r"a \end{matrix}", "unknown-environment-end", 1),
    (r"\begin{matrix} a \end{pmatrix}", "mismatched-environment", 2),
    (r"{\begin{matrix} a } \end{matrix}", "unpaired-begin", 1),
    (r"\begin{array}\end{array}", "missing-argument", 0),
    (r"\text", "missing-argument", 0),
    (r"x^\left( a \right)", "missing-argument", 1),
]


@pytest.mark.parametrize("latex,kind,position", INVALID, ids=[c[0] for c in INVALID])
def test_invalid(latex, kind, position):
    toks = tokenize(latex)
    with pytest.raises(LatexError) as exc:
        validate(toks)
    err = exc.value
    assert (err.kind, err.position) == (kind, position)
    message = str(err)
    assert f"token {position}" in message
    assert "\n" not in message
    assert "expect" in message or "no matching" in message or "second" in message or "closes" in message
    assert label_verdict(latex) == f"{kind}: {message}"


def test_error_messages_say_what_was_expected():
    with pytest.raises(LatexError, match=r"token 0: '\\\\frac' expects an argument .* found the end"):
        validate(tokenize(r"\frac{a}"))
    with pytest.raises(LatexError, match=r"expected '}' before the end of the input"):
        validate(tokenize("x{"))
    with pytest.raises(LatexError, match=r"expected '\\\\end\{matrix\}'"):
        validate(tokenize(r"\begin{matrix}a"))


def test_verdicts_for_unusable_labels():
    assert label_verdict("").startswith("no-visible-symbol: ")
    assert label_verdict("{}").startswith("no-visible-symbol: ")
    assert label_verdict("x\\").startswith("trailing-backslash: ")


def test_deep_nesting_is_an_error_not_a_crash():
    deep = "{" * 5000 + "x" + "}" * 5000
    with pytest.raises(LatexError) as exc:
        validate(tokenize(deep))
    assert exc.value.kind == "too-deep"
    assert label_verdict("x^" * 3000 + "y").startswith(("too-deep", "double-script"))
    validate(tokenize("{" * 150 + "x" + "}" * 150))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["x", "^", "_", "{", "}", "[", "]", "\\frac", "\\sqrt", "\\left", "\\right", "(",
                                 "\\begin{matrix}", "\\end{matrix}", "&", "\\\\", "\\limits", "'", "\\text"]),
                max_size=30))
def test_validate_only_raises_latex_errors(tokens):
    try:
        validate(tokens)
    except LatexError as err:
        assert err.kind and (err.position is None or 0 <= err.position <= len(tokens))
        assert f"token {err.position}" in str(err) or err.position is None


def test_pylatexenc_agrees_on_brace_balance():
    """Cross-check with pylatexenc in strict mode: it also rejects what we call unbalanced braces."""
    from pylatexenc.latexwalker import LatexWalker, LatexWalkerParseError

    def strict_ok(s: str) -> bool:
        try:
            LatexWalker(s, tolerant_parsing=False).get_latex_nodes()
            return True
        except LatexWalkerParseError:
            return False

    for s in ["}x", "x{", "{x", "a}b{"]:
        assert not strict_ok(s)
    for s in [r"\frac{a}{b}", "{a+b}", "{{a}}", "x^{2}_{i}"]:
        assert strict_ok(s)


QUICK_TOKENS = ["x", "2", "'", "^", "_", "{", "}", "{", "}", "[", "]", "\\frac", "\\sqrt", "\\hat", "\\left",
                "\\right", "\\middle", "(", "|", "&", "\\\\", "\\limits", "\\sum", "\\text", " ", "\\begin{matrix}",
                "\\end{matrix}", "\\hspace", "*", "\\xrightarrow", "\\rule", "\\mathbb{R}", "\\overset"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(QUICK_TOKENS), max_size=25))
def test_quick_accept_never_accepts_what_the_parser_rejects(tokens):
    if quick_accept(tokens):
        validate(tokens)


def test_quick_accept_takes_the_common_cases():
    for latex in VALID:
        parser_only = ("\\begin", "\\end", "\\hspace", "^\\frac", "\\\\[")  # left to the parser by design
        if not any(p in latex for p in parser_only):
            assert quick_accept(tokenize(latex)), latex
    for latex, _, _ in INVALID:
        assert not quick_accept(tokenize(latex))


CHUNKS = ["x", "^", "_", "{", "}", "^{", "_{", "\\left(", "\\right)", "\\middle|", "\\left.", "\\right.", "\\frac",
          "\\sqrt[", "]", "\\sqrt", "\\hat", "[", "&", "\\\\", "\\limits", "\\sum", "'", "{}", "\\text{a b}",
          "\\overset", "\\xrightarrow[", "\\begin{matrix}", "\\end{matrix}", "^\\left(", "_\\frac"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(CHUNKS), max_size=16).map("".join))
def test_quick_accept_is_sound_on_structured_strings(latex):
    tokens = tokenize(latex)
    if quick_accept(tokens):
        validate(tokens)


# The reduction's patterns as first written, one atom per step: the reference the faster form (a run
# of atoms in one possessive step) must agree with exactly, on every class string.
_REF_A = r"[ag]"
_REF_SC = rf"(?:\^{_REF_A}(?:_{_REF_A})?|_{_REF_A}(?:\^{_REF_A})?)"
_REF_DELIM = r"[a\[\]]"
_REF_BASE_IN_OPT = rf"(?:[agr\[]|1{_REF_A}|2{_REF_A}{_REF_A}|o{_REF_A}|M{_REF_DELIM})"
_REF_SEQ_IN_OPT = rf"{_REF_SC}?(?:{_REF_BASE_IN_OPT}l?{_REF_SC}?|l(?![\^_])|s(?!\[){_REF_SC}?)*"
_REF_BASE = rf"(?:[agr\[\]]|1{_REF_A}|2{_REF_A}{_REF_A}|o(?:\[{_REF_SEQ_IN_OPT}\])?{_REF_A}|M{_REF_DELIM})"
_REF_SEQ = rf"{_REF_SC}?(?:{_REF_BASE}l?{_REF_SC}?|l(?![\^_])|s(?!\[){_REF_SC}?)*"
_REF_PATTERNS = {"_GROUP_RE": r"\{" + _REF_SEQ + r"\}", "_LEFT_RIGHT_RE": rf"L{_REF_DELIM}{_REF_SEQ}R{_REF_DELIM}",
                 "_TOP_RE": _REF_SEQ}


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="{}^_[]LRM12oXlsagr\n", max_size=40))
def test_reduction_patterns_match_their_one_atom_per_step_reference(classes):
    import re

    from tokenizer import grammar

    for name, pattern in _REF_PATTERNS.items():
        ref, fast = re.compile(pattern), getattr(grammar, name)
        assert fast.sub("·", classes) == ref.sub("·", classes), name
        assert (fast.fullmatch(classes) is None) == (ref.fullmatch(classes) is None), name


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["a", "aa", "aaa", "g", "^a", "_g", "{", "}", "[", "]", "1", "2", "o", "l",
                                 "s", "M", "L", "R", "r"]), max_size=30).map("".join))
def test_reduction_patterns_match_the_reference_on_runs_of_atoms(classes):
    import re

    from tokenizer import grammar

    for name, pattern in _REF_PATTERNS.items():
        ref, fast = re.compile(pattern), getattr(grammar, name)
        assert fast.sub("·", classes) == ref.sub("·", classes), name
        assert (fast.fullmatch(classes) is None) == (ref.fullmatch(classes) is None), name


def _reduce_by_regex_only(c: str) -> str:
    """reduce_groups without its plain-replace first step: the reference for it."""
    from tokenizer import grammar

    for _ in range(grammar._MAX_PASSES):
        reduced = grammar._GROUP_RE.sub("g", c)
        if "L" in reduced:
            reduced = grammar._LEFT_RIGHT_RE.sub("r", reduced)
        if "E" in reduced:
            reduced = grammar._ENV_GROUP_RE.sub("r", reduced)
        if reduced == c:
            return c
        c = reduced
    return c


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["a", "g", "{a}", "{aa}", "{aaa}", "{", "}", "^", "_", "1", "2", "o", "[", "]",
                                 "L", "R", "M", "l", "s", "X", "\n"]), max_size=30).map("".join))
def test_reducing_common_groups_first_changes_nothing(classes):
    from tokenizer.grammar import reduce_groups

    assert reduce_groups(classes) == _reduce_by_regex_only(classes)


def _nested_classes():
    """Class strings of nested groups, scripts, \\left..\\right and environments: what takes many passes."""
    atom = st.sampled_from(["a", "aa", "g", "1a", "2aa"])
    return st.recursive(atom, lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        inner.map(lambda s: "{" + s + "}"),
        inner.map(lambda s: "a^{" + s + "}"),
        inner.map(lambda s: "La" + s + "Ra"),
        inner.map(lambda s: "B" + s + "E"),
        inner.map(lambda s: "b{a}" + s + "E"),
    ), max_leaves=30)


@settings(max_examples=1000, deadline=None)
@given(_nested_classes())
def test_reduce_groups_reduces_every_level_of_nesting(classes):
    """Valid nesting of any depth reduces to a top-level sequence (no group, no \\left, no environment
    left), and as the regex-only reference reduces it."""
    from tokenizer.grammar import _TOP_RE, reduce_groups

    reduced = reduce_groups(classes)
    assert _TOP_RE.fullmatch(reduced), (classes, reduced)
    assert reduced == _reduce_by_regex_only(classes)


def test_reduce_groups_deep_nesting():
    from tokenizer.grammar import reduce_groups

    assert reduce_groups("{" * 30 + "a" + "}" * 30) == "g"
    assert reduce_groups("B" * 10 + "a" + "E" * 10) == "r"
