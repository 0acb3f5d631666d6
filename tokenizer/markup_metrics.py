"""Image-to-markup metrics as IM2LATEX-100K results are reported (im2markup, Deng et al. 2017, and the
papers that compare with it: BLEU-4, edit distance, exact match, exact match on rendered images).

Why a second metrics module: tokenizer.metrics scores *our* tokens (the lexer's, whitespace ignored).
Printed-formula papers score the im2markup-normalized strings, split on whitespace, with im2markup's
scripts; a number meant to sit beside theirs must be computed their way. The conventions, read from
harvardnlp/im2markup's scripts/evaluation:
- bleu4: corpus-level BLEU-4 as Moses' multi-bleu.perl computes it (what evaluate_bleu.py runs):
  whitespace tokens, case-sensitive, n-gram counts clipped by the reference, precisions summed over
  the corpus, uniform weights over n = 1..4, brevity penalty exp(1 - r/c) when the hypotheses are
  shorter in total (c < r). A zero precision makes the score 0 (multi-bleu's log(0) is -9999999999);
  no smoothing. Missing predictions are empty lines (scored, not skipped). An empty hypothesis corpus
  scores 0 (multi-bleu itself divides by zero there).
- edit_score: 1 - sum(token edit distance) / sum(max(len(ref), len(hyp))), corpus-level
  (evaluate_text_edit_distance.py's "Edit Distance Accuracy").
- exact_match: the whitespace token sequences are equal; exact_match_nospace: equal once every
  whitespace character is removed.
- image_exact_match: both formulas drawn by one renderer, binarized (ink = gray <= 128), blank
  columns removed ("w/o spaces"), blank rows trimmed, then compared pixel for pixel. im2markup
  additionally forgives column runs shorter than 5 pixels and columns differing in fewer than 5
  pixels, which absorbs pdflatex's anti-aliasing noise; a deterministic renderer needs no tolerance,
  so none is applied here (a stricter test than theirs).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .metrics import edit_distance

MARKUP_KEYS = ("n", "bleu4", "edit_score", "exact_match", "exact_match_nospace")
IMAGE_KEYS = ("image_exact_match", "image_scored", "image_ref_undrawable", "image_hyp_undrawable")
INK_LEVEL = 128
"""A pixel at or below this gray level is ink (im2markup's evaluate_image.py threshold)."""

Renderer = Callable[[str], np.ndarray]
"""LaTeX -> uint8 gray image [H, W], 255 = background; raises ValueError when it cannot draw."""


def _check_lengths(refs: Sequence[str], hyps: Sequence[str]) -> None:
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


@dataclass(frozen=True)
class BleuStats:
    """The parts of a corpus BLEU score, as multi-bleu.perl prints them."""

    bleu: float
    precisions: tuple[float, ...]  # modified n-gram precision, n = 1..max_n
    brevity_penalty: float
    hyp_len: int
    ref_len: int


def bleu_stats(refs: Sequence[str], hyps: Sequence[str], max_n: int = 4) -> BleuStats:
    """Corpus-level BLEU over whitespace tokens (multi-bleu.perl's arithmetic, one reference each)."""
    _check_lengths(refs, hyps)
    if max_n < 1:
        raise ValueError("max_n must be >= 1")
    correct = [0] * max_n
    total = [0] * max_n
    hyp_len = ref_len = 0
    for r, h in zip(refs, hyps):
        rt, ht = r.split(), h.split()
        ref_len += len(rt)
        hyp_len += len(ht)
        for n in range(1, max_n + 1):
            hc = _ngrams(ht, n)
            if not hc:
                continue
            rc = _ngrams(rt, n)
            total[n - 1] += sum(hc.values())
            correct[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
    precisions = tuple(c / t if t else 0.0 for c, t in zip(correct, total))
    if hyp_len == 0 or ref_len == 0:
        return BleuStats(0.0, precisions, 0.0 if hyp_len == 0 else 1.0, hyp_len, ref_len)
    bp = math.exp(1.0 - ref_len / hyp_len) if hyp_len < ref_len else 1.0
    if min(precisions) == 0.0:
        return BleuStats(0.0, precisions, bp, hyp_len, ref_len)
    return BleuStats(bp * math.exp(sum(map(math.log, precisions)) / max_n), precisions, bp, hyp_len, ref_len)


def bleu4(refs: Sequence[str], hyps: Sequence[str]) -> float:
    """Corpus BLEU-4 in [0, 1] (papers print it x100: im2markup's 87.73 is 0.8773)."""
    return bleu_stats(refs, hyps, 4).bleu


def edit_score(refs: Sequence[str], hyps: Sequence[str]) -> float:
    """1 - sum(token edit distance) / sum(max(len(ref), len(hyp))); 1.0 for an all-empty corpus."""
    _check_lengths(refs, hyps)
    dist = longest = 0
    for r, h in zip(refs, hyps):
        rt, ht = r.split(), h.split()
        dist += edit_distance(rt, ht)
        longest += max(len(rt), len(ht))
    return 1.0 - dist / longest if longest else 1.0


def exact_match(refs: Sequence[str], hyps: Sequence[str], *, ignore_spaces: bool = False) -> float:
    """Share of pairs whose whitespace tokens are equal (with ignore_spaces: whose strings are equal
    once all whitespace is removed)."""
    _check_lengths(refs, hyps)
    if not refs:
        return 0.0
    if ignore_spaces:
        same = sum("".join(r.split()) == "".join(h.split()) for r, h in zip(refs, hyps))
    else:
        same = sum(r.split() == h.split() for r, h in zip(refs, hyps))
    return same / len(refs)


@dataclass(frozen=True)
class ImageMatch:
    """Outcome of an image comparison: `match` is True/False, or None when a side could not be
    drawn; `reason` then says which side and why. Not usable as a bool (ask `.match`), so an
    undrawable pair is never silently read as a mismatch or a match."""

    match: bool | None
    reason: str = ""

    def __bool__(self) -> bool:
        raise TypeError("ImageMatch has three outcomes: test .match (True, False or None)")


def ink_columns(image: np.ndarray) -> np.ndarray:
    """Binary ink mask (gray <= INK_LEVEL) with blank columns removed and blank rows trimmed."""
    a = np.asarray(image)
    if a.ndim != 2:
        raise ValueError(f"expected a 2-D gray image, got shape {a.shape}")
    ink = a <= INK_LEVEL
    ink = ink[:, ink.any(axis=0)]
    rows = np.flatnonzero(ink.any(axis=1))
    return ink[rows[0]:rows[-1] + 1] if rows.size else ink[:0]


def same_ink_masks(a: np.ndarray, b: np.ndarray) -> bool:
    """Two `ink_columns` masks equal pixel for pixel."""
    return a.shape == b.shape and bool(np.array_equal(a, b))


def same_ink(a: np.ndarray, b: np.ndarray) -> bool:
    """Two gray images draw the same ink, blank columns aside (image exact match of drawn pictures)."""
    return same_ink_masks(ink_columns(a), ink_columns(b))


def image_exact_match(ref_latex: str, hyp_latex: str, render: Renderer) -> ImageMatch:
    """Do two formulas draw the same ink, blank columns aside? Renders both with `render`."""
    masks = []
    for side, latex in (("reference", ref_latex), ("hypothesis", hyp_latex)):
        try:
            masks.append(ink_columns(render(latex)))
        except ValueError as e:
            return ImageMatch(None, f"{side} cannot be drawn: {getattr(e, 'reason', None) or e}")
    return ImageMatch(same_ink_masks(*masks))


def markup_scores(refs: list[str], hyps: list[str], images: bool = False,
                  render: Renderer | None = None) -> dict[str, float]:
    """Every image-to-markup metric at once, for the eval table: MARKUP_KEYS, plus IMAGE_KEYS with
    `images` (drawn by `render`: train.eval passes the project's print renderer,
    datasets_prep.synth.printed.render_print, which needs no TeX).

    image_exact_match is over the pairs whose reference can be drawn (image_scored of them); a
    hypothesis that cannot be drawn counts as a mismatch (as im2markup counts a prediction pdflatex
    fails on) and is also counted in image_hyp_undrawable; undrawable references are left out and
    counted in image_ref_undrawable. Rates are fractions in [0, 1]."""
    _check_lengths(refs, hyps)
    out: dict[str, float] = {
        "n": len(refs),
        "bleu4": bleu4(refs, hyps),
        "edit_score": edit_score(refs, hyps),
        "exact_match": exact_match(refs, hyps),
        "exact_match_nospace": exact_match(refs, hyps, ignore_spaces=True),
    }
    if images:
        if render is None:
            raise ValueError("markup_scores(images=True) needs a renderer (e.g. datasets_prep.synth.printed.render_print)")
        draw = render
        matched = scored = ref_bad = hyp_bad = 0
        for r, h in zip(refs, hyps):
            m = image_exact_match(r, h, draw)
            if m.match is None:
                if m.reason.startswith("reference"):
                    ref_bad += 1
                    continue
                hyp_bad += 1
            scored += 1
            matched += m.match is True
        out.update({"image_exact_match": matched / scored if scored else 0.0, "image_scored": scored,
                    "image_ref_undrawable": ref_bad, "image_hyp_undrawable": hyp_bad})
    return out
