"""datasets_prep.synth.rename: renamed copies keep a formula's structure and change only its symbols."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets_prep.synth.rename import CLASSES, kept_positions, main, rename, rename_corpus, symbol_class

LATEX = Path(__file__).resolve().parents[2] / "shared" / "data" / "latex" / "im2latex100k_val_norm.txt"


def _skeleton(label: str) -> list[str]:
    """The tokens with every renameable symbol replaced by its class name."""
    return [symbol_class(t) or t for t in label.split()]


def test_structure_kept_and_renaming_consistent():
    label = "f ( x ) = x ^ { 2 } + \\alpha x - 1 0"
    rng = np.random.default_rng(0)
    for _ in range(50):
        new = rename(label, rng, prob=1.0)
        assert _skeleton(new) == _skeleton(label)
        t = new.split()
        assert t[2] == t[5] == t[12]          # every x renamed alike
        assert symbol_class(t[11]) == "greek"


def test_prob_zero_is_identity_and_one_changes():
    label = "a + b = c"
    assert rename(label, np.random.default_rng(1), prob=0.0) == label
    outs = {rename(label, np.random.default_rng(s), prob=1.0) for s in range(20)}
    assert len(outs) > 1


def test_non_math_arguments_kept():
    label = ("\\begin { array } { l c r } a & b & c \\end { array } \\hspace { 2 p t } x \\hskip - 1 . 5 p t y "
             "\\color { r e d } z")
    tokens = label.split()
    kept = kept_positions(tokens)
    for _ in range(30):
        new = rename(label, np.random.default_rng(_), prob=1.0).split()
        for i in kept:
            assert new[i] == tokens[i]
    spec = tokens.index("l")
    assert {spec, spec + 1, spec + 2} <= kept
    unit = tokens.index("\\hskip")
    assert tokens[unit + 5: unit + 7] == ["p", "t"] and {unit + 5, unit + 6} <= kept
    assert tokens.index("a") not in kept
    rule = "\\rule { 1 e m } { 2 p t } x".split()
    assert kept_positions(rule) == set(range(1, 11))


def test_one_token_begin_keeps_its_column_spec():
    label = "\\left( \\begin{array} { c c } { a } & { b } \\\\ \\end{array} \\right) \\begin{matrix} x \\end{matrix}"
    tokens = label.split()
    kept = kept_positions(tokens)
    assert {2, 3, 4, 5} <= kept and tokens.index("a") not in kept and tokens.index("x") not in kept
    for seed in range(20):
        assert rename(label, np.random.default_rng(seed), prob=1.0).split()[2:6] == ["{", "c", "c", "}"]


def test_refused_commands_leave_the_formula_out():
    out, left = rename_corpus(["\\def \\x { y } x", "a + b"], seed=0)
    assert left == 1 and len(out) == 1


def test_pools_come_from_the_corpus():
    labels = ["a + b", "b - c", "1 2"]
    out, _ = rename_corpus(labels * 20, seed=3, prob=1.0)
    used = {t for label in out for t in label.split() if symbol_class(t)}
    assert used <= {"a", "b", "c", "1", "2"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["x", "y", "A", "3", "\\beta", "\\Phi", "+", "{", "}", "^", "_", "\\frac", "(", ")"]),
                min_size=1, max_size=30), st.integers(0, 2**31 - 1), st.floats(0, 1))
def test_property_token_count_and_classes(tokens, seed, prob):
    label = " ".join(tokens)
    new = rename(label, np.random.default_rng(seed), prob)
    assert _skeleton(new) == _skeleton(label)
    for a, b in zip(label.split(), new.split()):
        assert symbol_class(a) == symbol_class(b)
        if symbol_class(a) is None:
            assert a == b


def test_cli(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("name\tx + 1\ny = 2\n\n", encoding="utf-8")
    assert main([str(src), "--out", str(tmp_path / "out.txt"), "--seed", "2"]) == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert len(lines) == 2 and _skeleton(lines[0]) == _skeleton("x + 1")
    assert main([str(src), "--out", str(tmp_path / "o.txt"), "--prob", "2"]) == 2
    assert main([str(tmp_path / "missing.txt"), "--out", str(tmp_path / "o.txt")]) == 2


def test_real_corpus_keeps_every_formula_lexable():
    if not LATEX.is_file():
        pytest.skip(f"{LATEX} not here (the shared LaTeX corpora)")
    from tokenizer import LatexError, tokenize

    labels = LATEX.read_text(encoding="utf-8").splitlines()[:2000]
    out, left = rename_corpus(labels, seed=0)
    assert left < 20 and len(out) == len(labels) - left
    ok_before = ok_after = 0
    for a in labels:
        try:
            tokenize(a)
            ok_before += 1
        except LatexError:
            pass
    for b in out:
        try:
            tokenize(b)
            ok_after += 1
        except LatexError:
            pass
    assert ok_after >= ok_before - left
    assert set(CLASSES) == {"lower", "upper", "digit", "greek", "Greek"}
