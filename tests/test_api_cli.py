"""The one-line API (train/api.py) and the `gryphone` console command (train/cli.py)."""
from __future__ import annotations

import io

import numpy as np
import pytest

from serve_helpers import micro_checkpoint, micro_data
from train.api import Result, read
from train.cli import COMMANDS, main


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    ckpt = micro_checkpoint(root)
    inks = sorted((micro_data(root).parent / "ink" / "train").glob("*.inkml"))
    return str(ckpt), inks


def test_every_input_form_reads_the_same_ink_alike(micro):
    from PIL import Image

    from datasets_prep.readers import read_inkml
    from train.serve.backend import Backend

    ckpt, inks = micro
    by_path = read(inks[0], ckpt)
    assert isinstance(by_path, Result) and by_path.latex and 0.0 <= by_path.confidence <= 1.0
    assert by_path.steps[-1] == by_path.latex or by_path.repaired
    assert len(by_path.steps) == 10 and len(by_path.step_confidence) == 10
    ink = read_inkml(inks[0].read_bytes(), str(inks[0]))
    assert read([s[:, :2].tolist() for s in ink.strokes], ckpt).latex == by_path.latex
    canvas = Backend.load(ckpt).canvas_from_strokes(ink.strokes)
    page = (255 - canvas * 255).astype(np.uint8)
    as_array, as_float = read(page, ckpt), read(page / 255.0, ckpt)
    buf = io.BytesIO()
    Image.fromarray(page).save(buf, format="PNG")
    as_pil, as_bytes = read(Image.fromarray(page), ckpt), read(buf.getvalue(), ckpt)
    assert as_array.latex == as_float.latex == as_pil.latex == as_bytes.latex


def test_the_api_names_what_is_wrong(micro, tmp_path):
    ckpt, _ = micro
    with pytest.raises(ValueError, match="strokes"):
        read([[]], ckpt)
    with pytest.raises(ValueError):
        read(tmp_path / "missing.png", ckpt)
    with pytest.raises(ValueError, match="cannot read"):
        read(3.5, ckpt)
    with pytest.raises(ValueError, match="NaN"):
        read(np.full((20, 40), np.nan), ckpt)
    with pytest.raises(ValueError, match="greedy"):
        read([[(0, 0), (5, 5)]], ckpt, sampler="greedy")
    from model import CheckpointError
    with pytest.raises(CheckpointError):
        read([[(0, 0), (5, 5)]], str(tmp_path / "no.pt"))


def test_gryphone_lists_its_commands_and_runs_each_modules_main(micro, capsys):
    assert main([]) == 2 and main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert main(["no-such"]) == 2
    ckpt, inks = micro
    assert main(["recognize", "--ckpt", ckpt, str(inks[0])]) == 0
    assert str(inks[0]) in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--help"])
    assert exit_.value.code == 0


def test_every_command_module_has_a_main():
    import importlib

    for module, _ in COMMANDS.values():
        assert callable(importlib.import_module(module).main), module


def test_a_run_folder_is_taken_for_its_checkpoint(micro):
    from pathlib import Path

    from model import load

    ckpt, _ = micro
    assert load(Path(ckpt).parent).path == Path(ckpt)


def test_a_shadowing_package_is_named_before_anything_runs(tmp_path, monkeypatch, capsys):
    import importlib.util
    import sys

    (tmp_path / "model.py").write_text("x = 1\n")
    fake = importlib.util.module_from_spec(importlib.util.spec_from_file_location("model", tmp_path / "model.py"))
    monkeypatch.setitem(sys.modules, "model", fake)
    assert main(["recognize", "x.png"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "model.py") in err and "virtual environment" in err


def test_recognize_with_nothing_to_read_fails_and_says_so(micro, tmp_path, capsys):
    ckpt, _ = micro
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no formula here")
    assert main(["recognize", "--ckpt", ckpt, "--threads", "1", str(tmp_path / "empty")]) == 1
    assert "no image or InkML file found" in capsys.readouterr().err
