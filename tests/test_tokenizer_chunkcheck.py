"""The chunk path of the corpus check (tokenizer/chunkcheck.py) gives the per-line check's answers."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenizer.check import BLOCK_LINES, CorpusCheck
from tokenizer.chunkcheck import _MODED_RE, check_chunk, position_key
from tokenizer.corpus import Line, read_corpus
from tokenizer.errors import LatexError
from tokenizer.lexer import squeeze_whitespace, tokenize
from tokenizer.sat import split_streams
from tokenizer.verdict import label_verdict

# pieces that exercise every branch: plain symbols, scripts, groups, arity commands, \left..\right,
# text mode, environments, control spaces, row breaks, trailing backslashes, markers, errors
PIECES = ["x", "y", "2", "+", "=", "(", ")", "[", "]", "|", "^", "_", "{", "}", "{", "}", " ", "  ", "\t",
          "\\alpha", "\\alpha ", "\\sin", "\\frac", "\\sqrt", "\\sqrt[3]", "\\left(", "\\right)", "\\left.",
          "\\middle|", "\\sum", "\\limits", "\\int", "\\mbox{ a b }", "\\text{ if }", "\\begin{matrix}",
          "\\end{matrix}", "\\begin {cases}", "&", "\\\\", "\\ ", "\\,", "\\{", "\\}", "\\", "\\mathbb{R}",
          "\\mathbb {R}", "\\operatorname*", "\\operatorname *", "\\overline", "\\hat", "$", "\x00", "\x01",
          "\x02", "\n", "é", "\\over", "\\prime", "'", "\\\\alpha", "a b", "\\begin{array}", "{cc}",
          "\\end{array}", "\\begin{pmatrix*}", "[r]", "\\end{pmatrix*}", "\\end{cases}", "\\end {matrix}"]
labels = st.lists(st.sampled_from(PIECES), min_size=0, max_size=14).map("".join)
WELL_FORMED = ["x^{2}", "\\frac{a}{b}", "\\sqrt[3]{x}", "x_{i}^{2}", "\\left(x\\right)", "{x}", "a}b", "x^",
               "\\sum_{i=1}^{n}x_{i}", "\\mbox{if }x", "\\begin{matrix}a&b\\end{matrix}", "{}", "x \\\\",
               "\\alpha x", "x^{\\prime}", "{{{{{{x}}}}}}", "\\hat{\\hat{\\hat{x}}}", "x \\ y", "a\x02b"]


def _report(checker: CorpusCheck) -> dict:
    r = checker.report(top=1000)
    r.pop("seconds")
    r.pop("lines_per_second")
    r["all_raw_lengths"] = sorted(checker.raw_lengths)
    r["all_sat_lengths"] = sorted(checker.sat_lengths)
    r["all_symbols"] = dict(+checker.symbols)
    r["all_modifiers"] = dict(+checker.modifiers)
    return r


def both_ways(lines: list[Line], chunk: int = 7, **kw) -> tuple[dict, dict]:
    one, many = CorpusCheck(**kw), CorpusCheck(**kw)
    for line in lines:
        one.add(line)
    for i in range(0, len(lines), chunk):
        many.add_many(lines[i:i + chunk])
    return _report(one), _report(many)


def as_lines(texts: list[str]) -> list[Line]:
    return [Line("t.txt", i + 1, None, t) for i, t in enumerate(texts)]


def test_well_formed_and_broken_examples_agree():
    lines = as_lines(WELL_FORMED * 3)
    a, b = both_ways(lines)
    assert a == b
    assert a["valid"] > 0 and a["invalid"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(labels, min_size=1, max_size=25), st.integers(1, 9))
def test_chunk_path_reports_what_the_per_line_path_reports(texts, chunk):
    a, b = both_ways(as_lines(texts), chunk=chunk)
    assert a == b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(labels, st.integers(1, 4)), min_size=1, max_size=12), st.randoms())
def test_repeated_labels_are_counted_as_often_as_they_occur(texts_and_repeats, rnd):
    texts = [t for t, k in texts_and_repeats for _ in range(k)]
    rnd.shuffle(texts)
    a, b = both_ways(as_lines(texts), chunk=len(texts))
    assert a == b


@settings(max_examples=100, deadline=None)
@given(st.lists(labels, min_size=1, max_size=12))
def test_crohme_cleaning_agrees(texts):
    a, b = both_ways(as_lines(["$" + t + "$" for t in texts]), chunk=5, crohme=True)
    assert a == b


@settings(max_examples=50, deadline=None)
@given(st.lists(labels, min_size=1, max_size=8))
def test_options_without_a_chunk_path_still_agree(texts):
    for kw in ({"extended": True}, {"do_normalize": True}):
        a, b = both_ways(as_lines(texts), chunk=3, **kw)
        assert a == b


def _plain(s: str) -> bool:
    return (bool(s.strip()) and s[-1] != "\\" and not any(m in s for m in "\x00\x01\x02")
            and _MODED_RE.search(s) is None)


@settings(max_examples=500, deadline=None)
@given(st.one_of(labels, st.text(max_size=30)))
def test_squeezing_never_changes_the_tokens_of_a_plain_line(s):
    """The lemma that lets the chunk path skip re-lexing: tokenize(squeeze(s)) == tokenize(s)."""
    if not _plain(s):
        return
    try:
        toks = tokenize(s)
    except LatexError:
        return
    assert tokenize(squeeze_whitespace(s)) == toks


def _spaced(latex: str) -> str:
    """The label space-tokenized, as most real corpora write it (unchanged when it does not lex)."""
    try:
        return " ".join(tokenize(latex))
    except LatexError:
        return latex


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(labels, labels.map(_spaced), st.text(max_size=20)), min_size=1, max_size=12),
       st.lists(st.one_of(labels, st.text(max_size=20)), max_size=8))
def test_splitting_a_plain_chunk_gives_the_scans_tokens(texts, others):
    """_lex_plain takes str.split's pieces when each is a token the lexer produced before. With every
    token of the chunk (and of other labels) already known, that is checked where it is easiest to be
    wrong: the pieces are then known tokens whenever they can be."""
    from tokenizer.chunkcheck import SEP, _classes, _lex_plain
    from tokenizer.lexer import _FAST_RE

    plain = [t for t in texts if _plain(t)]
    if not plain:
        return
    chunk = SEP.join(plain)
    scanned = _FAST_RE.findall(chunk)
    _classes(scanned + _FAST_RE.findall(SEP.join(t for t in others if _plain(t))))
    tokens, classes = _lex_plain(chunk)
    assert tokens == scanned
    assert classes == _classes(scanned)


@pytest.mark.parametrize("latex", ["x^{2}", "\\frac{a}{b}", "a_{i}^{2}+b", "\\sqrt{x}", "{x}^{2}", "x}", "}x",
                                   "x^{\\frac{1}{2}}", "a{b}c"])
def test_positions_are_sat_l_positions(latex):
    """The chunk's (pre, post) pairs are split_streams' pairs (checked where the reduction accepts)."""
    res = check_chunk(["y", latex, "z"])
    toks = tokenize(latex)
    pres, syms, posts = split_streams(toks)
    expected = Counter(zip(pres, posts)) + Counter({((), ()): 2})
    if label_verdict(latex) is not None:
        assert 1 in res.slow  # invalid: left to the per-line check, which names the error
        return
    assert res.fast == [0, 1, 2]
    got = Counter(position_key(p) for p in res.positions)
    assert +got == +expected
    assert Counter(res.symbols) == Counter(syms + ["y", "z"])


def test_lines_the_chunk_path_cannot_take_are_handed_back():
    """Lines it cannot lex in one scan (an odd trailing backslash, its markers) and every line with an
    error go back to the per-line check; text mode, environments and what only the parser accepts stay."""
    texts = ["x", "\\mbox{a b}", "\\begin{matrix}a\\end{matrix}", "x\\", "a\x00b", "x^{2", "{}",
             "x^\\frac12", "\\begin{matrix}a\\end{pmatrix}", "\\text{a}}", "\\begin {cases}a\\end{cases}"]
    res = check_chunk(texts)
    assert sorted(res.fast) == [0, 1, 2, 7, 10]
    assert res.slow == [3, 4, 5, 6, 8, 9]


ENV_TOKENS = ["x", "1", "&", "\\\\", "{", "}", "[", "]", "^", "_", "\\frac", "\\left", "\\right", "(", ")",
              "\\begin{matrix}", "\\end{matrix}", "\\begin{array}", "\\end{array}", "\\begin{pmatrix*}",
              "\\end{pmatrix*}", "\\begin{cases}", "\\end{cases}", "\\sqrt", "\\hspace"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ENV_TOKENS), max_size=24))
def test_the_reduction_never_accepts_an_environment_the_parser_rejects(tokens):
    """With environments classed (grammar.token_class), what the reduction accepts and whose names
    pair (env_names_nest) the parser accepts too."""
    import re

    from tokenizer.grammar import _TOP_RE, env_names_nest, reduce_groups, token_class, validate

    classes = "".join(map(token_class, tokens))
    names = [t for t in tokens if t.startswith(("\\begin{", "\\end{"))]
    if "X" not in classes and _TOP_RE.fullmatch(reduce_groups(classes)) and env_names_nest(names):
        validate(tokens)
    assert re.fullmatch("[{}^_\\[\\]LRM12oXlsaBbpE]*", classes)


def test_environments_are_settled_without_the_parser_when_their_names_pair():
    texts = ["\\begin{matrix}a&b\\\\c&d\\end{matrix}", "\\begin{array}{cc}a&b\\end{array}",
             "\\begin{pmatrix*}[r]a\\end{pmatrix*}", "\\left(\\begin{matrix}a\\end{matrix}\\right)^{2}",
             "\\begin{cases}a\\begin{matrix}b\\end{matrix}\\end{cases}",
             "\\begin{matrix}a\\end{pmatrix}", "\\begin{array}&a\\end{array}", "\\begin{matrix}a",
             "\\frac\\begin{matrix}a\\end{matrix}b", "\\begin{cases}a\\begin{matrix}b\\end{cases}\\end{matrix}"]
    res = check_chunk(texts)
    assert sorted(res.fast) == [0, 1, 2, 3, 4]
    assert res.slow == [5, 6, 7, 8, 9]


from conftest import DATA_ENV, SHARED_DATA  # noqa: E402

REAL = sorted((SHARED_DATA / "latex").glob("*"))


@pytest.mark.skipif(not REAL, reason=f"{SHARED_DATA}/latex is absent (real corpora are not shipped; set {DATA_ENV})")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_corpora_agree(path):
    with open(path, "rb") as f:
        lines = [r for r in read_corpus(f, str(path)) if isinstance(r, Line)]
    a, b = both_ways(lines, chunk=BLOCK_LINES)
    assert a == b


def test_the_parser_is_asked_only_what_the_reduction_cannot_settle(monkeypatch):
    """Valid labels of any nesting depth, environments included, are settled by the reduction alone
    (a reduction that stopped early would still give right answers, by asking the parser: slowly)."""
    from tokenizer import chunkcheck

    asked = []
    monkeypatch.setattr(chunkcheck, "validate", lambda tokens: asked.append(tokens))
    texts = ["{" * 20 + "x" + "}" * 20, "\\frac{\\frac{\\frac{a}{b}}{c}}{d}", "x^{y^{z^{w}}}",
             "\\left(\\left(\\left(x\\right)\\right)\\right)",
             "\\begin{matrix}\\begin{cases}a&b\\end{cases}\\end{matrix}",
             "\\begin{array}{cc}a&{b}\\\\c&d\\end{array}"]
    res = check_chunk(texts)
    assert sorted(res.fast) == list(range(len(texts)))
    assert asked == []
