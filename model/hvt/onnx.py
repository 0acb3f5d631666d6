"""HVT's graphs for ONNX: the attention memory with the LSTM's initial state, and one LSTM step."""
from __future__ import annotations

import torch
import torch.nn as nn

from ..recognizer import Recognizer
from .decoder import Memory, State


class HVTMemoryGraph(nn.Module):
    def __init__(self, recognizer: Recognizer):
        super().__init__()
        self.recognizer = recognizer

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        memory, state = self.recognizer.start(images)
        return memory.values, memory.keys, state.h, state.c


class HVTStepGraph(nn.Module):
    def __init__(self, recognizer: Recognizer):
        super().__init__()
        self.decoder = recognizer.decoder

    def forward(self, token: torch.Tensor, h: torch.Tensor, c: torch.Tensor, context: torch.Tensor,
                coverage: torch.Tensor, mem_values: torch.Tensor, mem_keys: torch.Tensor):
        logits, state, _ = self.decoder.step(token[:, 0], State(h, c, context, coverage), Memory(mem_values, mem_keys))
        return (logits, *state)
