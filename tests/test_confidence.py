"""model.confidence: what batch recognition reports beside each reading."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, strategies as st

from model.confidence import sat_confidence, token_confidence

BOS, EOS = 1, 2


def test_the_mean_probability_up_to_and_including_eos():
    # ids: BOS a b EOS PAD; probs[j] is the probability of ids[j + 1]
    assert math.isclose(token_confidence([BOS, 5, 6, EOS, 0], [0.9, 0.6, 0.3, 0.1], EOS), 0.6)


def test_an_output_cut_at_the_window_has_no_confidence():
    """A noise image read as one symbol over and over ran to the window without EOS: each token sure,
    the whole not a reading."""
    assert token_confidence([BOS] + [7] * 9, [0.99] * 9, EOS) == 0.0


def test_eos_first_is_sure_of_an_empty_output():
    assert math.isclose(token_confidence([BOS, EOS], [0.8], EOS), 0.8)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.integers(1, 40))
def test_the_mean_up_to_eos_or_zero_without_it(probs, eos_at):
    """Any row: with an EOS at eos_at, the mean of probs[:eos_at] (the tokens up to and including it);
    without one, 0."""
    ids = [BOS] + [9] * len(probs)
    if eos_at <= len(probs):
        ids[eos_at] = EOS
        assert math.isclose(token_confidence(ids, probs, EOS), sum(probs[:eos_at]) / eos_at, abs_tol=1e-12)
    else:
        assert token_confidence(ids, probs, EOS) == 0.0


def test_sat_confidence_is_the_mean_best_product_up_to_the_first_pad():
    logp = np.log(np.full((4, 3), 1 / 3))
    c = sat_confidence([1, 2, 0, 0], logp, logp, pad=0)
    assert math.isclose(c, 1 / 9)
