"""A fifth recognizer, whole in this one package, for the seam's test: a two-layer convolutional encoder
and the AR baseline's decoder. Registering it is one line (`RECOGNIZERS["toy"] = ToyRecognizer`); the
trainer, evaluation, prediction, the page and the ONNX export then take it as they take the others."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from model.ar.decoder import ARDecoder, ar_loss, cached_step, token_probs
from model.ar.onnx import cached_token_graphs
from model.onnx_graphs import OnnxGraphs
from model.recognizer import DecodeSpec, Recognizer, RecognizerConfig
from model.search import greedy


@dataclass
class ToyConfig(RecognizerConfig):
    kind: str = "toy"
    width: int = 32
    heads: int = 2
    depth: int = 1


class ConvEncoder(nn.Module):
    """Two stride-4 convolutions: images [B, 1, H, W] -> memory [B, H/16 * W/16, width]."""

    def __init__(self, width: int):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, width, 4, 4), nn.GELU(), nn.Conv2d(width, width, 4, 4))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images).flatten(2).transpose(1, 2)


class ToyRecognizer(Recognizer):
    kind = "toy"
    config_class = ToyConfig
    title = "the toy recognizer"
    description = "toy (convolutional encoder + causal transformer decoder)"
    samplers = ("greedy",)

    def __init__(self, cfg: ToyConfig, render, labels):
        super().__init__(cfg, render, labels)
        self.encoder = ConvEncoder(cfg.width)
        self.decoder = ARDecoder(len(labels.vocab.tokens), cfg.max_len, cfg.width, cfg.depth, cfg.heads, cfg.width,
                                 cfg.dropout)

    def loss(self, images, batch, generator=None):
        return ar_loss(self.decoder, self.decoder.memory_kv(self.encoder(images)), batch["tokens"])

    def flops_per_image(self, train: bool = True) -> float:
        return 1e6

    @torch.no_grad()
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history=None) -> torch.Tensor:
        mem_kv = self.decoder.memory_kv(self.encoder(images))
        return greedy(cached_step(self.decoder, mem_kv), images.shape[0], self.cfg.max_len, images.device)

    @torch.no_grad()
    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec, history=None):
        ids = self.decode_ids(images, spec)
        return ids, token_probs(self.decoder, self.decoder.memory_kv(self.encoder(images)), ids)

    def onnx_graphs(self) -> OnnxGraphs:
        return cached_token_graphs(self)
