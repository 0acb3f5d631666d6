"""Shipped weights (model/shipped.py, train/ship.py) and the writer hold-out they were chosen on
(datasets_prep/holdout.py): placing a checkpoint, finding it without --ckpt, refusing a damaged one,
and the real shipped model reading a real CROHME ink."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import model.shipped as shipped_mod
from datasets_prep.holdout import choose_writers, holdout, main as holdout_main, row_writers
from datasets_prep.shards import load_split, split_names
from model import CheckpointError, load
from model.shipped import ShippedWeightsError, resolve, shipped, shipped_names, verified
from serve_helpers import micro_checkpoint, micro_data
from train.ship import main as ship_main, place, place_ensemble


@pytest.fixture()
def weights(tmp_path, monkeypatch):
    """A weights folder holding one placed micro model, made the install's."""
    ckpt = micro_checkpoint(tmp_path, steps=20)
    folder = tmp_path / "weights"
    place(ckpt, "micro-g", "mask-predict", 3, "a micro test model, 21.91% / 22.41% of nothing", ["read", "page"], folder, onnx=False)
    monkeypatch.setattr(shipped_mod, "WEIGHTS_DIR", folder)
    return folder


def test_place_writes_a_slim_checkpoint_and_its_entry(weights, tmp_path):
    entry = json.loads((weights / "manifest.json").read_text())
    assert entry["default"] == {"read": "micro-g", "page": "micro-g"}
    item = entry["models"]["micro-g"]
    assert (item["kind"], item["sampler"], item["T"]) == ("diffusion", "mask-predict", 3)
    state = __import__("torch").load(weights / "micro-g.pt", weights_only=True)
    assert "optimizer" not in state and "ema" not in state and "rng" not in state
    run = micro_checkpoint(tmp_path, steps=20)
    assert (weights / "micro-g.pt").stat().st_size < run.stat().st_size


def test_load_without_a_path_reads_the_shipped_default(weights):
    loaded = load()
    assert loaded.shipped is not None and loaded.shipped.name == "micro-g"
    assert loaded.path == weights / "micro-g.pt"
    assert load("micro-g").shipped.name == "micro-g"
    assert shipped_names() == ["micro-g"]


def test_a_users_own_path_is_never_taken_for_a_shipped_name(weights, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "micro-g").write_bytes(b"not a checkpoint")
    path, item = resolve("micro-g")
    assert item is None and path == Path("micro-g")
    with pytest.raises(CheckpointError, match="micro-g"):
        load("micro-g")


def test_a_damaged_shipped_checkpoint_is_refused_by_name(weights):
    target = weights / "micro-g.pt"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(ShippedWeightsError, match="damaged"):
        load()


def test_an_install_without_weights_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(shipped_mod, "WEIGHTS_DIR", tmp_path / "none")
    with pytest.raises(ShippedWeightsError, match="no shipped weights"):
        load()
    assert shipped_names() == []


def test_predict_without_ckpt_uses_the_shipped_model_and_its_decoder(weights, tmp_path, capsys):
    from train.predict import main

    inks = sorted((micro_data(tmp_path).parent / "ink" / "train").glob("*.inkml"))
    assert main([str(inks[0])]) == 0
    err = capsys.readouterr().err
    assert "shipped micro-g" in err and "mask-predict-T3" in err


def test_serve_backend_without_ckpt_takes_the_page_model(weights):
    from train.serve.backend import Backend

    backend = Backend.load(None)
    assert backend.sampler == "mask-predict" and "micro-g" in backend.source


def test_a_shipped_printed_model_is_what_printed_input_gets(weights, tmp_path, capsys):
    """`predict --printed`, `read(..., printed=True)` and the server's upload box take the manifest's
    `printed` default; the other uses keep theirs."""
    from train.api import read
    from train.predict import main
    from train.serve.__main__ import _printed_backend

    assert _printed_backend(None, "cpu") is None  # none ships yet: the page has no printed box
    place(micro_checkpoint(tmp_path, "ar", steps=20), "micro-print", "greedy", 1, "a micro printed model",
          ["printed"], weights, onnx=False, terms="test terms")
    assert json.loads((weights / "manifest.json").read_text())["default"]["printed"] == "micro-print"
    assert load(use="printed").shipped.name == "micro-print" and load().shipped.name == "micro-g"
    inks = sorted((micro_data(tmp_path).parent / "ink" / "train").glob("*.inkml"))
    assert main([str(inks[0]), "--printed"]) == 0
    assert "shipped micro-print" in capsys.readouterr().err
    from train.api import _backend
    _backend.cache_clear()  # read() keeps its models; these are the test folder's
    try:
        assert read(inks[0], printed=True).model == "the shipped micro-print"
        assert read(inks[0]).model == "the shipped micro-g"
    finally:
        _backend.cache_clear()
    assert _printed_backend(None, "cpu").kind == "ar" and _printed_backend("none", "cpu") is None


