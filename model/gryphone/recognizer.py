"""GryphOne: a ViT encoder and a SAT masked-diffusion decoder with random-masking mutual learning.

The decoder predicts every (symbol, modifier) position of the label at once and refines its guess
over T steps (model/gryphone/diffusion.py); an optional left-to-right reader on the same encoder is a
training-only auxiliary loss that teaches the encoder glyphs (model/gryphone/aux_reader.py) and never runs
at inference. `decoder_init` starts the decoder from a trained AR baseline's (model/warm_start.py).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec
from tokenizer.vocab import SATVocab

from ..decoding import finish_sat
from ..encoder import ViTConfig, build_vit, vit_flops
from ..layers import decoder_flops
from ..recognizer import DecodeSpec, Recognizer, RecognizerConfig
from ..warm_start import decoder_from_ar, encoder_from_file
from .aux_reader import SATCausalReader, reader_loss
from .diffusion import LossConfig, SATDecoder, diffusion_loss, final_log_probs, loss_draws, sample_mask_predict, \
    sample_remask
from .forest_targets import forest_targets


@dataclass
class GryphOneConfig(RecognizerConfig, ViTConfig):
    kind: str = "diffusion"
    dec_dim: int = 384
    dec_depth: int = 5
    dec_heads: int = 8
    dropout: float = 0.3
    forest_depths: int = 0                # >0 adds position-forest heads (levels 0..forest_depths-1)
    dec_pos_init: str = "random"          # decoder position table at init: "random" N(0, 0.02) | "sincos"
    dec_pos: str = "learned"              # "learned" | "fixed" (official: unit sin-cos)
    dec_shared_table: bool = False        # one embedding table for symbols and modifiers (official)
    dec_block: str = "prenorm"            # "prenorm" | "official" (post-add, normed projections)
    decoder_init: str = ""                # start the decoder (and reader) from this AR baseline checkpoint
    aux_reader_weight: float = 0.0        # >0: a causal SAT reader on the encoder, trained with this weight
    diffusion_enc_grad: float = 1.0       # scale of the diffusion loss's gradient into the encoder
    loss: LossConfig = field(default_factory=LossConfig)


class GryphOne(Recognizer):
    kind = "diffusion"
    config_class = GryphOneConfig
    label_kind = "sat"
    samplers = ("remask", "remask-keep", "mask-predict")
    default_sampler = "remask"
    step_samplers = samplers               # every sampler refines the whole answer over T steps
    training_only = ("reader",)
    static_parts = ("encoder", "decoder")  # the decoder always sees the full max_len window
    title = "GryphOne"
    description = "GryphOne (ViT encoder + SAT masked-diffusion decoder)"
    log_parts = ("kl", "reader_ce")

    def __init__(self, cfg: GryphOneConfig, render: RenderSpec, labels: LabelSpec):
        super().__init__(cfg, render, labels)
        vocab: SATVocab = labels.vocab
        self.encoder = build_vit(cfg, render.size)
        self.decoder = SATDecoder(vocab.num_symbols, vocab.num_modifiers, cfg.max_len, cfg.dec_dim, cfg.dec_depth,
                                  cfg.dec_heads, cfg.enc_dim, cfg.dropout, cfg.forest_depths,
                                  pos_init=cfg.dec_pos_init, pos=cfg.dec_pos, shared_table=cfg.dec_shared_table,
                                  block=cfg.dec_block)
        # training only: a left-to-right reader that teaches the encoder glyphs
        self.reader = SATCausalReader(vocab.num_symbols, vocab.num_modifiers, cfg.max_len, cfg.dec_dim,
                                      cfg.dec_depth, cfg.dec_heads, cfg.enc_dim, cfg.dropout) \
            if cfg.aux_reader_weight > 0 else None

    # --- training -------------------------------------------------------------------------------
    def targets(self, latex: str) -> dict[str, np.ndarray]:
        e = self.labels.vocab.encode(latex, self.cfg.max_len)
        out = {"symbols": e.symbols, "modifiers": e.modifiers}
        if self.cfg.forest_depths:
            out["level"], out["relation"] = forest_targets(latex, self.cfg.max_len, self.cfg.forest_depths)
        return out

    def step_inputs(self, step: int) -> dict[str, torch.Tensor]:
        ramp = self.cfg.loss.kl_warmup_steps
        return {"kl_scale": torch.tensor(min(1.0, step / ramp))} if ramp else {}

    def onnx_graphs(self):
        from ..onnx_graphs import MemoryGraph, OnnxGraphs, sat_step_examples
        from .onnx import SATStepGraph

        return OnnxGraphs("sat-step", MemoryGraph(self).eval(), SATStepGraph(self.decoder).eval(), sat_step_examples,
                          self.samplers)

    def draws(self, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        return loss_draws(self.cfg.loss, tuple(batch["symbols"].shape), generator, batch["symbols"].device)

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator | None = None
             ) -> dict[str, torch.Tensor]:
        forest = (batch["level"], batch["relation"]) if "level" in batch else None
        kl_scale = batch.get("kl_scale", 1.0)
        draws = {k: v for k, v in batch.items() if k.startswith("mask_")} or self.draws(batch, generator)
        memory = self.encoder(images)
        s = self.cfg.diffusion_enc_grad
        diff_memory = memory if s == 1.0 else memory * s + memory.detach() * (1 - s)  # same value, scaled gradient
        parts = diffusion_loss(self.decoder, self.decoder.memory_kv(diff_memory), batch["symbols"],
                               batch["modifiers"], self.cfg.loss, draws, forest, kl_scale)
        if self.reader is not None:
            aux = reader_loss(self.reader, memory, batch["symbols"], batch["modifiers"])
            parts["loss"] = parts["loss"] + self.cfg.aux_reader_weight * aux
            parts["reader_ce"] = aux.detach()
        return parts

    def warm_start(self, log: Callable[[str], None] = print) -> None:
        if self.cfg.encoder_init:
            encoder_from_file(self.encoder, self.cfg.encoder_init, log)
        if self.cfg.decoder_init:
            decoder_from_ar(self, self.cfg.decoder_init, log)

    def flops_per_image(self, train: bool = True) -> float:
        cfg, vocab = self.cfg, self.labels.vocab
        enc, n = vit_flops(cfg, self.render.size)
        ff = cfg.dec_dim if cfg.dec_block == "official" else None
        dec, mem_kv = decoder_flops(cfg.max_len, cfg.dec_dim, cfg.dec_depth, n, cfg.enc_dim,
                                    vocab.num_symbols + vocab.num_modifiers, ff)
        views = 2 if (cfg.loss.rmml and train) else 1
        return (enc + views * dec + mem_kv) * (3 if train else 1)

    # --- decoding -------------------------------------------------------------------------------
    def sat_steps(self, images: torch.Tensor) -> tuple[Callable, object]:
        """The refinement step hook: (step, memory) with the images encoded once, where `step(symbols,
        modifiers, memory)` gives every position's symbol and modifier logits ({"sym", "mod"} [B, L, V])
        and has `max_len`. The samplers run on it; an ensemble (model/sat_ensemble.py) averages it."""
        return self.decoder, self.decoder.memory_kv(self.encoder(images))

    @torch.no_grad()
    def decode_sat(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None,
                   final: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(symbol ids, modifier ids), each [B, max_len], PAD after the label. Samplers: "remask" (the
        paper's), "remask-keep" (the official implementation's: visible tokens kept, only masked ones
        re-predicted), "mask-predict". `final` receives the last step's log-probabilities."""
        step, memory = self.sat_steps(images)
        if spec.sampler == "mask-predict":
            return sample_mask_predict(step, memory, spec.T, False, history, final)
        return sample_remask(step, memory, spec.T, spec.seed, False, history,
                             keep_visible=spec.sampler == "remask-keep", final=final)

    @torch.no_grad()
    def recognize(self, images: torch.Tensor, spec: DecodeSpec | None = None, history: list | None = None,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
        """As Recognizer.recognize; the repair uses the last step's per-position alternatives."""
        spec = spec or DecodeSpec(self.default_sampler)
        self.check_spec(spec)
        images = images.to(next(self.parameters()).device)
        final: dict = {}
        sym, mod = self.decode_sat(images, spec, history, final)
        s_log, m_log = (t.cpu() for t in final_log_probs(final))
        return finish_sat(self.labels.vocab, sym.tolist(), mod.tolist(), s_log, m_log, spec, stats, confidences)


