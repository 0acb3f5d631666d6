"""The tokenizer on the real corpora in ../shared/data: every accepted line round-trips, nothing crashes.

Skips cleanly where ../shared/data is absent (a fresh clone). Nothing from it is copied into the repo.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tokenizer import (LatexError, clean_crohme_truth, decode, detokenize, encode, label_verdict, normalize,
                       position_forest, tokenize)
from tokenizer.check import CorpusCheck, check_sources, main
from tokenizer.corpus import Line, read_corpus

CORPORA = ["crohme2014_train_captions.txt", "crohme2014_test_captions.txt", "crohme_train_truths.tsv",
           "im2latex100k_val_norm.txt", "hme100k_test.tsv", "katex_screenshotter.tsv"]


@pytest.mark.parametrize("name", CORPORA)
def test_checker_round_trips_every_corpus(shared_data: Path, name: str):
    path = shared_data / "latex" / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    checker = check_sources([str(path)], CorpusCheck())
    r = checker.report()
    assert r["accepted"] > 0.99 * r["lines"] - r["blank"]
    assert checker.round_trip_failures() == 0, r["round_trip"]["examples"]
    assert r["skipped"] == {}


def test_multiline_crohme_truths_are_reported_as_continuations(shared_data: Path):
    path = shared_data / "latex" / "crohme_train_truths.tsv"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    r = check_sources([str(path)], CorpusCheck(crohme=True)).report()
    assert r["continuation_lines"] == 18
    assert r["physical_lines"] == 8853 and r["lines"] == 8853 - 18
    assert r["invalid"] == {}


def test_cli_over_all_corpora_at_once(shared_data: Path, capsys):
    paths = [str(p) for p in sorted((shared_data / "latex").glob("*")) if p.is_file()]
    if not paths:
        pytest.skip("no corpora in shared/data/latex")
    assert main(paths + ["--json"]) == 0
    capsys.readouterr()


def _annotations(data: bytes, kind: str) -> list[str]:
    # the expression-level annotation comes first; CROHME's traceGroup annotations say "truth" too
    found = re.findall(rb'<annotation type="' + kind.encode() + rb'">(.*?)</annotation>', data, re.S)
    return [html.unescape(m.decode("utf-8")) for m in found[:1]]


def _inkml_truths(root: Path, kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for f in sorted(root.rglob("*.inkml")):
        data = f.read_bytes()
        for kind in kinds:
            out += [(f"{f}:{kind}", t) for t in _annotations(data, kind)]
    return out


def _assert_round_trips(latex: str, where: str) -> None:
    toks = tokenize(latex)
    assert tokenize(detokenize(toks)) == toks, where
    if any(t not in "^_{}" for t in toks):
        assert decode(encode(toks)) == toks, where
        assert decode(encode(toks, extended=True)) == toks, where


def test_every_inkml_truth_round_trips(shared_data: Path):
    truths = _inkml_truths(shared_data / "crohme", ("truth",))
    truths += _inkml_truths(shared_data / "mathwriting", ("label", "normalizedLabel"))
    if not truths:
        pytest.skip("no InkML files in shared/data")
    assert len(truths) > 10_000
    verdicts = {}
    for where, raw in truths:
        latex = clean_crohme_truth(raw) if where.endswith(":truth") else raw
        try:
            _assert_round_trips(latex, where)
        except LatexError as err:
            verdicts[where] = err.verdict()
        v = label_verdict(latex)
        if v is None:
            assert len(position_forest(latex)) == len(encode(tokenize(latex)))
        else:
            verdicts[where] = v
    assert len(verdicts) < 0.01 * len(truths), list(verdicts.items())[:10]


def test_mathwriting_normalized_labels_are_fixed_points(shared_data: Path):
    pairs = []
    for f in sorted((shared_data / "mathwriting").rglob("*.inkml")):
        data = f.read_bytes()
        label, norm = _annotations(data, "label"), _annotations(data, "normalizedLabel")
        if label and norm:
            pairs.append((f.name, label[0], norm[0]))
    if not pairs:
        pytest.skip("no MathWriting InkML in shared/data")
    for name, label, norm in pairs:
        assert normalize(norm) == norm, name
        assert normalize(label) == norm, name


def test_normalize_is_idempotent_on_real_labels(shared_data: Path):
    """Every 7th line of every corpus (the whole set takes ~25 s): N(N(s)) == N(s), valid stays valid."""
    lines = []
    for name in CORPORA:
        path = shared_data / "latex" / name
        if path.exists():
            with open(path, "rb") as f:
                lines += [r.latex for r in read_corpus(f, name) if isinstance(r, Line)][::7]
    if not lines:
        pytest.skip("no corpora in shared/data/latex")
    for latex in lines:
        try:
            once = normalize(latex)
        except LatexError:
            continue
        assert normalize(once) == once, latex
        if label_verdict(latex) is None:
            assert label_verdict(once) is None, (latex, once)
