"""ONNX export on micro-trained checkpoints: the exported folder decodes exactly what PyTorch does
(GryphOne's three samplers; the token recognizers greedy, the AR baseline and HVT also beam), loads
wherever a checkpoint does, and refuses what it cannot export or read with one line naming the file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from model import CheckpointError, DecodeSpec, load
from model.load import Loaded
from model.onnx_export import export_onnx
from model.onnx_runtime import read_export
from train import eval as eval_cli
from train import export_onnx as export_cli
from train import predict
from train.data import ShardDataset, collate, load_split_data
from builders import BLOCK_TORCH, tiny_model
from test_train import micro_cfg, micro_data  # noqa: F401  (the fixture)

onnxruntime = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")


def _train(data: Path, out: Path, *overrides: str) -> Path:
    from train.trainer import train

    torch.set_num_threads(1)
    return train(micro_cfg(data, out, "log_every=1000", *overrides))


@pytest.fixture(scope="module")
def runs(micro_data, tmp_path_factory):  # noqa: F811
    """A micro checkpoint of each recognizer (short runs: parity needs a model, not a good one)."""
    root = tmp_path_factory.mktemp("onnx")
    return {"diffusion": _train(micro_data, root / "gryphone", "max_steps=150"),
            "ar": _train(micro_data, root / "ar", "max_steps=150", "model.kind=ar"),
            "ar-bidi": _train(micro_data, root / "ar-bidi", "max_steps=150", "model.kind=ar", "model.bidirectional=true"),
            "posformer": _train(micro_data, root / "posformer", "max_steps=150", "model.kind=posformer",
                                "model.encoder=vit"),
            "hvt": _train(micro_data, root / "hvt", "max_steps=150", "model.kind=hvt")}


def _images(loaded, data: Path) -> torch.Tensor:
    """The four micro images and the same four shifted: eight inputs, some the model reads badly."""
    rec = loaded.recognizer
    split = load_split_data(data / "train", rec.targets, rec.cfg.max_len, labels=rec.labels, keep_all=True)
    images = collate([it for it in ShardDataset(split, rec.render.size)])["image"]
    return torch.cat([images, torch.roll(images, shifts=(3, -5), dims=(2, 3))])


@pytest.mark.parametrize("kind, specs", [
    ("diffusion", [DecodeSpec("remask", T=1), DecodeSpec("remask", T=10, seed=0), DecodeSpec("remask", T=10, seed=7),
                   DecodeSpec("remask-keep", T=10, seed=3), DecodeSpec("mask-predict", T=10),
                   DecodeSpec("remask", T=10, valid=False)]),
    ("ar", [DecodeSpec("greedy"), DecodeSpec("greedy", valid=False), DecodeSpec("beam", beam=3),
            DecodeSpec("beam", beam=5, valid=False)]),
    ("ar-bidi", [DecodeSpec("beam", beam=3), DecodeSpec("beam", beam=4, valid=False),
                 DecodeSpec("beam", beam=3, bidirectional=False)]),
    ("posformer", [DecodeSpec("greedy"), DecodeSpec("greedy", valid=False)]),
    ("hvt", [DecodeSpec("greedy"), DecodeSpec("greedy", valid=False), DecodeSpec("beam", beam=3)]),
])
def test_fp32_export_decodes_what_pytorch_decodes(runs, micro_data, tmp_path, kind, specs):  # noqa: F811
    loaded = load(runs[kind])
    export_onnx(loaded, tmp_path / "onnx")
    exported = load(tmp_path / "onnx")
    assert exported.render == loaded.render and exported.labels.to_dict() == loaded.labels.to_dict()
    images = _images(loaded, micro_data)
    for spec in specs:
        conf_torch, conf_onnx = [], []
        want = loaded.recognizer.recognize(images, spec, confidences=conf_torch)
        got = exported.recognizer.recognize(images, spec, confidences=conf_onnx)
        assert got == want, spec
        assert conf_onnx == pytest.approx(conf_torch, abs=1e-4)
        assert all(0.0 < c <= 1.0 for c in conf_onnx)


def test_int8_export_loads_and_reads(runs, micro_data, tmp_path):  # noqa: F811
    loaded = load(runs["diffusion"])
    export_onnx(loaded, tmp_path / "onnx", int8=True)
    spec = json.loads((tmp_path / "onnx" / "gryphone-onnx.json").read_text())
    assert spec["precision"] == "int8" and set(spec["graphs"]) == {"fp32", "int8"}
    assert load(tmp_path / "onnx").recognizer.precision == "fp32"  # int8 changes outputs: only when asked
    assert read_export(tmp_path / "onnx", precision="int8").precision == "int8"
    out = read_export(tmp_path / "onnx", precision="int8").recognize(_images(loaded, micro_data),
                                                                     DecodeSpec("remask", T=10))
    assert len(out) == 8 and all(isinstance(t, str) for t in out)


def test_cli_export_then_eval_and_predict_take_the_folder(runs, micro_data, tmp_path, capsys):  # noqa: F811
    assert export_cli.main(["--ckpt", str(runs["diffusion"]), "--out", str(tmp_path / "onnx"), "--check"]) == 0
    assert "decode identically" in capsys.readouterr().out
    args = ["--data", str(micro_data), "--splits", "train", "--T", "10", "--seeds", "1"]
    assert eval_cli.main(["--ckpt", str(runs["diffusion"]), *args, "--json", str(tmp_path / "a.json")]) == 0
    assert eval_cli.main(["--ckpt", str(tmp_path / "onnx"), *args, "--json", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / f).read_text())["results"]["train"] for f in ("a.json", "b.json"))
    assert [p["hyp"] for p in a["predictions"]] == [p["hyp"] for p in b["predictions"]]
    png = tmp_path / "x.png"
    from PIL import Image
    Image.fromarray((255 - 255 * _images(load(runs["diffusion"]), micro_data)[0, 0].numpy()).astype("uint8")).save(png)
    capsys.readouterr()
    assert predict.main(["--ckpt", str(tmp_path / "onnx"), str(png)]) == 0
    assert capsys.readouterr().out.startswith(f"{png}\t")


def test_eval_scores_the_reranked_beam_beside_the_left_to_right_one(runs, micro_data, tmp_path):  # noqa: F811
    """--l2r-beam: a bidirectional reader's beam with and without its right-to-left reranking, one run."""
    assert eval_cli.main(["--ckpt", str(runs["ar-bidi"]), "--data", str(micro_data), "--splits", "train",
                          "--beams", "1,3", "--l2r-beam", "--json", str(tmp_path / "e.json")]) == 0
    report = json.loads((tmp_path / "e.json").read_text())
    assert set(report["results"]["train"]["metrics"]) == {"greedy", "beam3", "beam3-l2r"}


