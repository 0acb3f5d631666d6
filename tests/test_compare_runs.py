"""train.compare: quick evals placed at training minutes (two-stage runs offset by their first stage),
the final evaluation at the run's end, the table, the picture and the errors."""
from __future__ import annotations

import json

import pytest

from train.compare import main, read_curve, table


def write_run(folder, rows, *, pretrain=None, final=None, splits=("valid",)):
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 9, "cut')
    (folder / "config.json").write_text(json.dumps({"eval": {"splits": list(splits), "limit": 150}}))
    if pretrain is not None:
        (folder / "pretrain").mkdir()
        (folder / "pretrain" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pretrain))
    if final is not None:
        (folder / "eval.json").write_text(json.dumps(final))
    return folder


def ev(step, bleu):
    return {"step": step, "eval": {"greedy": {"markup_bleu4": bleu, "em": bleu / 10}}}


def test_evals_sit_at_the_minutes_their_step_was_reached(tmp_path):
    rows = [{"step": 100, "elapsed_s": 60.0}, ev(100, 0.1), {"step": 200, "elapsed_s": 180.0}, ev(150, 0.2),
            ev(200, 0.3)]
    final = {"step": 200, "results": {"valid": {"metrics": {"greedy": {"markup_bleu4": 0.35}}}}}
    c = read_curve(write_run(tmp_path / "r", rows, final=final), "markup_bleu4")
    assert [(round(m, 3), s, v) for m, s, v in c.points] == [(1.0, 100, 0.1), (2.0, 150, 0.2), (3.0, 200, 0.3)]
    assert c.final == (3.0, 200, 0.35) and c.decoder == "greedy" and c.split == "valid"


def test_a_second_stage_starts_where_the_first_ended(tmp_path):
    rows = [{"step": 50, "elapsed_s": 30.0}, ev(50, 0.4)]
    c = read_curve(write_run(tmp_path / "r", rows, pretrain=[{"step": 10, "elapsed_s": 600.0}]), "markup_bleu4")
    assert c.points == [(10.5, 50, 0.4)] and c.minutes == 10.5 and c.final is None


def test_table_picture_and_named_lines(tmp_path, capsys):
    a = write_run(tmp_path / "a", [{"step": 10, "elapsed_s": 120.0}, ev(10, 0.5)])
    b = write_run(tmp_path / "b", [{"step": 10, "elapsed_s": 60.0}, ev(10, 0.25)])
    out = tmp_path / "curves.png"
    pytest.importorskip("matplotlib", reason="the picture needs the plots extra")
    assert main([f"AR={a}", str(b), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| AR | valid[:150] | 2: 50.0 | — |" in text and "| b | valid[:150] | 1: 25.0 | — |" in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert table([], "em").count("\n") == 1


def test_steps_on_the_x_axis(tmp_path, capsys):
    """Variants beside different neighbours are read at equal steps: same points, keyed by step."""
    run = write_run(tmp_path / "r", [{"step": 1000, "elapsed_s": 600.0}, ev(1000, 0.5)],
                    final={"step": 1000, "results": {"valid": {"metrics": {"greedy": {"markup_bleu4": 0.6}}}}})
    assert main([f"HVT={run}", "--x", "steps"]) == 0
    out = capsys.readouterr().out
    assert "at training steps" in out and "| HVT | valid[:150] | 1000: 50.0 | 60.00 (10 min, step 1000) |" in out
    assert "at training minutes" in table([read_curve(run, "markup_bleu4")], "markup_bleu4")


def test_errors_name_the_folder_or_the_metric(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 1
    assert "missing: no metrics.jsonl" in capsys.readouterr().err
    run = write_run(tmp_path / "r", [{"step": 1, "elapsed_s": 1.0}, ev(1, 0.1)])
    assert main([str(run), "--metric", "exprate_le9"]) == 1
    assert "no run recorded 'exprate_le9'" in capsys.readouterr().err
