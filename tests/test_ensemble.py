"""Ensembles of token recognizers (model/ensemble.py): the step hook each recognizer gives
(`token_steps`) decodes what its own search does, the averaging rule is the one documented, an exported
ensemble decodes step for step what the checkpoints do, and a hostile ensemble file is refused by name."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from builders import BLOCK_TORCH, tiny_model
from model import CheckpointError, DecodeSpec, load
from model.checkpoint import save_checkpoint
from model.ensemble import EnsembleRecognizer, mean_step
from model.ensemble_spec import ENSEMBLE_FILE, read_ensemble, write_ensemble

HVT_SMALL = {"res_channels": (8, 8, 16, 16), "enc_dim": 32, "emb_dim": 16, "attn_dim": 16}


def _model(kind: str, seed: int, **kw):
    torch.manual_seed(seed)
    options = {"posformer": {"encoder": "vit"}, "hvt": HVT_SMALL}.get(kind, {})
    rec = tiny_model(kind, canvas=(32, 128), **{**options, **kw}).eval()
    if kind != "diffusion":
        with torch.no_grad():  # EOS rarely wins, so most rows run long and every step is compared
            rec.decoder.head.bias[2] -= 3.0
    return rec


def _save(rec, path: Path) -> Path:
    from dataclasses import asdict

    from model.checkpoint import FORMAT
    save_checkpoint(path, {"format": FORMAT, "model": rec.state_dict(), "model_config": asdict(rec.cfg),
                           "render": rec.render.to_dict(), "labels": rec.labels.to_dict(), "step": 7,
                           "train_config": {}})
    return path


SPECS = [DecodeSpec("greedy", valid=False), DecodeSpec("beam", beam=3, valid=False)]


@pytest.mark.parametrize("kind", ["ar", "posformer", "hvt"])
def test_the_step_hook_decodes_what_the_recognizer_does(kind):
    """An ensemble of one model, and of that model twice (the mean of equal log-probabilities), reads
    exactly what the model reads alone: the hook and the recognizer's own search agree."""
    rec = _model(kind, 0)
    images = torch.rand(3, 1, 32, 128)
    for spec in SPECS:
        want = rec.recognize(images, spec)
        assert EnsembleRecognizer([rec]).recognize(images, spec) == want, spec
        assert EnsembleRecognizer([rec, rec]).recognize(images, spec) == want, spec


def test_each_step_averages_the_members_log_probabilities():
    a, b = _model("ar", 0), _model("hvt", 1)   # two kinds, one vocabulary and canvas
    images = torch.rand(2, 1, 32, 128)
    ens = EnsembleRecognizer([a, b])
    last = torch.full((2,), 1, dtype=torch.long)  # BOS
    want = (a.token_steps(images).rows()(last, 0).log_softmax(-1) + b.token_steps(images).rows()(last, 0).log_softmax(-1)) / 2
    assert torch.allclose(ens.token_steps(images).rows()(last, 0), want, atol=1e-6)
    steps = [a.token_steps(images).rows(), b.token_steps(images).rows()]
    assert torch.allclose(mean_step(steps)(last, 0), want, atol=1e-6)


def test_confidences_are_the_averaged_distributions_probabilities():
    ens = EnsembleRecognizer([_model("ar", 0), _model("ar", 1)])
    images = torch.rand(2, 1, 32, 128)
    conf: list = []
    out = ens.recognize(images, DecodeSpec("greedy", valid=False), confidences=conf)
    assert len(out) == len(conf) == 2 and all(c is not None and 0.0 <= c <= 1.0 for c in conf)


def test_an_ensemble_file_loads_checkpoints_and_checks_their_digests(tmp_path):
    import hashlib

    a, b = _save(_model("ar", 0), tmp_path / "a.pt"), _save(_model("hvt", 1), tmp_path / "b.pt")
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)]
    path = write_ensemble(tmp_path / "ens.json", ["a.pt", "b.pt"], "beam", 3, digests)
    loaded = load(path)
    assert isinstance(loaded.recognizer, EnsembleRecognizer) and loaded.recognizer.default_sampler == "beam"
    assert loaded.step == 14 and len(loaded.members) == 2
    assert loaded.recognizer.title == "an ensemble of 2 (the AR baseline, HVT)"
    from train.serve.backend import Backend
    backend = Backend.load(str(path))
    reading = backend.recognize(torch.rand(32, 128).numpy())
    assert (backend.sampler, backend.beam) == ("beam", 3) and isinstance(reading.latex, str)
    images = torch.rand(2, 1, 32, 128)
    direct = EnsembleRecognizer([load(a).recognizer, load(b).recognizer])
    assert loaded.recognizer.recognize(images, SPECS[0]) == direct.recognize(images, SPECS[0])
    b.write_bytes(b.read_bytes() + b"\0")
    with pytest.raises(CheckpointError, match="b.pt: damaged"):
        load(path)


