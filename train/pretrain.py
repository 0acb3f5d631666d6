"""Stage 1 of a GryphOne run: pretrain the encoder with the autoregressive reader, on the run's images.

The published model starts from DINO weights downloaded from a hub; nothing here can download them,
and a from-scratch encoder trained by the diffusion loss alone learns glyphs slowly
(docs/training.md). So a preset with `pretrain.steps` first trains the AR baseline (same encoder
config) into `<out>/pretrain/`, then GryphOne starts from its encoder (`model.encoder_init`). The stage
resumes like any run and is skipped when its checkpoint is complete.
"""
from __future__ import annotations

import copy
import time
from pathlib import Path

from model import switch_kind
from model.registry import recognizer_class

from .config import PretrainConfig, TrainConfig
from .trainer import train


def pretrain_applies(cfg: TrainConfig, log=print) -> bool:
    """Whether `cfg` asks for stage 1 and its recognizer can use it (Recognizer.stage_one: a ViT
    encoder not already started from a file); a preset's stage 1 that cannot apply is skipped with a
    note naming why."""
    if not (cfg.pretrain.steps or cfg.pretrain.max_minutes):
        return False
    if cfg.init:
        log(f"[pretrain] skipped: every weight starts from init={cfg.init}")
        return False
    why_not = recognizer_class(cfg.model.kind).stage_one(cfg.model)
    if why_not:
        log(f"[pretrain] skipped: {why_not}")
        return False
    return not cfg.model.encoder_init


def pretrain_config(cfg: TrainConfig) -> TrainConfig:
    """The AR run that pretrains `cfg`'s encoder: same encoder, data, batch and schedule shape."""
    p = cfg.pretrain
    why_not = recognizer_class(cfg.model.kind).stage_one(cfg.model)
    if why_not:
        raise ValueError(f"pretrain trains a ViT encoder with the AR reader; {why_not} "
                         f"(set pretrain.steps=0 pretrain.max_minutes=0)")
    pre = copy.deepcopy(cfg)
    pre.name, pre.out, pre.data.root = f"{cfg.name}-pretrain", str(Path(cfg.out) / "pretrain"), p.data or cfg.data.root
    pre.model = switch_kind(cfg.model, "ar")
    if p.max_len:
        pre.model.max_len = p.max_len  # else switch_kind's conversion of the window (2x SAT positions)
    pre.model.encoder_init = ""
    pre.max_steps, pre.max_minutes = p.steps, (0.0 if p.steps else p.max_minutes)
    pre.optim.lr = p.lr or cfg.optim.lr
    pre.optim.ema, pre.eval.every, pre.pretrain = 0.0, 0, PretrainConfig()
    return pre


def run_pretrain(cfg: TrainConfig, resume: bool = True, log=print) -> tuple[Path, float]:
    """Train (or resume, or reuse) the stage-1 AR run; returns (its checkpoint, seconds spent now)."""
    pre = pretrain_config(cfg)
    budget = f"{pre.max_steps} steps" if pre.max_steps else f"{pre.max_minutes} minutes"
    log(f"[pretrain] stage 1: the AR reader trains the encoder ({budget}) -> {pre.out}")
    t0 = time.time()
    ckpt = train(pre, resume=resume)
    seconds = time.time() - t0
    who = recognizer_class(cfg.model.kind).title or f"model.kind={cfg.model.kind}"
    log(f"[pretrain] stage 1 done in {seconds:.0f} s; {who} starts from {ckpt}")
    return ckpt, seconds
