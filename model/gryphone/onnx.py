"""GryphOne's step graph for ONNX: one refinement step of the SAT decoder (its memory graph is
onnx_graphs.MemoryGraph)."""
from __future__ import annotations

import torch
import torch.nn as nn

from ..onnx_graphs import _kv_list
from .diffusion import SATDecoder


class SATStepGraph(nn.Module):
    def __init__(self, decoder: SATDecoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, symbols: torch.Tensor, modifiers: torch.Tensor, mem_k: torch.Tensor,
                mem_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.decoder(symbols, modifiers, _kv_list(mem_k, mem_v, len(self.decoder.blocks)))
        return out["sym"], out["mod"]
