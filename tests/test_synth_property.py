"""Hypothesis properties of the synthesizer: every generated label is valid and round-trips, any
input either draws or raises SynthError, every truth it writes is a fixed point of
tokenizer.normalize, and files read back to the same ink and label."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasets_prep.synth import SynthError, canonical_label, random_label, synthesize
from datasets_prep.synth.inkml_write import crohme_inkml, mathwriting_inkml
from datasets_prep.synth.latex import spaced
from tokenizer import normalize, tokenize

NS = "{http://www.w3.org/2003/InkML}"
seeds = st.integers(min_value=0, max_value=2**32 - 1)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=seeds, depth=st.integers(0, 4), length=st.integers(1, 24))
def test_random_label_is_valid_canonical_and_drawable(seed, depth, length):
    from tokenizer import label_verdict

    lab = random_label(np.random.default_rng(seed), depth=depth, length=length)
    assert label_verdict(lab) is None, lab
    assert canonical_label(lab) == lab           # already in the synthesizer's canonical form
    assert normalize(lab) == lab                 # and a fixed point of the project's normalizer
    ink = synthesize(lab, np.random.default_rng(seed))
    assert ink.annotations["normalizedLabel"] == lab
    assert ink.num_points > 0 and all(np.isfinite(s).all() for s in ink.strokes)


@SETTINGS
@given(seed=seeds)
def test_compact_and_spaced_labels_are_the_same_tokens(seed):
    lab = random_label(np.random.default_rng(seed), depth=3, length=12)
    assert tokenize(lab) == tokenize(spaced(tokenize(lab)))


PIECES = list("xy12+-=^_{}[]()&\\' ") + ["\\frac", "\\sqrt", "\\left", "\\right", "\\alpha", "\\begin{matrix}",
                                          "\\end{matrix}", "\\\\", "\\hat", "é", "\\sum", "\\limits"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_any_input_draws_or_raises_synth_error(text):
    try:
        ink = synthesize(text, np.random.default_rng(0))
    except SynthError as e:
        assert e.label == text and e.reason
        return
    # what draws is stable: its canonical label is the normal form and draws to itself
    lab = ink.annotations["normalizedLabel"]
    assert lab == normalize(text) and canonical_label(lab) == lab


# Spellings normalize rewrites (synonyms, spacing, sizing, \left/\right, text, arrays, primes, unicode).
LABEL_PIECES = PIECES + [
    r"\,", r"\quad", r"\dfrac", r"\le", r"\to", r"\mbox{a b }", r"\text{ if }", r"\big(", r"\Big)", r"\left(",
    r"\right)", r"\left.", r"\right|", r"\displaystyle", "''", r"\limits", r"\begin{array}{cc}", r"\end{array}",
    r"\not", r"\mathbb{R}", r"\operatorname{sin}", r"\lbrace", r"\rbrace", "α", "≤", "−", "|", r"\{", r"\}",
    r"\over", r"\overline", "~"]


# Mostly well-formed labels in the same spellings, so that most examples draw.
ATOMS = st.sampled_from(list("xyab12+-=(),|") + [r"\alpha", r"\le", r"\to", r"\infty", "α", "≤", "−",
                                                 r"\lbrace", r"\rbrace", r"\{", r"\}", r"\mathbb{R}", r"\ldots",
                                                 r"\sum", r"\lim"])
WRAPS = [r"\frac{%s}{%s}", r"\dfrac{%s}{%s}", "%s^{%s}", "%s_%s", "{%s}'%s", r"\left(%s\right)%s",
         r"\left.%s\right|%s", r"\big(%s\big)%s", r"\sqrt[%s]{%s}", r"%s\,%s", r"%s\quad %s", r"\mbox{a b }%s%s",
         r"\text{ if }%s %s", r"\begin{array}{cc}%s&%s\\ 1&2\end{array}", r"\begin{pmatrix}%s\\%s\\\end{pmatrix}",
         r"\displaystyle %s%s", r"\hat{%s}%s", r"\not=%s%s", r"{%s \over %s}", r"\operatorname{sin}%s%s",
         r"\overline{%s}%s", r"\sum\limits_{%s}^{%s}", r"\binom{%s}{%s}", "%s~%s"]
LABELS = st.recursive(ATOMS, lambda inner: st.one_of(
    st.tuples(st.sampled_from(WRAPS), inner, inner).map(lambda t: t[0] % (t[1], t[2])),
    st.lists(inner, min_size=2, max_size=4).map("".join)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(LABELS, LABELS, st.lists(st.sampled_from(LABEL_PIECES), max_size=24).map("".join)),
       seed=seeds)
def test_synthetic_truths_are_fixed_points_of_normalize(text, seed):
    try:
        ink = synthesize(text, np.random.default_rng(seed))
    except SynthError as e:
        assert e.label == text and e.reason
        return
    ann = ink.annotations
    truth = ann["normalizedLabel"]
    assert ann["label"] == truth == normalize(text)
    assert normalize(truth) == truth                      # a fixed point of the project's normalizer
    spaced_truth = ann["truth"][1:-1]                     # CROHME's space-tokenized form of the same label
    assert normalize(spaced_truth) == truth and tokenize(spaced_truth) == tokenize(truth)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40))
def test_arbitrary_unicode_never_crashes(text):
    try:
        synthesize(text, np.random.default_rng(1))
    except SynthError:
        pass


@SETTINGS
@given(seed=seeds)
def test_files_read_back_to_the_same_ink_and_label(seed):
    rng = np.random.default_rng(seed)
    lab = random_label(rng, depth=2, length=8)
    ink = synthesize(lab, rng)
    root = ET.fromstring(mathwriting_inkml(ink, sample_id="f" * 16, split="train", label=lab))
    ann = {a.get("type"): a.text for a in root.findall(f"{NS}annotation")}
    assert ann["label"] == ann["normalizedLabel"] == lab
    back = [np.array([p.split() for p in t.text.split(",")], dtype=float) for t in root.findall(f"{NS}trace")]
    assert len(back) == ink.num_strokes and all(np.array_equal(a, b) for a, b in zip(ink.strokes, back))
    sids = [int(v) for v in ink.annotations["strokeSymbols"].split()]
    text = crohme_inkml(ink, ui="u", truth_spaced=spaced(tokenize(lab)), stroke_symbols=sids,
                        symbol_labels=ink.annotations["symbolLabels"].split("\t"))
    croot = ET.fromstring(text)
    truth = {a.get("type"): a.text for a in croot.findall(f"{NS}annotation")}["truth"]
    assert canonical_label(truth.strip("$")) == lab
    cback = [np.array([p.split() for p in t.text.strip().split(",")], dtype=float)
             for t in croot.findall(f"{NS}trace")]
    assert all(np.abs(a[:, :2] - b).max() <= 0.5 for a, b in zip(ink.strokes, cback))


@SETTINGS
@given(seed=seeds)
def test_writing_order_and_time_are_monotonic(seed):
    rng = np.random.default_rng(seed)
    ink = synthesize(random_label(rng, depth=2, length=10), rng)
    t = np.concatenate([s[:, 2] for s in ink.strokes])
    assert t[0] == 0 and np.all(np.diff(t) > 0)


@settings(max_examples=40, deadline=None)
@given(seeds=st.lists(seeds, min_size=1, max_size=12), bad=st.booleans())
def test_batch_is_bit_identical_to_one_at_a_time(seeds, bad):
    from datasets_prep.synth import Style, synthesize_batch

    labels = [random_label(np.random.default_rng(s), depth=2, length=8) for s in seeds]
    if bad:
        labels[len(labels) // 2] = "x^{1}^{2}"
    styles = [Style.neat() if s % 3 == 0 else None for s in seeds]  # mixed writers, drift on and off
    batch = synthesize_batch(labels, [np.random.default_rng(s) for s in seeds], styles)
    for lab, s, sty, got in zip(labels, seeds, styles, batch):
        try:
            want = synthesize(lab, np.random.default_rng(s), style=sty)
        except SynthError as e:
            assert isinstance(got, SynthError) and got.reason == e.reason
            continue
        assert got.annotations == want.annotations
        assert len(got.strokes) == len(want.strokes)
        assert all(np.array_equal(a, b) for a, b in zip(got.strokes, want.strokes))