@pytest.mark.parametrize("spec, cause", [
    ({"members": ["../a.pt"]}, "not a relative path"),
    ({"members": ["/etc/passwd"]}, "not a relative path"),
    ({"members": ["sub/../../a.pt"]}, "not a relative path"),
    ({"members": ["a.pt/"]}, "not a relative path"),
    ({"members": [3]}, "not a relative path"),
    ({"members": ["missing.pt"]}, "missing"),
    ({"members": []}, "members must list"),
    ({"members": ["a.pt"], "combine": "max"}, "combine"),
    ({"members": ["a.pt"], "sha256": ["zz"]}, "sha256"),
    ({"members": ["a.pt"], "sampler": "remask"}, "sampler 'remask'"),
    ({"members": ["a.pt"], "sampler": "nucleus"}, "sampler 'nucleus'"),
    ({"members": ["a.pt"], "T": 0}, "T 1.."),
    ({"members": ["a.pt"], "beam": True}, "beam must be"),
    ({"members": ["link.pt"]}, "outside"),
])
def test_hostile_ensemble_files_are_refused_by_name(tmp_path, spec, cause):
    _save(_model("ar", 0), tmp_path / "a.pt")
    (tmp_path / "link.pt").symlink_to("/etc/hostname")
    path = tmp_path / "ens.json"
    path.write_text(json.dumps({"format": "gryphone-ensemble-1", **spec}))
    with pytest.raises(CheckpointError, match=cause) as err:
        load(path)
    assert str(path) in str(err.value)


def test_members_that_cannot_join_are_refused(tmp_path):
    from builders import token_labels

    ar = _save(_model("ar", 0), tmp_path / "ar.pt")
    _save(_model("diffusion", 0), tmp_path / "gry.pt")
    torch.manual_seed(0)
    other = tiny_model("ar", canvas=(32, 64)).eval()        # another canvas
    _save(other, tmp_path / "small.pt")
    assert token_labels().vocab.tokens == other.labels.vocab.tokens
    for members, cause in [(["ar.pt", "gry.pt"], "all token recognizers or all GryphOne"), (["ar.pt", "small.pt"], "drawn otherwise")]:
        path = write_ensemble(tmp_path / "e.json", ["ar.pt"])
        path.write_text(json.dumps({"format": "gryphone-ensemble-1", "members": members}))
        with pytest.raises(CheckpointError, match=cause):
            load(path)
    nested = write_ensemble(tmp_path / "inner.json", ["ar.pt"])
    (tmp_path / "outer.json").write_text(json.dumps({"format": "gryphone-ensemble-1", "members": [nested.name]}))
    with pytest.raises(CheckpointError, match="itself an ensemble"):
        load(tmp_path / "outer.json")
    (tmp_path / "not.json").write_text('{"format": "something-else"}')
    with pytest.raises(CheckpointError, match="not a gryphone ensemble"):
        read_ensemble(tmp_path / "not.json")


