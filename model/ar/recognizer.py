"""The autoregressive baseline: GryphOne's ViT encoder with a causal transformer decoder over plain
LaTeX tokens, so "diffusion vs autoregressive" compares decoders alone. Also the stage-1 reader of a
two-stage GryphOne run (train/pretrain.py)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import torch

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec

from ..encoder import ViTConfig, build_vit, vit_flops
from ..layers import decoder_flops
from ..recognizer import DecodeSpec, Recognizer, RecognizerConfig
from ..search import TokenSteps, greedy, kv_rows, reverse_ids, search_ids
from ..warm_start import encoder_from_file
from .decoder import ARDecoder, ar_loss, cached_step, static_step, token_logp, token_probs


@dataclass
class ARConfig(RecognizerConfig, ViTConfig):
    kind: str = "ar"
    dec_dim: int = 384
    dec_depth: int = 5
    dec_heads: int = 8
    dec_pos_init: str = "random"          # decoder position table at init: "random" N(0, 0.02) | "sincos"
    bidirectional: bool = False           # L2R + R2L training (CoMER), bidirectional beam reranking


class ARRecognizer(Recognizer):
    kind = "ar"
    config_class = ARConfig
    label_kind = "token"
    trims_padding = True
    samplers = ("greedy", "beam")
    default_sampler = "greedy"
    title = "the AR baseline"
    description = "autoregressive baseline (ViT encoder + causal transformer decoder)"
    static_parts = ("encoder", "decoder")  # the decoder on static_step's fixed shapes

    def __init__(self, cfg: ARConfig, render: RenderSpec, labels: LabelSpec):
        super().__init__(cfg, render, labels)
        self.encoder = build_vit(cfg, render.size)
        self.decoder = ARDecoder(len(labels.vocab.tokens), cfg.max_len, cfg.dec_dim, cfg.dec_depth, cfg.dec_heads,
                                 cfg.enc_dim, cfg.dropout, pos_init=cfg.dec_pos_init)

    def onnx_graphs(self):
        from .onnx import cached_token_graphs

        return cached_token_graphs(self)

    @classmethod
    def stage_one(cls, cfg) -> str | None:
        return "the AR baseline is the reader itself"

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator | None = None
             ) -> dict[str, torch.Tensor]:
        memory, ids = self.encoder(images), batch["tokens"]
        if self.cfg.bidirectional:  # both directions in one batch of 2B: the same decoder reads EOS ... BOS
            memory, ids = torch.cat([memory, memory]), torch.cat([ids, reverse_ids(ids)])
        return ar_loss(self.decoder, self.decoder.memory_kv(memory), ids)

    def warm_start(self, log: Callable[[str], None] = print) -> None:
        if self.cfg.encoder_init:
            encoder_from_file(self.encoder, self.cfg.encoder_init, log)

    def flops_per_image(self, train: bool = True) -> float:
        cfg = self.cfg
        enc, n = vit_flops(cfg, self.render.size)
        dec, mem_kv = decoder_flops(cfg.max_len, cfg.dec_dim, cfg.dec_depth, n, cfg.enc_dim,
                                    len(self.labels.vocab.tokens))
        if not train:
            return enc + dec + mem_kv
        return 3 * (enc + (2 if cfg.bidirectional else 1) * (dec + mem_kv))

    @torch.no_grad()
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None) -> torch.Tensor:
        return self._decode(images, spec, scored=False)[0]

    @torch.no_grad()
    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec,
                      history: list | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self._decode(images, spec, scored=True)

    def token_steps(self, images: torch.Tensor) -> TokenSteps:
        return self._steps(self.decoder.memory_kv(self.encoder(images)), images)

    def _steps(self, mem_kv, images: torch.Tensor) -> TokenSteps:
        dec = self.decoder

        def forced(i: int, ids: torch.Tensor) -> torch.Tensor:
            return token_logp(dec, kv_rows(mem_kv, i, ids.shape[0]), ids)
        steps = TokenSteps(images.shape[0], lambda: cached_step(dec, mem_kv),
                           lambda i, width: cached_step(dec, kv_rows(mem_kv, i, width)), self.cfg.max_len,
                           images.device, forced)
        # one decoder reads both ways: right to left is the same step started at EOS
        return replace(steps, r2l=steps) if self.cfg.bidirectional else steps

    def _decode(self, images: torch.Tensor, spec: DecodeSpec, scored: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        mem_kv = self.decoder.memory_kv(self.encoder(images))
        beam = spec.beam if spec.sampler == "beam" else 1
        if beam <= 1 and self.static_decoding:
            ids = greedy(static_step(self.decoder, mem_kv), images.shape[0], self.cfg.max_len, images.device)
        else:
            ids = search_ids(self._steps(mem_kv, images), beam, bidirectional=spec.bidirectional)
        return ids, token_probs(self.decoder, mem_kv, ids) if scored else None