def test_an_ensemble_of_shipped_models_ships_without_copying_weights(weights, tmp_path):
    """--members: NAME.json lists the members' checkpoints with their digests; the default then loads
    as an ensemble, and a damaged member is refused by name."""
    from model.ensemble import EnsembleRecognizer

    ar20, ar30 = micro_checkpoint(tmp_path, "ar", steps=20), micro_checkpoint(tmp_path, "ar", steps=30)
    place(ar20, "micro-a", "greedy", 1, "a", [], weights, onnx=False)
    place(ar30, "micro-b", "greedy", 1, "b", [], weights, onnx=False)
    entry = place_ensemble("micro-ab", ["micro-a", "micro-b"], "beam", 3, "both", ["read"], weights)
    assert (entry["kind"], entry["checkpoint"], entry["onnx"], entry["members"]) == (
        "ensemble", "micro-ab.json", None, ["micro-a", "micro-b"])
    assert sorted(p.name for p in weights.glob("*.pt")) == ["micro-a.pt", "micro-b.pt", "micro-g.pt"]
    loaded = load()
    assert isinstance(loaded.recognizer, EnsembleRecognizer) and loaded.shipped.name == "micro-ab"
    assert (loaded.shipped.sampler, loaded.shipped.beam) == ("beam", 3)
    with pytest.raises(ValueError, match="not shipped"):
        place_ensemble("x", ["micro-a", "nope"], "greedy", 1, "", [], weights)
    with pytest.raises(CheckpointError, match="all token recognizers or all GryphOne"):
        place_ensemble("x", ["micro-a", "micro-g"], "greedy", 1, "", [], weights)
    assert not (weights / "x.json").exists()
    assert ship_main(["--members", "micro-a", "--name", "y", "--sampler", "remask", "--summary", "",
                      "--folder", str(weights)]) == 1      # token members, a GryphOne sampler: refused by load
    assert not (weights / "y.json").exists()
    with pytest.raises(SystemExit) as stop:
        ship_main(["--members", "micro-a", "--name", "y", "--sampler", "nucleus", "--summary", "", "--folder", str(weights)])
    assert stop.value.code == 2
    (weights / "micro-b.pt").write_bytes((weights / "micro-b.pt").read_bytes() + b"\0")
    with pytest.raises(CheckpointError, match="micro-b.pt: damaged"):
        load()


def test_an_ensemble_of_shipped_gryphone_models_keeps_its_sampler_and_steps(weights, tmp_path):
    from model.sat_ensemble import SATEnsemble

    place(micro_checkpoint(tmp_path, steps=30), "micro-g2", "mask-predict", 3, "g2", [], weights, onnx=False)
    entry = place_ensemble("micro-gg", ["micro-g", "micro-g2"], "mask-predict", 1, "both", ["page"], weights, T=4)
    assert (entry["sampler"], entry["T"]) == ("mask-predict", 4)
    loaded = load(None, use="page")
    assert isinstance(loaded.recognizer, SATEnsemble) and loaded.recognizer.default_T == 4
    assert loaded.recognizer.step_samplers == ("remask", "remask-keep", "mask-predict")


def test_place_refuses_a_decoder_the_model_lacks(tmp_path):
    with pytest.raises(ValueError, match="greedy"):
        place(micro_checkpoint(tmp_path, steps=20), "x", "greedy", 1, "", [], tmp_path / "w", onnx=False)
    assert not (tmp_path / "w" / "x.pt").exists()


# --- the writer hold-out ---------------------------------------------------------------------------


def test_choose_writers_takes_whole_writers_until_the_fraction():
    writers = ["a"] * 10 + ["b"] * 5 + ["c"] * 5 + ["d"] * 80
    chosen = choose_writers(writers, 0.1, seed=0)
    assert sum(w in chosen for w in writers) >= 10
    assert choose_writers(writers, 0.1, seed=0) == chosen


def test_holdout_splits_share_no_writer_and_keep_every_row(tmp_path):
    root = micro_data(tmp_path)
    target = tmp_path / "copy"
    __import__("shutil").copytree(root, target)
    rec = holdout(target, fraction=0.3, seed=1) if len(set(row_writers(load_split(target / "train")))) > 1 else None
    if rec is None:
        pytest.skip("the micro inks have one writer")
    fit, valid = load_split(target / "fit"), load_split(target / "valid")
    assert fit.num_rows + valid.num_rows == load_split(target / "train").num_rows
    assert not set(row_writers(fit)) & set(row_writers(valid))
    assert {"train", "fit", "valid"} <= set(split_names(target))


def test_holdout_cli_refuses_bad_arguments(tmp_path, capsys):
    assert holdout_main([str(tmp_path), "--fraction", "1.5"]) == 2
    assert "fraction" in capsys.readouterr().err
    assert holdout_main([str(tmp_path / "nowhere")]) == 2


