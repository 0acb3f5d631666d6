"""A fifth recognizer from one package (tests/toy_recognizer) and one registry line goes through every
route the four take: training (micro) with its final evaluation and model card, evaluation, prediction,
the page's backend and the ONNX export (decoded without its checkpoint), touching no other file."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model.registry import RECOGNIZERS
from test_train import micro_data  # noqa: F401  (the fixture)
from toy_recognizer import ToyRecognizer


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(RECOGNIZERS, "toy", ToyRecognizer)  # the registry line


def test_a_fifth_recognizer_trains_evaluates_predicts_serves_and_exports(registered, micro_data, tmp_path,  # noqa: F811
                                                                         capsys):
    from train import eval as eval_cli, export_onnx, predict, run
    from train.serve.backend import Backend

    torch.set_num_threads(1)
    out = tmp_path / "toy"
    assert run.main(["--config", "micro", "--data", str(micro_data), "--out", str(out), "model.kind=toy",
                     "model.max_len=40", "max_steps=40", "log_every=20", "ckpt_every=0", "threads=1"]) == 0
    ckpt = out / "ckpt.pt"
    report = json.loads((out / "eval.json").read_text())
    assert '"greedy"' in json.dumps(report) and "toy (convolutional encoder" in (out / "MODEL_CARD.md").read_text()

    assert eval_cli.main(["--ckpt", str(ckpt), "--data", str(micro_data), "--splits", "train",
                          "--json", str(tmp_path / "eval.json")]) == 0
    inks = sorted((Path(micro_data).parent / "ink").rglob("*.inkml"))
    assert predict.main(["--ckpt", str(ckpt), str(inks[0]), "--jsonl", str(tmp_path / "p.jsonl")]) == 0
    row = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert isinstance(row["latex"], str)

    backend = Backend.load(str(ckpt))
    canvas = np.zeros(backend.image_size, np.float32)
    canvas[20:30, 10:50] = 1
    reading = backend.recognize(canvas)
    assert isinstance(reading.latex, str) and not backend.has_steps

    folder = tmp_path / "onnx"
    assert export_onnx.main(["--ckpt", str(ckpt), "--out", str(folder), "--check"]) == 0
    assert "decode identically" in capsys.readouterr().out
    spec = json.loads((folder / "gryphone-onnx.json").read_text())
    assert spec["kind"] == "toy" and spec["decoder_graph"] == "ar-cached-step"
    assert predict.main(["--ckpt", str(folder), str(inks[0]), "--jsonl", str(tmp_path / "q.jsonl")]) == 0
    assert json.loads((tmp_path / "q.jsonl").read_text().splitlines()[0])["latex"] == row["latex"]


def test_a_recognizer_without_an_export_hook_is_refused_before_anything_is_written(registered, tmp_path):
    from model.onnx_export import export_onnx
    from model.load import Loaded
    from builders import token_labels
    from datasets_prep.render_spec import RenderSpec
    from toy_recognizer import ToyConfig

    class NoExport(ToyRecognizer):
        def onnx_graphs(self):
            return super(ToyRecognizer, self).onnx_graphs()  # the base class: no hook

    rec = NoExport(ToyConfig(max_len=12), RenderSpec((32, 64)), token_labels())
    with pytest.raises(ValueError, match="has no ONNX export"):
        export_onnx(Loaded(rec, rec.render, rec.labels, {}, tmp_path / "ckpt.pt"), tmp_path / "x")
    assert not list((tmp_path / "x").glob("*.onnx"))
