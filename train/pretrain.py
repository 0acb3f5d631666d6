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

from .config import PretrainConfig, TrainConfig


def pretrain_config(cfg: TrainConfig) -> TrainConfig:
    """The AR run that pretrains `cfg`'s encoder: same encoder, data, batch and schedule shape."""
    p = cfg.pretrain
    pre = copy.deepcopy(cfg)
    pre.name, pre.out, pre.data = f"{cfg.name}-pretrain", str(Path(cfg.out) / "pretrain"), p.data or cfg.data
    pre.model.kind = "ar"
    pre.model.max_len = p.max_len or 2 * cfg.model.max_len
    pre.model.encoder_init, pre.model.aux_reader_weight, pre.model.diffusion_enc_grad = "", 0.0, 1.0
    pre.max_steps, pre.max_minutes = p.steps, (0.0 if p.steps else p.max_minutes)
    pre.lr = p.lr or cfg.lr
    pre.ema, pre.eval_every, pre.pretrain = 0.0, 0, PretrainConfig()
    return pre


def run_pretrain(cfg: TrainConfig, resume: bool = True, log=print) -> tuple[Path, float]:
    """Train (or resume, or reuse) the stage-1 AR run; returns (its checkpoint, seconds spent now)."""
    from .trainer import train

    pre = pretrain_config(cfg)
    budget = f"{pre.max_steps} steps" if pre.max_steps else f"{pre.max_minutes} minutes"
    log(f"[pretrain] stage 1: the AR reader trains the encoder ({budget}) -> {pre.out}")
    t0 = time.time()
    ckpt = train(pre, resume=resume)
    seconds = time.time() - t0
    log(f"[pretrain] stage 1 done in {seconds:.0f} s; GryphOne starts from {ckpt}")
    return ckpt, seconds
