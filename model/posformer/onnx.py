"""PosFormer's graphs for ONNX: its memory (encoder + projection) and one token step carrying the
coverage."""
from __future__ import annotations

import torch
import torch.nn as nn

from ..onnx_graphs import _kv_list
from ..recognizer import Recognizer
from .decoder import StepState


class PosFormerMemoryGraph(nn.Module):
    def __init__(self, recognizer: Recognizer):
        super().__init__()
        self.recognizer = recognizer

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        kv = self.recognizer.decoder.stack.memory_kv(self.recognizer.encode(images))
        return torch.stack([k for k, _ in kv]), torch.stack([v for _, v in kv])


class PosFormerStepGraph(nn.Module):
    """TokenDecoder.step for one token at a position given as an input. `pending` holds the maps of the
    step that emitted `token`; they join the coverage here, weighted by keep[token], which is what
    search.py's `StepState.commit` does after each step (zeros before the first step)."""

    def __init__(self, recognizer: Recognizer):
        super().__init__()
        self.decoder = recognizer.decoder
        self.register_buffer("keep", recognizer.keep.float(), persistent=False)

    def forward(self, token: torch.Tensor, position: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor,
                coverage: torch.Tensor, pending: torch.Tensor, mem_k: torch.Tensor, mem_v: torch.Tensor):
        dec, depth = self.decoder, past_k.shape[0]
        coverage = coverage + pending * self.keep[token[:, 0]][None, :, None, None]
        state = StepState([{"k": past_k[i], "v": past_v[i]} for i in range(depth)],
                          [coverage[i] for i in range(depth)], [None] * depth)
        x = dec.norm(dec.embed(token) + dec.pos[0].index_select(0, position)[None].to(dec.head.weight.dtype))
        h = dec.stack.step(x, _kv_list(mem_k, mem_v, depth), state)
        pending = torch.stack([torch.zeros_like(coverage[i]) if p is None else p for i, p in enumerate(state.pending)])
        return (dec.head(h[:, 0]), torch.stack([c["k"] for c in state.caches]),
                torch.stack([c["v"] for c in state.caches]), coverage, pending)
