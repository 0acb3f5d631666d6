"""init=PATH: a run that starts every weight and the vocabulary from a checkpoint (fine-tuning)."""
from __future__ import annotations

import json

import pytest
import torch

from datasets_prep.render_spec import RenderSpec
from model import CheckpointError, load_checkpoint
from model.shipped import shipped, shipped_names
from test_train import micro_cfg, micro_data  # noqa: F401  (the fixture)
from train.finetune import init_path, read_init
from train.pretrain import pretrain_applies
from train.trainer import Env, Trainer, train


@pytest.fixture(scope="module")
def trained(micro_data, tmp_path_factory):  # noqa: F811
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("ft") / "base"
    return train(micro_cfg(micro_data, out, "max_steps=4", "ema=0.9", "ckpt_every=0", "eval.every=0"))


def test_a_run_with_init_starts_from_the_checkpoints_ema_weights_and_vocabulary(micro_data, trained, tmp_path):  # noqa: F811
    state = load_checkpoint(trained)
    cfg = micro_cfg(micro_data, tmp_path / "ft", "max_steps=2", f"init={trained}", "ckpt_every=0", "eval.every=0",
                    "lr=1e-2")
    trainer = Trainer(cfg, Env(torch.device("cpu")), None, None)
    assert trainer.model.labels.to_dict() == state["labels"]
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(value, state["ema"][name]), name
    assert trainer.pos.step == 0                          # a fresh schedule, not a resume
    assert not pretrain_applies(cfg, log=lambda msg: None)


def test_a_fine_tuned_run_trains_and_its_checkpoint_moves_away_from_the_start(micro_data, trained, tmp_path):  # noqa: F811
    out = train(micro_cfg(micro_data, tmp_path / "ft2", "max_steps=2", f"init={trained}", "ckpt_every=0",
                          "eval.every=0", "lr=1e-2", "ema=0"))
    start, end = load_checkpoint(trained)["ema"], load_checkpoint(out)["model"]
    assert end.keys() == start.keys()
    assert any(not torch.equal(end[k], start[k]) for k in end if end[k].is_floating_point())
    assert json.loads((tmp_path / "ft2" / "config.json").read_text())["init"] == str(trained)
    from model import load
    from train.model_card import model_card

    cfg = micro_cfg(micro_data, tmp_path / "ft2", f"init={trained}")
    assert f"fine-tuned: every weight started from `{trained}`" in model_card(cfg, load(out), {})


def test_init_refuses_what_does_not_fit_and_names_the_file(micro_data, trained, tmp_path):  # noqa: F811
    render = RenderSpec().with_size((64, 64))
    with pytest.raises(CheckpointError, match=r"ckpt\.pt: init needs a 'ar' checkpoint"):
        read_init(trained, "ar", render)
    with pytest.raises(CheckpointError, match=r"ckpt\.pt: its canvas is 64x64, the shards' is 32x64"):
        read_init(trained, "diffusion", RenderSpec().with_size((32, 64)))
    cfg = micro_cfg(micro_data, tmp_path / "wide", "max_steps=1", f"init={trained}", "model.dec_dim=32",
                    "model.dec_heads=2", "ckpt_every=0", "eval.every=0")
    with pytest.raises(CheckpointError, match=r"ckpt\.pt: its weights do not fit this model \(\S+: this run's "
                                              r"model \(\d[\d, ]*\), weights \(\d[\d, ]*\)\)"):
        Trainer(cfg, Env(torch.device("cpu")), None, None)
    hostile = {**load_checkpoint(trained), "ema": {"decoder.head.weight": "not a tensor"}}
    torch.save(hostile, tmp_path / "hostile.pt")
    cfg = micro_cfg(micro_data, tmp_path / "hostile", "max_steps=1", f"init={tmp_path / 'hostile.pt'}",
                    "ckpt_every=0", "eval.every=0")
    with pytest.raises(CheckpointError, match=r"hostile\.pt: its weights do not fit this model \(the weights are "
                                              r"not a dict of tensors\)"):
        Trainer(cfg, Env(torch.device("cpu")), None, None)
    cfg = micro_cfg(micro_data, tmp_path / "norm", "max_steps=1", f"init={trained}", "normalize_labels=true",
                    "ckpt_every=0", "eval.every=0")
    with pytest.raises(ValueError, match=r"ckpt\.pt: it was trained with normalize_labels=False"):
        Trainer(cfg, Env(torch.device("cpu")), None, None)
    cfg = micro_cfg(micro_data, tmp_path / "both", "max_steps=1", f"init={trained}", f"model.encoder_init={trained}",
                    "ckpt_every=0", "eval.every=0")
    with pytest.raises(ValueError, match="starts every weight; drop model.encoder_init"):
        Trainer(cfg, Env(torch.device("cpu")), None, None)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        read_init(tmp_path / "missing.pt", "diffusion", render)


def test_init_takes_a_run_folder_and_a_shipped_name_but_not_an_ensemble(trained, tmp_path):
    assert init_path(trained.parent) == trained
    (tmp_path / "gryphone-ensemble.json").write_text("{}")
    with pytest.raises(CheckpointError, match="an ensemble or an ONNX export has none"):
        init_path(tmp_path)
    if "crohme-gryphone" not in shipped_names():
        pytest.skip("this install ships no crohme-gryphone weights")
    assert init_path("crohme-gryphone") == shipped("crohme-gryphone").checkpoint