def test_an_exported_ensemble_decodes_what_the_checkpoints_do(tmp_path):
    """train.export_onnx's ensemble folder (one export per member + gryphone-ensemble.json) reads the
    same LaTeX with the same confidences as the PyTorch ensemble, greedy and beam, members of two kinds."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from train import export_onnx as export_cli

    _save(_model("ar", 0), tmp_path / "a.pt"), _save(_model("hvt", 1), tmp_path / "b.pt")
    write_ensemble(tmp_path / "ens.json", ["a.pt", "b.pt"], "beam", 3)
    assert export_cli.main(["--ckpt", str(tmp_path / "ens.json"), "--out", str(tmp_path / "onnx"), "--check"]) == 0
    assert sorted(p.name for p in (tmp_path / "onnx").iterdir()) == [ENSEMBLE_FILE, "m1", "m2"]
    exported = read_ensemble(tmp_path / "onnx" / ENSEMBLE_FILE)
    assert (exported.names, exported.sampler, exported.beam) == (("m1", "m2"), "beam", 3)   # its decoder kept
    torch_ens, onnx_ens = load(tmp_path / "ens.json").recognizer, load(tmp_path / "onnx").recognizer
    assert type(onnx_ens).__name__ == "ExportedEnsemble" and onnx_ens.samplers == ("greedy", "beam")
    from model.onnx_ensemble import read_any_export
    assert read_any_export(tmp_path / "onnx", threads=1).precision == "fp32"
    with pytest.raises(CheckpointError, match="no int8 graphs"):
        read_any_export(tmp_path / "onnx", precision="int8")
    images = torch.rand(3, 1, 32, 128)
    for spec in SPECS:
        conf_t, conf_o = [], []
        assert onnx_ens.recognize(images, spec, confidences=conf_o) == torch_ens.recognize(images, spec, confidences=conf_t)
        assert conf_o == pytest.approx(conf_t, abs=1e-4)


NO_TORCH = BLOCK_TORCH + """
import numpy as np
from model import DecodeSpec, load
rec = load(sys.argv[1]).recognizer
out = rec.recognize(np.load(sys.argv[2]), DecodeSpec("greedy", valid=False))
assert "torch" not in sys.modules
print(json.dumps(out))
"""


def test_an_exported_ensemble_reads_without_torch(tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    import subprocess
    import sys

    import numpy as np

    from model.onnx_export import export_onnx

    _save(_model("ar", 0), tmp_path / "a.pt"), _save(_model("ar", 1), tmp_path / "b.pt")
    ens = load(write_ensemble(tmp_path / "ens.json", ["a.pt", "b.pt"]))
    export_onnx(ens, tmp_path / "onnx")
    images = torch.rand(2, 1, 32, 128)
    np.save(tmp_path / "x.npy", images.numpy())
    res = subprocess.run([sys.executable, "-c", NO_TORCH, str(tmp_path / "onnx"), str(tmp_path / "x.npy")],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout) == ens.recognizer.recognize(images, DecodeSpec("greedy", valid=False))


def test_an_ensemble_is_not_trained():
    ens = EnsembleRecognizer([_model("ar", 0)])
    with pytest.raises(ValueError, match="train its members"):
        ens.loss(torch.rand(1, 1, 32, 128), {})
    with pytest.raises(ValueError, match="no token step hook"):
        EnsembleRecognizer([_model("diffusion", 0)])


def test_the_ensemble_cli_writes_a_file_that_loads_and_keeps_nothing_on_failure(tmp_path, capsys):
    from train import ensemble as cli

    (tmp_path / "r1").mkdir(), (tmp_path / "r2").mkdir()
    _save(_model("ar", 0), tmp_path / "r1" / "ckpt.pt"), _save(_model("hvt", 1), tmp_path / "r2" / "ckpt.pt")
    _save(_model("diffusion", 0), tmp_path / "g.pt")
    out = tmp_path / "ens.json"
    assert cli.main([str(tmp_path / "r1"), str(tmp_path / "r2"), "--out", str(out), "--digests",
                     "--sampler", "beam", "--beam", "3"]) == 0
    spec = read_ensemble(out)
    assert spec.names == ("r1/ckpt.pt", "r2/ckpt.pt") and all(spec.sha256) and (spec.sampler, spec.beam) == ("beam", 3)
    assert isinstance(load(out).recognizer, EnsembleRecognizer)
    assert cli.main([str(tmp_path / "r1"), "--out", str(tmp_path / "sub" / "e.json")]) == 1
    assert "outside" in capsys.readouterr().err
    assert cli.main([str(tmp_path / "r1"), str(tmp_path / "g.pt"), "--out", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert "all token recognizers or all GryphOne" in err and str(tmp_path / "bad.json") in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".json") == ["ens.json"]
    with pytest.raises(SystemExit):
        cli.main([str(tmp_path / "r1"), "--out", str(tmp_path / "e.txt")])


def test_the_ensemble_file_round_trips(tmp_path_factory):
    """Whatever write_ensemble writes, read_ensemble reads back: members (with subfolders), digests,
    decoder."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    part = st.text(alphabet="abcxyz019_-.", min_size=1, max_size=8).filter(lambda t: not t.startswith("."))
    member = st.lists(part, min_size=1, max_size=3).map("/".join)
    digest = st.one_of(st.none(), st.text(alphabet="0123456789abcdef", min_size=64, max_size=64))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(member, digest), min_size=1, max_size=5, unique_by=lambda t: t[0].split("/")[0]),
           st.sampled_from(["greedy", "beam", "remask", "remask-keep", "mask-predict"]), st.integers(1, 64),
           st.integers(1, 1000))
    def check(members, sampler, beam, T):
        folder = tmp_path_factory.mktemp("ens")
        for name, _ in members:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(b"x")
        names, digests = [m for m, _ in members], [d for _, d in members]
        spec = read_ensemble(write_ensemble(folder / "e.json", names, sampler, beam, digests, T=T))
        assert spec.names == tuple(names) and spec.sha256 == tuple(digests)
        assert (spec.sampler, spec.beam, spec.T) == (sampler, beam, T)
        assert spec.members == tuple(folder.joinpath(*n.split("/")) for n in names)
    check()
