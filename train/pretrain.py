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


def decoder_from_reader(model, vocab, path: str | Path) -> dict:
    """Start GryphOne's decoder (and its auxiliary reader) from a trained AR baseline's decoder.

    The blocks have the same shape (self-attention, cross-attention to the same memory, MLP), so the
    AR decoder's knowledge of where to look in the image carries over; symbol embeddings and head rows
    are copied by token string (a SAT symbol is a LaTeX token; PAD takes EOS's head row, as both end
    the label), a modifier's embedding is the sum of its brace/script tokens'. Returns counts of what
    was copied; raises CheckpointError/ValueError naming the file when it cannot."""
    import torch

    from .checkpoint import CheckpointError, load_checkpoint
    from .inference import vocab_from_dict

    dec = model.decoder
    if dec.shared_table or dec.pos_kind != "learned" or dec.block_kind != "prenorm":
        raise ValueError(f"{path}: model.decoder_init copies an AR decoder into ours, which needs dec_pos=learned, "
                         "dec_shared_table=false and dec_block=prenorm (the official layout has no AR counterpart)")
    state = load_checkpoint(path)
    if state["train_config"].get("model", {}).get("kind") != "ar":
        raise CheckpointError(f"{path}: model.decoder_init needs an AR baseline checkpoint")
    ar_vocab = vocab_from_dict(state["vocab"])
    weights = state.get("ema") or state["model"]
    tok = weights["decoder.tok_emb.weight"]
    head_w, head_b = weights["decoder.head.weight"], weights["decoder.head.bias"]
    token_id = {t: i for i, t in enumerate(ar_vocab.tokens)}
    copied = {"blocks": 0, "symbols": 0, "modifiers": 0}
    targets = [model.decoder] + ([model.reader] if getattr(model, "reader", None) is not None else [])
    blocks = {k[len("decoder."):]: v for k, v in weights.items() if k.startswith(("decoder.blocks.", "decoder.norm."))}
    with torch.no_grad():
        for dec in targets:
            own = dec.state_dict()
            bad = [k for k, v in blocks.items() if k not in own or own[k].shape != v.shape]
            if bad:
                raise CheckpointError(f"{path}: its decoder does not fit this one ({bad[:3]}; check dec_dim, "
                                      f"dec_depth, enc_dim)")
            dec.load_state_dict(blocks, strict=False)
            copied["blocks"] = len(blocks)
            n = min(dec.pos_emb.shape[1], weights["decoder.pos_emb"].shape[1])
            dec.pos_emb[:, :n] = weights["decoder.pos_emb"][:, :n]
            for i, sym in enumerate(vocab.symbols):
                j = token_id.get(sym) if i >= 3 else (ar_vocab.EOS if i == vocab.PAD else None)
                if j is None:
                    continue
                dec.sym_emb.weight[i] = tok[j]
                dec.sym_head.weight[i], dec.sym_head.bias[i] = head_w[j], head_b[j]
                copied["symbols"] += 1
            for i, (pre, post) in enumerate(vocab.modifiers[3:], start=3):
                ids = [token_id[t] for t in (*pre, *post) if t in token_id]
                if ids:
                    dec.mod_emb.weight[i] = tok[ids].sum(0)
                    copied["modifiers"] += 1
    return copied