@pytest.mark.parametrize("kind", ["posformer", "hvt"])
def test_export_cli_checks_posformer_and_hvt(runs, tmp_path, capsys, kind):
    assert export_cli.main(["--ckpt", str(runs[kind]), "--out", str(tmp_path / "onnx"), "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: 4 of 4 random images decode identically" in out
    assert json.loads((tmp_path / "onnx" / "gryphone-onnx.json").read_text())["decoder_graph"] == f"{kind}-step"


def test_bad_export_folders_are_refused_by_name(runs, tmp_path):
    export_onnx(load(runs["ar"]), tmp_path / "good")
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "good", bad)
    spec_file = bad / "gryphone-onnx.json"
    spec = json.loads(spec_file.read_text())
    spec_file.write_text(json.dumps({**spec, "graphs": {"fp32": {"encoder": "../good/encoder.onnx",
                                                                 "decoder": "decoder.onnx"}}}))
    with pytest.raises(CheckpointError, match="not a plain file name"):
        load(bad)
    spec_file.write_text(json.dumps(spec))
    (bad / "decoder.onnx").write_bytes(b"not a graph at all")
    with pytest.raises(CheckpointError, match=r"decoder\.onnx: not an ONNX graph"):
        load(bad)
    spec_file.write_text("{")
    with pytest.raises(CheckpointError, match="gryphone-onnx.json: not JSON"):
        load(bad)
    for wrong in ({"decoder_graph": "beam-step"}, {"model_config": {**spec["model_config"], "kind": ""}}):
        spec_file.write_text(json.dumps({**spec, **wrong}))
        with pytest.raises(CheckpointError, match="cannot read the export's specs"):
            load(bad)


@pytest.mark.parametrize("kind, options", [
    ("ar", {}),
    ("ar", {"patch_w": 8, "conv_stem": True}),     # wide patches: a 2x16 grid
    ("posformer", {"encoder": "vit", "attn_correction": "iac"}),
    ("posformer", {"encoder": "densenet", "attn_correction": "arm", "growth_rate": 4, "dense_layers": 2}),
    ("hvt", {"res_channels": (8, 8, 16, 16), "enc_dim": 32, "emb_dim": 16, "attn_dim": 16}),
    ("hvt", {"res_channels": (8, 8, 16, 16), "enc_dim": 32, "coverage": False, "cls_init": False}),
])
def test_untrained_token_recognizers_export_step_for_step(tmp_path, kind, options):
    """Random weights that never emit EOS: greedy runs the whole window, so every step of the exported
    state (caches, PosFormer's coverage and pending maps, HVT's LSTM state) is compared."""
    torch.manual_seed(0)
    rec = tiny_model(kind, canvas=(32, 128), **options).eval()
    with torch.no_grad():
        rec.decoder.head.bias[2] -= 30.0   # EOS (TokenVocab.EOS) never wins: the whole window is decoded
    export_onnx(Loaded(rec, rec.render, rec.labels, {"step": 0, "train_config": {}}, tmp_path / "x"), tmp_path / "onnx")
    exported = load(tmp_path / "onnx").recognizer
    images = torch.rand(3, 1, 32, 128)
    conf_torch, conf_onnx = [], []
    specs = [DecodeSpec("greedy", valid=False)] + [DecodeSpec("beam", beam=3, valid=False)] * ("beam" in exported.samplers)
    for spec in specs:  # beam: every hypothesis runs out of length, so the search ends on its last rule
        conf_torch, conf_onnx = [], []
        want = rec.recognize(images, spec, confidences=conf_torch)
        got = exported.recognize(images, spec, confidences=conf_onnx)
        assert got == want, spec
        assert rec.decode_ids(images, spec).shape[1] == rec.cfg.max_len
        assert conf_onnx == pytest.approx(conf_torch, abs=1e-4)


NO_TORCH = BLOCK_TORCH + """
import numpy as np
from model import DecodeSpec, load
from datasets_prep.canvas import fit_image
folder, pngs = sys.argv[1], sys.argv[2:]
loaded = load(folder)
images = np.stack([fit_image(loaded.render, open(p, "rb").read())[None] for p in pngs])
out = {s: loaded.recognizer.recognize(images, DecodeSpec(s, T=10, seed=2)) for s in loaded.recognizer.samplers}
assert "torch" not in sys.modules
print(json.dumps(out))
"""


@pytest.mark.parametrize("kind", ["diffusion", "ar"])
def test_an_export_folder_reads_without_torch_exactly_as_the_checkpoint(runs, micro_data, tmp_path, kind):  # noqa: F811
    """The folder, read where torch cannot be imported (model.load, ONNX Runtime, NumPy, Pillow), decodes
    the same PNGs to the same LaTeX as the PyTorch checkpoint, for every exported sampler."""
    import subprocess
    import sys

    from PIL import Image

    from datasets_prep.canvas import fit_image

    loaded = load(runs[kind])
    export_onnx(loaded, tmp_path / "onnx")
    assert "torch" in (tmp_path / "onnx" / "README.md").read_text()
    pngs = []
    for i, image in enumerate(_images(loaded, micro_data)[:4]):
        pngs.append(tmp_path / f"{i}.png")
        Image.fromarray((255 - 255 * image[0].numpy()).round().astype("uint8")).save(pngs[-1])
    res = subprocess.run([sys.executable, "-c", NO_TORCH, str(tmp_path / "onnx"), *map(str, pngs)],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    images = torch.stack([torch.from_numpy(fit_image(loaded.render, p.read_bytes()))[None] for p in pngs])
    for sampler, texts in got.items():
        assert texts == loaded.recognizer.recognize(images, DecodeSpec(sampler, T=10, seed=2)), sampler


def test_every_front_end_gives_a_confidence_and_shard_rows_their_split(runs, micro_data, tmp_path, capsys):  # noqa: F811
    """The TSV lines carry the confidence, shard rows are named split/sample_id, and the page's backend
    over an ONNX folder reports a confidence too (it once sent null)."""
    import numpy as np

    from train.serve.backend import Backend

    export_onnx(load(runs["diffusion"]), tmp_path / "onnx")
    assert predict.main(["--ckpt", str(runs["diffusion"]), "--threads", "1", str(micro_data)]) == 0
    lines = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert lines and all(len(cols) == 4 and cols[0].startswith("train/") and 0.0 <= float(cols[2]) <= 1.0
                         for cols in lines)
    backend = Backend.load(str(tmp_path / "onnx"))
    canvas = np.zeros(backend.image_size, np.float32)
    canvas[20:40, 10:50] = 1.0
    reading = backend.recognize(canvas)
    assert reading.confidence is not None and 0.0 <= reading.confidence <= 1.0


def test_every_graph_carries_its_kind_vocabulary_render_spec_and_samplers(runs, tmp_path):
    import onnx

    export_onnx(load(runs["diffusion"]), tmp_path / "onnx", int8=True)
    for name in ("encoder.onnx", "decoder.onnx", "encoder.int8.onnx", "decoder.int8.onnx"):
        path = tmp_path / "onnx" / name
        if not path.exists():
            continue
        props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
        assert props["gryphone.kind"] == "diffusion" and props["gryphone.part"] in ("encoder", "decoder")
        assert json.loads(props["gryphone.labels"])["kind"] == "sat" and "size" in json.loads(props["gryphone.render"])
        assert "remask" in json.loads(props["gryphone.samplers"])["available"]


def test_check_compares_every_precision_it_wrote(runs, tmp_path, capsys):
    assert export_cli.main(["--ckpt", str(runs["diffusion"]), "--out", str(tmp_path / "onnx"), "--int8", "--check"]) == 0
    out = capsys.readouterr().out
    assert "identically (remask-T10, fp32)" in out and "identically (remask-T10, int8)" in out
