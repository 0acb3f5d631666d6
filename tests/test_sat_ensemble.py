"""Ensembles of GryphOne models (model/sat_ensemble.py): an ensemble of one model refines exactly as the
model does, each step is the documented average, the export (model/onnx_ensemble.py) decodes what the
checkpoints do with every sampler, without torch, and members that cannot refine together are refused."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from builders import BLOCK_TORCH, tiny_model
from model import CheckpointError, DecodeSpec, load
from model.ensemble_spec import ENSEMBLE_FILE, read_ensemble, write_ensemble
from model.gryphone.diffusion import _no_mask
from model.sat_ensemble import SATEnsemble
from test_ensemble import _save

SAMPLERS = [DecodeSpec("remask", T=4, seed=3, valid=False), DecodeSpec("remask-keep", T=4, seed=1, valid=False),
            DecodeSpec("mask-predict", T=4, valid=False), DecodeSpec("mask-predict", T=1)]


def _gryphone(seed: int, **kw):
    torch.manual_seed(seed)
    return tiny_model("diffusion", canvas=(32, 128), **kw).eval()


def test_an_ensemble_of_one_refines_as_the_model_does():
    """Alone and twice over (the mean of equal log-probabilities), every sampler, every step of the
    refinement history and the confidences are the model's own."""
    rec = _gryphone(0)
    images = torch.rand(3, 1, 32, 128)
    for spec in SAMPLERS:
        want_h, want_c = [], []
        want = rec.recognize(images, spec, history=want_h, confidences=want_c)
        for ens in (SATEnsemble([rec]), SATEnsemble([rec, rec])):
            got_h, got_c = [], []
            assert ens.recognize(images, spec, history=got_h, confidences=got_c) == want, spec
            assert len(got_h) == len(want_h) and all(torch.equal(a[0], b[0]) for a, b in zip(got_h, want_h))
            assert got_c == pytest.approx(want_c, abs=1e-5)


def test_each_step_averages_the_members_log_probabilities():
    a, b = _gryphone(0), _gryphone(1)
    images = torch.rand(2, 1, 32, 128)
    step, memories = SATEnsemble([a, b]).sat_steps(images)
    sym = torch.randint(0, 6, (2, a.cfg.max_len))
    mod = torch.zeros_like(sym)
    got = step(sym, mod, memories)
    outs = [m.decoder(sym, mod, m.decoder.memory_kv(m.encoder(images))) for m in (a, b)]
    for k in ("sym", "mod"):
        want = (_no_mask(outs[0][k]).log_softmax(-1) + _no_mask(outs[1][k]).log_softmax(-1)) / 2
        assert torch.allclose(got[k], want, atol=1e-6)
    assert SATEnsemble([a, b]).recognize(images) == SATEnsemble([a, b], default_sampler="mask-predict").recognize(
        images, DecodeSpec("mask-predict", T=10))   # the default decoder: mask-predict, T=10


def test_members_that_cannot_refine_together_are_refused():
    a = _gryphone(0)
    with pytest.raises(ValueError, match="window is"):
        SATEnsemble([a, _gryphone(1, max_len=a.cfg.max_len + 4)], ["a", "b"])
    with pytest.raises(ValueError, match="all token recognizers or all GryphOne"):
        SATEnsemble([a, tiny_model("ar", canvas=(32, 128))], ["a", "ar"])
    with pytest.raises(ValueError, match="sampler 'greedy'"):
        SATEnsemble([a], default_sampler="greedy")
    with pytest.raises(ValueError, match="train its members"):
        SATEnsemble([a]).loss(torch.rand(1, 1, 32, 128), {})


