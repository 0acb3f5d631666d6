"""`datasets_prep.split_corpus`: a split by formula that tokenizer.check --against finds leak-free."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from datasets_prep.split_corpus import SPLITS, assign, formula_key, main, split_labels
from tokenizer.check import main as check_main

SPELLINGS = [["x^2", "x ^ { 2 }", "x^{2}"], [r"\frac12", r"\frac { 1 } { 2 }"], [r"a \le b", r"a \leq b"],
             ["y", "y "], ["z+1"], [r"\alpha"], ["q_{i}"], ["m x + c"], ["n!"], [r"\sqrt{2}"]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(SPELLINGS) - 1), st.integers(0, 2)), max_size=40),
       st.integers(0, 3))
def test_every_spelling_of_a_formula_lands_in_one_split(picks, seed):
    labels = [SPELLINGS[i][j % len(SPELLINGS[i])] for i, j in picks]
    out = split_labels(labels, valid=0.3, test=0.3, seed=seed)
    assert sum(len(v) for v in out.values()) == len(labels)  # nothing lost
    where = {}
    for split, lines in out.items():
        for line in lines:
            assert where.setdefault(formula_key(line), split) == split
    for split, lines in out.items():  # input order kept within a split
        assert lines == [" ".join(x.split()) for x in labels if assign(formula_key(x), 0.3, 0.3, seed) == split]


def test_shares_and_seed():
    keys = [f"x_{{{i}}}" for i in range(4000)]
    out = split_labels(keys, valid=0.1, test=0.2)
    assert abs(len(out["test"]) / 4000 - 0.2) < 0.03 and abs(len(out["valid"]) / 4000 - 0.1) < 0.03
    assert split_labels(keys, 0.1, 0.2, seed=1) != out


def test_cli_then_leakage_check_finds_none(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"{s}\n" for group in SPELLINGS for s in group) * 3 + "".join(
        f"a_{{{i}}} + b\n" for i in range(60)))
    assert main([str(corpus), "--out", str(tmp_path / "s"), "--valid", "0.2", "--test", "0.2"]) == 0
    assert "train" in capsys.readouterr().out
    files = [tmp_path / "s" / f"{s}.txt" for s in SPLITS]
    assert all(f.read_text().strip() for f in files)
    assert check_main([str(files[1]), str(files[2]), "--against", str(files[0]), "--max-leak", "0"]) == 0
    # the check can fail: a random line split of the same corpus leaks
    lines = corpus.read_text().splitlines()
    (tmp_path / "tr.txt").write_text("\n".join(lines[::2]) + "\n")
    (tmp_path / "te.txt").write_text("\n".join(lines[1::2]) + "\n")
    assert check_main([str(tmp_path / "te.txt"), "--against", str(tmp_path / "tr.txt"), "--max-leak", "0"]) == 1
    assert main([str(corpus), "--out", str(tmp_path / "s"), "--valid", "0.6", "--test", "0.5"]) == 2


def test_train_main_is_trains_own_lines_before_the_extras(tmp_path):
    corpus, extra = tmp_path / "c.txt", tmp_path / "e.txt"
    corpus.write_text("".join(f"a_{{{i}}} + b\n" for i in range(60)))
    extra.write_text("".join(f"x^{{{i}}}\n" for i in range(40)) + "a_{0} + b\n")
    assert main([str(corpus), "--extra", str(extra), "--out", str(tmp_path / "s"), "--valid", "0.2", "--test", "0.2"]) == 0
    train = (tmp_path / "s" / "train.txt").read_text().splitlines()
    main_train = (tmp_path / "s" / "train_main.txt").read_text().splitlines()
    assert main_train and all(x.startswith("a_") for x in main_train)
    assert train[:len(main_train)] == main_train
    assert all(x.startswith("x^") or x == "a_{0} + b" for x in train[len(main_train):])
