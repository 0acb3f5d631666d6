"""The training loop's core, each rule on its own: the learning-rate schedule (warm-up from
`warmup_start`, cosine by steps and on the clock, milestones), the EMA (its warm-up, and evaluation
reading the EMA weights), weight decay's parameter groups, and switch_kind's window."""
from __future__ import annotations

import math

import pytest
import torch

from builders import tiny_cfg, tiny_model
from model import switch_kind
from test_train import micro_cfg, micro_data  # noqa: F401  (the fixture)
from train.config import OptimConfig, TrainConfig, apply_overrides, preset
from train.trainer import _param_groups, decays, lr_at


def sched(**kw) -> TrainConfig:
    """A config with lr 1, 10 warm-up steps and a floor of 0.1; `kw` in either spelling (config.FLAT_KEYS)."""
    return apply_overrides(TrainConfig(optim=OptimConfig(lr=1.0, warmup_steps=10, min_lr_ratio=0.1)),
                           [f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in kw.items()])


def test_the_warm_up_rises_linearly_from_warmup_start_to_lr():
    cfg = sched(warmup_start=0.2, schedule="constant")
    assert lr_at(cfg, 0, 100) == pytest.approx(0.2 + 0.8 * 0.1)
    assert lr_at(cfg, 4, 100) == pytest.approx(0.2 + 0.8 * 0.5)
    assert lr_at(cfg, 9, 100) == pytest.approx(1.0)
    assert lr_at(sched(schedule="constant"), 0, 100) == pytest.approx(0.1)  # from 0 by default
    assert lr_at(cfg, 50, 100) == 1.0


def test_the_cosine_runs_from_lr_to_its_floor_over_the_steps_after_the_warm_up():
    cfg = sched(schedule="cosine")
    assert lr_at(cfg, 10, 110) == pytest.approx(1.0)
    assert lr_at(cfg, 60, 110) == pytest.approx(0.1 + 0.9 * 0.5)
    assert lr_at(cfg, 110, 110) == pytest.approx(0.1)
    assert lr_at(cfg, 500, 110) == pytest.approx(0.1)  # past the end: the floor, not back up


def test_with_a_time_budget_the_cosine_follows_the_clock_not_the_steps():
    cfg = sched(schedule="cosine")
    assert lr_at(cfg, 20, 10**12, time_progress=0.5) == pytest.approx(0.55)
    assert lr_at(cfg, 20, 10**12, time_progress=1.7) == pytest.approx(0.1)
    assert lr_at(cfg, 3, 10**12, time_progress=0.9) == pytest.approx(0.4)  # the warm-up still counts steps


def test_the_step_schedule_divides_by_ten_at_each_milestone_epoch():
    cfg = sched(schedule="step", epochs=60, lr_milestones=(50.0,), warmup_steps=0)
    total = 600  # 10 steps per epoch
    assert lr_at(cfg, 499, total) == pytest.approx(1.0)
    assert lr_at(cfg, 500, total) == pytest.approx(0.1)
    cfg.optim.milestones = (20.0, 40.0)
    assert lr_at(cfg, 450, total) == pytest.approx(0.01)


def _names(model, group) -> set[str]:
    ids = {id(p) for p in group["params"]}
    return {n for n, p in model.named_parameters() if id(p) in ids}


@pytest.mark.parametrize("kind", ["diffusion", "ar", "posformer", "hvt"])
def test_weight_decay_skips_vectors_embeddings_norms_position_tables_cls_and_the_stem(kind):
    model = tiny_model(kind)
    decay, no_decay = _param_groups(model, 0.05)
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    on, off = _names(model, decay), _names(model, no_decay)
    assert on | off == {n for n, _ in model.named_parameters()} and not on & off
    modules = dict(model.named_modules())
    for name in on:
        owner = modules[name.rsplit(".", 1)[0]]
        assert isinstance(owner, (torch.nn.Linear, torch.nn.Conv2d, torch.nn.LSTMCell, torch.nn.LSTM)), name
        assert "patch_embed" not in name
    for name in off:
        p = dict(model.named_parameters())[name]
        owner = modules.get(name.rsplit(".", 1)[0]) if "." in name else model
        assert p.ndim < 2 or isinstance(owner, (torch.nn.Embedding, torch.nn.LayerNorm)) or \
            name.rsplit(".", 1)[-1] in ("pos_emb", "cls") or "patch_embed" in name, name


def test_a_linear_named_embed_decays_like_any_linear():
    """The position-forest branch's `embed` is a Linear over path codes: it decays (a rule on names
    once exempted every parameter whose name held 'emb')."""
    model = tiny_model("posformer", forest_weight=1.0)
    decay, _ = _param_groups(model, 0.05)
    assert "forest.embed.0.weight" in _names(model, decay)
    assert not decays("decoder.embed", torch.nn.Embedding(4, 2), "weight", torch.zeros(4, 2))


def test_the_ema_warms_up_and_evaluation_reads_the_ema_weights(micro_data, tmp_path):  # noqa: F811
    from train.trainer import Env, Trainer

    torch.set_num_threads(1)
    cfg = micro_cfg(micro_data, tmp_path / "ema", "max_steps=3", "ema=0.999", "ckpt_every=0", "eval.every=2",
                    "log_every=1")
    seen = []
    trainer = Trainer(cfg, Env(torch.device("cpu")), None, lambda m, step: seen.append(m) or {"ok": 1.0})
    start = {k: v.clone() for k, v in trainer.ema.state_dict().items()}
    batch = next(iter(trainer._loader(torch.Generator().manual_seed(0))))
    trainer.train_step(batch)  # step 0: decay min(0.999, 1/10) = 0.1 -> the EMA moves 90% of the way
    moved = 0
    for (name, before), after, raw in zip(start.items(), trainer.ema.state_dict().values(),
                                          trainer.model.state_dict().values()):
        if before.is_floating_point() and not torch.equal(before, raw):
            assert torch.allclose(after, 0.1 * before + 0.9 * raw, atol=1e-6), name
            moved += 1
    assert moved > 10
    assert min(0.999, (1 + 5000) / (10 + 5000)) == pytest.approx(0.99820, abs=1e-5)
    trainer.pos.step = 2
    trainer.metrics_f = open(tmp_path / "m.jsonl", "w")
    trainer._quick_eval()
    assert seen == [trainer.ema]


def test_switch_kind_doubles_the_window_into_tokens_and_halves_it_back():
    sat = tiny_cfg("diffusion", max_len=24)
    ar = switch_kind(sat, "ar")
    assert ar.kind == "ar" and ar.max_len == 48 and ar.enc_dim == sat.enc_dim
    assert switch_kind(ar, "diffusion").max_len == 24
    assert switch_kind(ar, "hvt").max_len == 48  # token to token: unchanged
    assert switch_kind(tiny_cfg("ar", max_len=3), "diffusion").max_len == 2  # never below 2
    assert math.isclose(preset("crohme-cpu").model.max_len * 2, switch_kind(preset("crohme-cpu").model, "ar").max_len)
