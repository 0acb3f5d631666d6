"""Metrics (docs/sat.md §6): corpus-level CER, EM/ExpRate, symbol and structure error rates."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.metrics import SCORE_KEYS, cer, edit_distance, mathwriting_tokenize, score


def _reference_distance(a, b) -> int:
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1][-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcx^{}"), max_size=12), st.lists(st.sampled_from("abcx^{}"), max_size=12))
def test_edit_distance_matches_the_textbook_definition(a, b):
    assert edit_distance(a, b) == _reference_distance(a, b) == edit_distance(b, a)


def test_edit_distance_examples():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance([], ["x"]) == 1
    assert edit_distance(["\\frac", "{"], ["\\frac", "{"]) == 0


def test_cer_is_corpus_level_not_a_mean():
    refs = ["x", r"\frac{a}{b}"]        # 1 and 7 tokens
    hyps = ["y", r"\frac{a}{b}"]        # 1 error in 8 reference tokens
    assert cer(refs, hyps) == pytest.approx(1 / 8)  # a mean of per-sample rates would be 0.5


def test_cer_order_is_explicit():
    assert cer(["ab"], ["abcd"]) == pytest.approx(1.0)   # 2 insertions over 2 reference tokens
    assert cer(["abcd"], ["ab"]) == pytest.approx(0.5)   # 2 deletions over 4
    with pytest.raises(ValueError):
        cer(["a"], [])


def test_whitespace_is_not_an_error():
    assert cer([r"\frac { 1 } { 2 }"], [r"\frac{1}{2}"]) == 0.0


def test_score_keys_and_values():
    s = score([r"\frac{a}{b}", "x^{2}", "a+b"], [r"\frac{a}{c}", "x_{2}", "a+b"])
    assert tuple(s) == SCORE_KEYS
    assert s["n"] == 3
    assert s["em"] == pytest.approx(1 / 3)
    assert s["exprate_le1"] == pytest.approx(1.0)
    assert s["exprate_le2"] == pytest.approx(1.0)
    assert s["cer"] == pytest.approx(2 / 15)
    # symbols: \frac a b / \frac a c (1 error), x 2 / x 2 (0), a + b (0): 1 over 3+2+3 positions
    assert s["symbol_error_rate"] == pytest.approx(1 / 8)
    # modifiers: only x's "2" differs (^{..} vs _{..})
    assert s["structure_error_rate"] == pytest.approx(1 / 8)


def test_hypothesis_that_does_not_lex_is_scored_by_characters():
    s = score(["x"], ["x\\"])
    assert s["cer"] == pytest.approx(1.0) and s["em"] == 0.0
    s = score(["x"], [""])
    assert s["structure_error_rate"] == 1.0 and s["symbol_error_rate"] == 1.0
    assert score([], [])["n"] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=10), st.text(max_size=10)), max_size=5))
def test_score_never_raises_and_rates_are_fractions(pairs):
    refs = [r for r, _ in pairs]
    hyps = [h for _, h in pairs]
    s = score(refs, hyps)
    for k in ("em", "exprate_le1", "exprate_le2", "symbol_error_rate", "structure_error_rate"):
        assert 0.0 <= s[k] <= 1.0
    assert s["cer"] >= 0.0
    assert s["em"] <= s["exprate_le1"] <= s["exprate_le2"]


def test_mathwriting_reference_tokenizer():
    assert mathwriting_tokenize(r"\frac{a} b") == ["\\frac", "{", "a", "}", " ", "b"]
    assert mathwriting_tokenize(r"\begin{pmatrix*}") == ["\\begin", "{", "p", "m", "a", "t", "r", "i", "x", "*", "}"]
    assert mathwriting_tokenize("x\\") == ["x", "\\"]  # the original crashes here