def test_the_ensemble_file_and_cli_choose_a_gryphone_sampler(tmp_path, capsys):
    from train import ensemble as cli

    _save(_gryphone(0), tmp_path / "a.pt"), _save(_gryphone(1), tmp_path / "b.pt")
    assert cli.main([str(tmp_path / "a.pt"), str(tmp_path / "b.pt"), "--out", str(tmp_path / "e.json")]) == 0
    assert "mask-predict" in capsys.readouterr().out
    spec = read_ensemble(tmp_path / "e.json")
    assert (spec.sampler, spec.T) == ("mask-predict", 10)
    loaded = load(tmp_path / "e.json")
    assert isinstance(loaded.recognizer, SATEnsemble) and loaded.recognizer.title == "an ensemble of 2 (GryphOne x2)"
    assert cli.main([str(tmp_path / "a.pt"), "--out", str(tmp_path / "g.json"), "--sampler", "greedy"]) == 1
    assert "sampler 'greedy'" in capsys.readouterr().err and not (tmp_path / "g.json").exists()
    (tmp_path / "t.json").write_text(json.dumps({"format": "gryphone-ensemble-1", "members": ["a.pt"],
                                                 "sampler": "remask", "T": 5000}))
    with pytest.raises(CheckpointError, match="T 1..1000"):
        load(tmp_path / "t.json")


def test_an_exported_gryphone_ensemble_decodes_what_the_checkpoints_do(tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from model.onnx_export import export_onnx

    _save(_gryphone(0), tmp_path / "a.pt"), _save(_gryphone(1), tmp_path / "b.pt")
    ens = load(write_ensemble(tmp_path / "ens.json", ["a.pt", "b.pt"], "remask", T=6))
    export_onnx(ens, tmp_path / "onnx")
    spec = read_ensemble(tmp_path / "onnx" / ENSEMBLE_FILE)
    assert (spec.sampler, spec.T) == ("remask", 6)                       # its default decoder kept
    onnx_ens = load(tmp_path / "onnx").recognizer
    assert type(onnx_ens).__name__ == "ExportedEnsemble" and onnx_ens.step_samplers == ens.recognizer.step_samplers
    images = torch.rand(3, 1, 32, 128)
    for spec in SAMPLERS:
        conf_t, conf_o = [], []
        assert onnx_ens.recognize(images, spec, confidences=conf_o) == \
            ens.recognizer.recognize(images, spec, confidences=conf_t), spec
        assert conf_o == pytest.approx(conf_t, abs=1e-4)
    np.save(tmp_path / "x.npy", images.numpy())
    code = BLOCK_TORCH + """
import numpy as np
from model import DecodeSpec, load
rec = load(sys.argv[1]).recognizer
out = rec.recognize(np.load(sys.argv[2]), DecodeSpec("mask-predict", T=4, valid=False))
assert "torch" not in sys.modules
print(json.dumps(out))
"""
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "onnx"), str(tmp_path / "x.npy")],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout) == ens.recognizer.recognize(images, SAMPLERS[2])


def test_pick_members_orders_by_score_and_keeps_the_smallest_best_prefix(tmp_path, capsys):
    """benchmarks/pick_members.py on micro runs: each candidate scored alone, the prefixes in that order,
    the chosen file written and loadable; the tie rule keeps fewer members."""
    from serve_helpers import micro_checkpoint, micro_data
    from test_benchmarks_import import load_script

    pick = load_script("pick_members")
    assert pick.choose({1: 0.40, 2: 0.43, 3: 0.434}) == 2 and pick.choose({1: 0.5, 2: 0.49}) == 1
    import shutil

    a, b = tmp_path / "r20" / "ckpt.pt", tmp_path / "r30" / "ckpt.pt"   # copies: the cached runs sit elsewhere
    for steps, where in ((20, a), (30, b)):
        where.parent.mkdir()
        shutil.copy(micro_checkpoint(tmp_path, steps=steps), where)
    data = micro_data(tmp_path)
    split = next(p.name for p in data.iterdir() if p.is_dir())
    out = tmp_path / "ens.json"
    assert pick.main([str(a), str(b), "--data", str(data), "--split", split, "--sampler", "mask-predict",
                      "--T", "2", "--out", str(out), "--json", str(tmp_path / "t.json")]) == 0
    table = json.loads((tmp_path / "t.json").read_text())
    assert set(table["alone"]) == {str(a), str(b)} and table["chosen"] in (1, 2)
    assert (out.parent / "ens-k2.json").is_file() and len(read_ensemble(out).members) == table["chosen"]
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(out)
