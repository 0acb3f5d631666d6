"""What a finished run leaves beside its checkpoint for people: MODEL_CARD.md with the run's own
figures, curves.png (matplotlib, or Pillow without it) and, when asked, TensorBoard event files."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from model import count_params, load
from model.recognizer import inference_params
from train import run
from train.model_card import SYNTHETIC, UNKNOWN, data_source
from train.plots import plot_curves
from test_train import micro_data  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def finished(micro_data, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("run") / "micro"
    code = run.main(["--config", "micro", "--data", str(micro_data), "--out", str(out), "max_steps=30",
                     "eval.every=10", "eval.T=1,2", "log.tensorboard=true", "model.aux_reader_weight=0.5"])
    assert code == 0
    return out


def test_model_card_has_the_runs_figures(finished):
    card = (finished / "MODEL_CARD.md").read_text()
    loaded = load(finished / "ckpt.pt")
    rec = loaded.recognizer
    assert inference_params(rec) < count_params(rec)  # the auxiliary reader is training-only
    assert f"{inference_params(rec):,} parameters at inference, {count_params(rec):,} in training" in card
    assert "preset `micro`, 30 steps" in card and "on a 64x64 canvas" in card
    assert "| mathwriting | CC BY-NC-SA 4.0 |" in card
    metrics = json.loads((finished / "eval.json").read_text())["results"]["train"]["metrics"]
    for name, m in metrics.items():
        assert f"| {name} | 4 | {100 * m['em']:.2f}" in card
    assert rec.labels.size() in card and "## Intended use and limits" in card


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def test_curves_and_event_files(finished, monkeypatch, tmp_path):
    """With the extras: matplotlib's figure and TensorBoard scalars; without them: metrics.jsonl alone
    (both ways are what a user gets)."""
    assert (finished / "curves.png").exists() == _installed("matplotlib")
    assert bool(list(finished.glob("events.out.tfevents.*"))) == _installed("tensorboard")
    if _installed("tensorboard"):
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(finished))
        events.Reload()
        tags = events.Tags()["scalars"]
        assert "train/loss" in tags and any(t.startswith("eval/") for t in tags)
        assert any(t.startswith("final/train/") for t in tags)  # the final evaluation too
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no matplotlib: no curves, and no half-readable ones
    final = json.loads((finished / "eval.json").read_text())
    assert plot_curves(finished / "metrics.jsonl", tmp_path / "c.png", final=final) is None
    assert not (tmp_path / "c.png").exists()


def test_licences_by_source(tmp_path):
    (tmp_path / "demo" / "shards").mkdir(parents=True)
    (tmp_path / "demo" / "demo_data.json").write_text("{}")
    assert data_source(tmp_path / "demo" / "shards")[1] == SYNTHETIC
    for source, licence in (("crohme", "research use only"), ("mathwriting", "CC BY-NC-SA 4.0"), ("hme100k", UNKNOWN)):
        (tmp_path / source).mkdir()
        (tmp_path / source / "summary.json").write_text(json.dumps({"source": source}))
        assert data_source(tmp_path / source) == (source, licence)
    assert data_source(tmp_path / "nothing")[1] == UNKNOWN


def test_quick_evals_on_a_printed_set_carry_bleu_into_the_curves(tmp_path):
    """eval.markup makes the quick eval score BLEU-4 too, and the curves draw it beside ExpRate and CER."""
    from train.plots import _final_points, _series

    rows = [{"step": 10, "loss": 2.0}, {"step": 10, "eval": {"greedy": {"em": 0.0, "cer": 0.9, "markup_bleu4": 0.1}}},
            {"step": 20, "eval": {"greedy": {"em": 0.1, "cer": 0.5, "markup_bleu4": 0.4}}}]
    _, evals = _series(rows)
    assert evals["greedy markup_bleu4"] == [(10, 0.1), (20, 0.4)]
    final = {"step": 30, "results": {"test": {"metrics": {"greedy": {"em": 0.2, "cer": 0.4, "markup_bleu4": 0.5}}}}}
    assert _final_points(final, evals)["greedy markup_bleu4"] == (30, 0.5)
