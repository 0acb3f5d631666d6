"""Image-to-markup metrics (tokenizer/markup_metrics.py): BLEU-4 as multi-bleu.perl computes it,
im2markup's edit score, exact match, and exact match on rendered images."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.markup_metrics import (IMAGE_KEYS, MARKUP_KEYS, ImageMatch, bleu4, bleu_stats, edit_score,
                                      exact_match, image_exact_match, ink_columns, markup_scores)


def test_bleu_hand_computed_substitution():
    # 1-grams 5/6, 2-grams 3/5, 3-grams 2/4, 4-grams 1/3, equal lengths: BP = 1
    s = bleu_stats(["a b c d e f"], ["a b c d x f"])
    assert s.precisions == pytest.approx((5 / 6, 3 / 5, 2 / 4, 1 / 3))
    assert s.brevity_penalty == 1.0
    assert s.bleu == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    assert s.bleu == pytest.approx(0.5372849659117709)


def test_bleu_brevity_penalty_for_short_hypotheses():
    s = bleu_stats(["a b c d e f g h"], ["a b c d e f"])  # every n-gram right, 6 of 8 tokens
    assert s.precisions == (1.0, 1.0, 1.0, 1.0)
    assert s.brevity_penalty == pytest.approx(math.exp(1 - 8 / 6))
    assert s.bleu == pytest.approx(0.7165313105737893)
    assert bleu_stats(["a b c d"], ["a b c d a b c d"]).brevity_penalty == 1.0  # longer: no bonus, no penalty


def test_bleu_clips_repeated_ngrams_by_the_reference():
    s = bleu_stats(["x = x + 1"], ["x x x x x"])
    assert s.precisions[0] == pytest.approx(2 / 5)  # "x" occurs twice in the reference
    assert s.bleu == 0.0  # no 2-gram right: multi-bleu's log(0) makes the score 0, no smoothing


def test_bleu_is_corpus_level_not_a_mean_of_sentences():
    refs = ["a b c d", "e f g h i j k l"]
    hyps = ["a b c d", "e f g h i j k z"]
    # pooled: 1-grams 11/12, 2-grams 9/10, 3-grams 7/8, 4-grams 5/6
    expected = (11 / 12 * 9 / 10 * 7 / 8 * 5 / 6) ** 0.25
    assert bleu4(refs, hyps) == pytest.approx(expected)
    per_sentence = (bleu4(refs[:1], hyps[:1]) + bleu4(refs[1:], hyps[1:])) / 2
    assert abs(bleu4(refs, hyps) - per_sentence) > 0.01


def test_bleu_known_cases():
    refs = [r"\frac { 1 } { 2 } + x ^ { 2 }", r"a _ { i } = b"]
    assert bleu4(refs, refs) == 1.0
    assert bleu4(refs, ["", ""]) == 0.0              # empty hypotheses (im2markup's missing predictions)
    assert bleu4(["x ^ 2"], ["x ^ 2"]) == 0.0        # no 4-gram anywhere: multi-bleu gives 0 too
    assert bleu4(["a b c d"], ["a  b\tc d "]) == 1.0  # tokens are split on any whitespace
    with pytest.raises(ValueError):
        bleu4(["a"], [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abcd{}^"), max_size=9),
                          st.lists(st.sampled_from("abcd{}^"), max_size=9)), min_size=1, max_size=5))
def test_bleu_against_a_direct_transcription_of_the_definition(pairs):
    refs = [" ".join(r) for r, _ in pairs]
    hyps = [" ".join(h) for _, h in pairs]
    # the definition, written out independently: clipped counts per n over the corpus
    logs, c, r = [], sum(len(h) for _, h in pairs), sum(len(x) for x, _ in pairs)
    for n in range(1, 5):
        num = den = 0
        for ref, hyp in pairs:
            hg = [tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1)]
            rg = [tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)]
            den += len(hg)
            num += sum(min(hg.count(g), rg.count(g)) for g in set(hg))
        logs.append(math.log(num / den) if num else None)
    if c == 0 or r == 0 or None in logs:
        expected = 0.0
    else:
        expected = min(1.0, math.exp(1 - r / c)) * math.exp(sum(logs) / 4)
    assert bleu4(refs, hyps) == pytest.approx(expected)
    assert 0.0 <= bleu4(refs, hyps) <= 1.0


def test_edit_score_is_corpus_level_over_the_longer_side():
    refs = ["a b c d", "x"]
    hyps = ["a b c", "y z"]
    # distances 1 and 2, denominators max(4, 3) + max(1, 2) = 6
    assert edit_score(refs, hyps) == pytest.approx(1 - 3 / 6)
    assert edit_score(refs, refs) == 1.0
    assert edit_score(["a b"], [""]) == 0.0
    assert edit_score([""], [""]) == 1.0


def test_exact_match_with_and_without_spaces():
    refs = [r"\mathrm { d } x", "a + b", "x"]
    hyps = [r"\mathrm { d } x", "a+b", "y"]
    assert exact_match(refs, hyps) == pytest.approx(1 / 3)
    assert exact_match(refs, hyps, ignore_spaces=True) == pytest.approx(2 / 3)
    assert exact_match([], []) == 0.0


# ---- images -------------------------------------------------------------------------------------
def _fake_render(latex: str) -> np.ndarray:
    """One 3x3 block per character, blank column between them; '?' cannot be drawn."""
    if "?" in latex or not latex.strip():
        raise ValueError("no glyph for '?'")
    chars = latex.replace(" ", "")
    img = np.full((7, 4 * len(chars) + 6), 255, np.uint8)
    for i, ch in enumerate(chars):
        img[2:5, 3 + 4 * i: 6 + 4 * i] = 0 if ch.isalpha() else 100
        if ch.isupper():
            img[2, 3 + 4 * i] = 255
    return img


def test_ink_columns_strips_blank_columns_and_rows():
    img = np.full((10, 10), 255, np.uint8)
    img[3, 2] = img[5, 7] = 0
    img[4, 4] = 200  # light gray: not ink
    mask = ink_columns(img)
    assert mask.shape == (3, 2)
    assert mask[0, 0] and mask[2, 1] and mask.sum() == 2


def test_image_exact_match_outcomes():
    assert image_exact_match("a b", "ab", _fake_render).match is True   # spacing differences vanish
    assert image_exact_match("ab", "aB", _fake_render).match is False   # one pixel differs
    assert image_exact_match("ab", "abc", _fake_render).match is False  # different width
    m = image_exact_match("ab", "a?", _fake_render)
    assert m.match is None and m.reason.startswith("hypothesis cannot be drawn")
    m = image_exact_match("?", "a", _fake_render)
    assert m.match is None and m.reason.startswith("reference cannot be drawn")
    with pytest.raises(TypeError):
        bool(m)
    assert ImageMatch(True).reason == ""


def test_markup_scores_keys_and_image_accounting():
    refs = ["a b c d e", "x y", "? z"]
    hyps = ["a b c d e", "x ?", "q z"]
    s = markup_scores(refs, hyps)
    assert tuple(s) == MARKUP_KEYS
    assert s["n"] == 3 and s["exact_match"] == pytest.approx(1 / 3)
    s = markup_scores(refs, hyps, images=True, render=_fake_render)
    assert tuple(s) == MARKUP_KEYS + IMAGE_KEYS
    # pair 3's reference cannot be drawn: left out; pair 2's hypothesis cannot: a counted mismatch
    assert s["image_scored"] == 2 and s["image_ref_undrawable"] == 1 and s["image_hyp_undrawable"] == 1
    assert s["image_exact_match"] == pytest.approx(1 / 2)
