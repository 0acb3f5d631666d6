"""The synthesizer against the real label corpora in ../shared/data (skipped without them)."""
from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest

from datasets_prep.synth import SynthError, synthesize, synthesize_batch
from datasets_prep.synth.labels import CROHME_SYMBOLS


def _caption_lines(path: Path) -> list[str]:
    return [line.split("\t", 1)[1].strip() for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line]


@pytest.mark.parametrize("name", ["crohme2014_train_captions.txt", "crohme2014_test_captions.txt"])
def test_every_crohme_caption_draws_and_its_truth_is_normalized(shared_data, name):
    """Every CROHME 2014 caption draws, and the truth written is tokenizer.normalize(caption), which
    validates and is a fixed point of normalize."""
    from tokenizer import label_verdict, normalize

    lines = _caption_lines(shared_data / "latex" / name)
    assert len(lines) > 900
    failures = []
    for lo in range(0, len(lines), 64):
        chunk = lines[lo:lo + 64]
        inks = synthesize_batch(chunk, [np.random.default_rng(lo + k) for k in range(len(chunk))])
        for lab, ink in zip(chunk, inks):
            if isinstance(ink, SynthError):
                failures.append(str(ink))
                continue
            truth = ink.annotations["normalizedLabel"]
            assert truth == normalize(lab) == normalize(truth), lab
            assert label_verdict(truth) is None, (lab, truth)
            assert ink.num_strokes > 0
    assert failures == []


def test_crohme_inventory_is_the_symbol_set_of_the_captions(shared_data):
    toks = set()
    for lab in _caption_lines(shared_data / "latex" / "crohme2014_train_captions.txt"):
        toks |= set(lab.split())
    toks -= {"{", "}", "^", "_"}
    assert toks - {"'"} == set(CROHME_SYMBOLS)  # the generator's inventory is exactly CROHME's


def test_mathwriting_labels_draw(shared_data):
    files = sorted((shared_data / "mathwriting").glob("*/*.inkml"))
    assert files
    for f in files:
        lab = html.unescape(re.search(r'type="normalizedLabel">(.*?)</annotation>', f.read_text()).group(1))
        ink = synthesize(lab, np.random.default_rng(0))
        assert ink.num_strokes > 0


@pytest.mark.parametrize("name", ["im2latex100k_val_norm.txt", "hme100k_test.tsv", "katex_screenshotter.tsv",
                                  "crohme_train_truths.tsv"])
def test_other_corpora_draw_or_report_never_crash(shared_data, name):
    text = (shared_data / "latex" / name).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()[:1500]
    drawn = 0
    for line in lines:
        lab = line.split("\t", 1)[1] if "\t" in line else line
        try:
            synthesize(lab, np.random.default_rng(0))
            drawn += 1
        except SynthError as e:
            assert e.reason and e.label == lab
    assert drawn > 0.15 * len(lines)