def test_holdout_on_real_crohme_is_writer_disjoint(shared_data, tmp_path):
    """CROHME train's writers (annotations; MathBrush's from its file names) never straddle fit/valid."""
    crohme = shared_data / "crohme" / "train" / "expressmatch"
    if not crohme.is_dir():
        pytest.skip(f"{crohme} absent")
    from datasets_prep.inkml import convert

    convert("crohme", inputs=[crohme], out=tmp_path / "s", size=(32, 96), workers=1, progress=False)
    split = split_names(tmp_path / "s")[0]
    rec = holdout(tmp_path / "s", source=split, fraction=0.2, seed=0)
    fit_w, valid_w = set(row_writers(load_split(tmp_path / "s" / "fit"))), set(row_writers(load_split(tmp_path / "s" / "valid")))
    assert not fit_w & valid_w and len(valid_w) == rec["writers"]["valid"] >= 2


# --- the weights this repository ships ----------------------------------------------------------------


def test_the_shipped_default_reads_a_real_crohme_ink(shared_data):
    names = shipped_names()
    if not names:
        pytest.skip("this checkout carries no shipped weights (model/weights/manifest.json)")
    loaded = load()
    assert verified(shipped()) == loaded.path
    ink = shared_data / "crohme" / "test2014"
    files = sorted(ink.glob("*.inkml"))[:8] if ink.is_dir() else []
    if not files:
        pytest.skip(f"{ink} absent")
    from datasets_prep.readers import read_inkml
    from datasets_prep.canvas import draw_ink
    import torch

    from model import DecodeSpec

    images = torch.stack([torch.from_numpy(draw_ink(loaded.render, read_inkml(f.read_bytes(), str(f))))[None]
                          for f in files]).float()
    spec = DecodeSpec(loaded.shipped.sampler, T=loaded.shipped.T)
    out = loaded.recognizer.recognize(images, spec)
    assert len(out) == len(files) and all(isinstance(s, str) and s for s in out)


def _shipped_or_skip():
    if not shipped_names():
        pytest.skip("this checkout carries no shipped weights (model/weights/manifest.json)")
    return shipped()


def test_the_shipped_default_reads_the_projects_own_inks_the_same_every_time(repo_root):
    """No real data needed: the fixtures' CROHME-format inks, through the API, alone and as a batch."""
    item = _shipped_or_skip()
    from train.api import read
    from train.predict import recognize_all
    from train.predict_inputs import iter_inputs

    inks = sorted((repo_root / "fixtures" / "crohme" / "test").glob("*.inkml"))[:6]
    alone = [read(p) for p in inks]
    assert all(r.latex and 0.0 <= r.confidence <= 1.0 and r.model.endswith(item.name) for r in alone)
    loaded = load()
    from model import DecodeSpec
    batch: list[str] = []
    recognize_all(loaded.recognizer, iter_inputs(inks, loaded.render), DecodeSpec(item.sampler, T=item.T), 4,
                  lambda it, latex, conf: batch.append(latex))
    assert batch == [r.latex for r in alone]


def test_the_shipped_onnx_folder_reads_what_the_checkpoint_reads(repo_root):
    item = _shipped_or_skip()
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    if item.onnx is None:
        pytest.skip(f"{item.name} ships no ONNX folder")
    import torch

    from datasets_prep.canvas import draw_ink
    from datasets_prep.readers import read_inkml
    from model import DecodeSpec

    torch_model, onnx_model = load(), load(item.onnx)
    inks = sorted((repo_root / "fixtures" / "crohme" / "test").glob("*.inkml"))
    images = torch.stack([torch.from_numpy(draw_ink(torch_model.render, read_inkml(p.read_bytes(), str(p))))[None]
                          for p in inks])
    spec = DecodeSpec(item.sampler, T=item.T)
    assert onnx_model.recognizer.recognize(images, spec) == torch_model.recognizer.recognize(images, spec)


@pytest.mark.parametrize("module", ["train.predict", "train.eval", "train.export_onnx", "train.serve.__main__"])
def test_help_names_a_shipped_summary_with_a_percent_sign(module, weights, capsys):
    """argparse %-formats help text: a summary such as "21.91% ExpRate" must print, not raise."""
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    assert "21.91% / 22.41%" in " ".join(capsys.readouterr().out.split())


def test_the_shipped_printed_default_reads_a_typeset_formula_alike_from_checkpoints_and_onnx():
    """The `printed` default (an ensemble file over shipped checkpoints, their digests checked) reads a
    formula drawn by the project's layout engine, the same every time and the same from its ONNX file."""
    if "printed" not in (json.loads((shipped_mod.WEIGHTS_DIR / "manifest.json").read_text()).get("default", {})
                         if (shipped_mod.WEIGHTS_DIR / "manifest.json").is_file() else {}):
        pytest.skip("this checkout ships no printed model")
    import numpy as np

    from datasets_prep.synth.printed import render_print
    from train.api import read

    image = render_print(r"\frac{a}{b}+x^{2}")
    first, again = read(image, printed=True), read(np.array(image), printed=True)
    assert first.latex and first.latex == again.latex and 0.0 <= first.confidence <= 1.0
    item = shipped(use="printed")
    if item.onnx is None or importlib.util.find_spec("onnxruntime") is None:
        return
    assert read(image, ckpt=str(item.onnx), sampler=item.sampler).latex == first.latex
