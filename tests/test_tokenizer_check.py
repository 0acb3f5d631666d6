"""python -m tokenizer.check: input handling, report contents, exit codes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokenizer import SATVocab
from tokenizer import check as check_mod
from tokenizer import chunkcheck
from tokenizer.check import main


def run_json(capsys, *args) -> tuple[int, dict]:
    rc = main([*map(str, args), "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_plain_file_report(tmp_path, capsys):
    f = tmp_path / "c.txt"
    f.write_text("x^{2}\n\\frac { 1 4 } { x }\n\nx^{2}^{3}\nx\\\n  \n\\sqrt[3]{x}\n")
    rc, r = run_json(capsys, f)
    assert rc == 0
    assert r["lines"] == 7 and r["blank"] == 2 and r["accepted"] == 4 and r["valid"] == 3
    assert r["invalid"] == {"double-script": 1, "trailing-backslash": 1}
    assert r["invalid_examples"]["double-script"][0]["where"] == f"{f}:4"
    assert r["round_trip"]["token_failures"] == 0 and r["round_trip"]["string_failures"] == 0
    assert r["lengths"]["raw_tokens"]["max"] == 9 and r["lengths"]["sat_positions"]["max"] == 5
    assert r["inventory"]["symbols"] == len({"x", "2", "\\frac", "1", "4", "\\sqrt", "[", "3", "]"})
    assert r["lines_per_second"] is None or r["lines_per_second"] > 0


def test_tsv_detection_and_crlf_multiline_quoted_field(tmp_path, capsys):
    f = tmp_path / "t.tsv"
    f.write_bytes(b'a\tx^{2}\r\nb\t"\\frac{a}{b}$\n"\r\nc\ty\r\nnotab\r\n')
    rc, r = run_json(capsys, f)
    assert rc == 0
    assert r["lines"] == 3 and r["physical_lines"] == 5 and r["continuation_lines"] == 1
    assert r["skipped"] == {"no-tab": 1}
    assert r["skipped_examples"]["no-tab"][0]["where"] == f"{f}:5"
    assert r["accepted"] == 3  # the quoted field was joined and unquoted: \frac{a}{b}$


def test_format_can_be_forced(tmp_path, capsys):
    f = tmp_path / "t.txt"
    f.write_text("a\tx\nb\ty\n")
    rc, r = run_json(capsys, f, "--format", "plain")
    assert r["inventory"]["symbols"] == 4  # the names are read as LaTeX
    rc, r = run_json(capsys, f, "--format", "tsv")
    assert r["inventory"]["symbols"] == 2


def test_encoding_and_binary_lines_are_reported(tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_bytes(b"\xef\xbb\xbfx+1\n\xff\xfe broken\nok\x00bin\ny\n")
    rc, r = run_json(capsys, f)
    assert rc == 0
    assert r["skipped"] == {"encoding": 1, "binary": 1}
    assert r["skipped_examples"]["encoding"][0]["where"] == f"{f}:2"
    assert r["accepted"] == 2 and r["inventory"]["symbols"] == 4  # BOM stripped: x + 1 y


def test_several_files_and_stdin(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    proc = subprocess.run([sys.executable, "-m", "tokenizer.check", str(f), "-", "--json"], input=b"y^{2}\nz\n",
                          capture_output=True, cwd=check_mod.__file__.rsplit("/tokenizer/", 1)[0], timeout=60)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["files"] == [str(f), "<stdin>"] and r["lines"] == 3


def test_human_report_mentions_everything(tmp_path, capsys):
    f = tmp_path / "c.txt"
    f.write_text("x^{2}\nx^{2}^{3}\n\\frac12\n")
    vocab = tmp_path / "v.json"
    SATVocab.build(["x^{2}"]).save(vocab)
    assert main([str(f), "--vocab", str(vocab), "--normalize", "--show", "1"]) == 0
    out = capsys.readouterr().out
    for needle in ["lines: 3", "double-script: 1", "round trip: token-exact 3/3", "SAT positions: p50",
                   "top symbols", "OOV vs vocabulary: 1/2 labels", "normalize would change 1", "\\frac{1}{2}"]:
        assert needle in out, needle


def test_vocab_out_and_oov(tmp_path, capsys):
    f = tmp_path / "train.txt"
    f.write_text("x^{2}\ny_{1}\n")
    vocab = tmp_path / "v.json"
    rc, r = run_json(capsys, f, "--vocab-out", vocab)
    assert rc == 0 and r["vocab_out"]["symbols"] == 3 + 4
    v = SATVocab.load(vocab)
    assert {"x", "2", "y", "1"} <= set(v.symbols)
    g = tmp_path / "test.txt"
    g.write_text("x^{3}\n")
    rc, r = run_json(capsys, g, "--vocab", vocab)
    assert r["oov"]["labels_with_oov"] == 1 and r["oov"]["symbols"] == [["3", 1]]
    assert r["oov"]["modifiers"] == []


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "missing.txt")]) == 2
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    f = tmp_path / "c.txt"
    f.write_text("x\n")
    with pytest.raises(SystemExit) as exc:
        main([str(f), "--vocab", str(bad)])
    assert exc.value.code == 2
    assert "bad.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(f), "--max-len", "0"])
    assert exc.value.code == 2


def test_exit_1_when_a_line_does_not_round_trip(tmp_path, capsys, monkeypatch):
    f = tmp_path / "c.txt"
    f.write_text("\\alpha x\ny\n")
    broken = lambda toks: "".join(toks)  # noqa: E731 - a detokenizer that forgets the space after \alpha
    monkeypatch.setattr(check_mod, "detokenize", broken)
    monkeypatch.setattr(chunkcheck, "detokenize", broken)  # the chunk path must catch it too
    rc, r = run_json(capsys, f)
    assert rc == 1
    assert r["round_trip"]["token_failures"] == 1 and r["round_trip"]["string_failures"] == 1
    assert r["round_trip"]["examples"]["token"][0]["where"] == f"{f}:1"


def test_crohme_cleaning_and_help(tmp_path, capsys):
    f = tmp_path / "t.tsv"
    f.write_text("a\t$x \\lt 1$\n")
    rc, r = run_json(capsys, f, "--crohme")
    assert r["inventory"]["symbols"] == 3
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "Exit status" in capsys.readouterr().out



@pytest.mark.parametrize("head,what", [(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "a PNG image"),
                                       (b"PK\x03\x04" + b"\x00" * 200, "a zip archive"),
                                       (bytes(range(32)) * 40, "binary data")])
def test_a_binary_file_is_refused_with_one_line(tmp_path, capsys, head, what):
    f = tmp_path / "image.png"
    f.write_bytes(head)
    assert main([str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == err.splitlines()[0] and "image.png" in err and what in err


# -- --against: test labels that also occur in the training labels ---------------------------------------
def _leak_files(tmp_path):
    train = tmp_path / "train.tsv"
    train.write_text("t1\tx^{2}\nt2\ta+b\nt3\t\\frac{1}{2}\nt4\tx^{2}\nt5\t\\alpha\\\n")  # t5 does not lex
    a = tmp_path / "a.txt"
    a.write_text("x^{2}\nx^2\ny\n\n\\dfrac12\n\\alpha\\\n")
    b = tmp_path / "b.txt"
    b.write_text("a+b\n a+b\nz\n")
    return train, a, b


def test_against_exact_vs_normalized_overlap_per_file(tmp_path, capsys):
    train, a, b = _leak_files(tmp_path)
    rc, r = run_json(capsys, a, b, "--against", train)
    assert rc == 0  # reporting only: no --max-leak
    lk = r["leakage"]
    assert lk["train_files"] == [str(train)] and lk["train_labels"] == 5 and lk["train_distinct"] == 4
    assert lk["train_distinct_normalized"] == 3 and lk["train_not_normalizable"] == 1
    fa, fb = lk["files"]
    # a: x^{2} exact; x^2 and \dfrac12 only after normalizing; y no; the blank line is not a label;
    # \alpha\ does not lex, so it cannot be normalized, yet it is byte-equal to train line 5
    assert fa["file"] == str(a)
    assert {k: fa[k] for k in ("labels", "exact", "normalized", "normalized_only", "not_normalizable")} == \
        {"labels": 5, "exact": 2, "normalized": 4, "normalized_only": 2, "not_normalizable": 1}
    # b: `a+b` exact; ` a+b` is not byte-equal (the reader keeps the space) but normalizes to it
    assert (fb["labels"], fb["exact"], fb["normalized"], fb["normalized_only"]) == (3, 1, 2, 1)
    assert lk["total"]["labels"] == 8 and lk["total"]["exact"] == 3 and lk["total"]["normalized"] == 6
    assert lk["total"]["normalized_rate"] == pytest.approx(6 / 8)
    ex = lk["examples"]
    assert ex["exact"][0] == {"where": f"{a}:1", "latex": "x^{2}", "train": f"{train}:1"}  # first occurrence
    assert ex["normalized"][0] == {"where": f"{a}:2", "latex": "x^2", "train": f"{train}:1",
                                   "train_latex": "x^{2}", "normalized": "x^{2}"}
    assert ex["normalized"][1]["where"] == f"{a}:5" and ex["normalized"][1]["train"] == f"{train}:3"
    assert [e["where"] for e in ex["exact"]] == [f"{a}:1", f"{a}:6", f"{b}:1"]
    assert ex["not_normalizable"] == []  # \alpha\ matched exactly: counted, its example is the exact one
    assert lk["max_leak"] is None and lk["exceeded"] is False
    assert r["lines"] == 9  # the ordinary check still ran over the test files


def test_against_not_normalizable_test_label_and_show(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("x\n")
    t = tmp_path / "t.txt"
    t.write_text("y\\\nx\nx\nx\n")
    rc, r = run_json(capsys, t, "--against", train, "--show", "1")
    lk = r["leakage"]
    assert lk["total"]["not_normalizable"] == 1 and lk["total"]["exact"] == 3
    assert lk["examples"]["not_normalizable"][0]["where"] == f"{t}:1"
    assert "trailing" in lk["examples"]["not_normalizable"][0]["detail"]
    assert len(lk["examples"]["exact"]) == 1


def test_against_human_report_max_leak_and_usage(tmp_path, capsys):
    train, a, b = _leak_files(tmp_path)
    assert main([str(a), "--against", str(train), "--max-leak", "0.9"]) == 0
    out = capsys.readouterr().out
    for needle in ["leakage against", "5 labels: exact 2 (40.00%), normalized 4 (80.00%; 2 only after",
                   f"normalized: {a}:2: 'x^2' ~ {train}:1: 'x^{{2}}'", f"exact: {a}:1:", "within"]:
        assert needle in out, needle
    rc, r = run_json(capsys, a, "--against", train, "--max-leak", "0.5")
    assert rc == 1 and r["leakage"]["exceeded"] is True
    rc, r = run_json(capsys, a, "--against", train, "--max-leak", "0.8")  # 4/5 is not more than 0.8
    assert rc == 0
    rc, r = run_json(capsys, a, "--against", train, "--against", train)  # repeatable; the same file twice
    assert r["leakage"]["train_labels"] == 10 and r["leakage"]["train_distinct"] == 4
    for bad in (["--max-leak", "0.5"], ["--against", str(train), "--max-leak", "2"],
                ["-", "--against", "-"]):
        with pytest.raises(SystemExit) as exc:
            main([str(a), *bad])
        assert exc.value.code == 2
    assert main([str(a), "--against", str(tmp_path / "missing.txt")]) == 2
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "--against" in help_text and "--max-leak" in help_text and "report only" in help_text


def test_against_crohme_cleaning_applies_to_both_sides(tmp_path, capsys):
    train = tmp_path / "train.tsv"
    train.write_text("a\t$x \\lt 1$\n")
    t = tmp_path / "t.tsv"
    t.write_text("b\tx < 1\n")
    rc, r = run_json(capsys, t, "--against", train)
    assert r["leakage"]["total"]["normalized"] == 0  # the $...$ stays in the label without --crohme
    rc, r = run_json(capsys, t, "--against", train, "--crohme")
    assert r["leakage"]["total"]["exact"] == 1  # $ stripped and \lt -> < on the training side


def test_against_on_real_crohme(shared_data, capsys):
    latex = shared_data / "latex"
    test, train = latex / "crohme2014_test_captions.txt", latex / "crohme2014_train_captions.txt"
    if not (test.is_file() and train.is_file()):
        pytest.skip(f"CROHME 2014 captions not found in {latex}")
    rc, r = run_json(capsys, test, "--against", train)
    lk = r["leakage"]
    assert rc == 0 and lk["train_labels"] == 8835 and lk["train_distinct"] == 4822
    t = lk["total"]
    assert t["labels"] == 986 and t["not_normalizable"] == 0
    # measured (BENCHMARKS.md, "Leakage check"): both files use the same space-separated spelling
    assert (t["exact"], t["normalized"]) == (30, 30)
    assert all(e["train"].startswith(f"{train}:") for e in lk["examples"]["exact"])
