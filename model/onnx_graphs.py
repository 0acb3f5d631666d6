"""The pieces of a recognizer that become ONNX graphs, as small torch modules with tensor-only inputs.

A decoding loop has two costs: the encoder (once per image) and the decoder (once per refinement
step or per token). So the export is two graphs, and the loop between them runs outside
(model/onnx_samplers.py):
- `MemoryGraph`: images -> every decoder layer's cross-attention keys and values of the encoder
  memory, stacked [layers, B, heads, N, head_dim] (computed once per image, as the PyTorch path does);
- `SATStepGraph` (GryphOne): one refinement step of the SAT decoder, (symbols, modifiers, memory
  keys/values) -> symbol and modifier logits [B, L, V];
- `ARStepGraph` (the AR baseline): one cached decoder step, (last token, its position, the
  self-attention cache so far, memory keys/values) -> next-token logits and the cache grown by one.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .autoregressive import ARDecoder
from .diffusion import SATDecoder
from .recognizer import Recognizer


def _kv_list(mem_k: torch.Tensor, mem_v: torch.Tensor, depth: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(mem_k[i], mem_v[i]) for i in range(depth)]


class MemoryGraph(nn.Module):
    def __init__(self, recognizer: Recognizer):
        super().__init__()
        self.encoder, self.decoder = recognizer.encoder, recognizer.decoder

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        kv = self.decoder.memory_kv(self.encoder(images))
        return torch.stack([k for k, _ in kv]), torch.stack([v for _, v in kv])


class SATStepGraph(nn.Module):
    def __init__(self, decoder: SATDecoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, symbols: torch.Tensor, modifiers: torch.Tensor, mem_k: torch.Tensor,
                mem_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.decoder(symbols, modifiers, _kv_list(mem_k, mem_v, len(self.decoder.blocks)))
        return out["sym"], out["mod"]


class ARStepGraph(nn.Module):
    """ARDecoder.forward with a cache, for one new token whose position is an input (so one graph
    serves every step); the blocks' own cached path does the attention."""

    def __init__(self, decoder: ARDecoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, token: torch.Tensor, position: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor,
                mem_k: torch.Tensor, mem_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dec = self.decoder
        x = dec.tok_emb(token) + dec.pos_emb[0].index_select(0, position)[None]
        new_k, new_v = [], []
        for i, block in enumerate(dec.blocks):
            cache = {"k": past_k[i], "v": past_v[i]}
            x = block(x, (mem_k[i], mem_v[i]), causal=True, self_cache=cache)
            new_k.append(cache["k"])
            new_v.append(cache["v"])
        return dec.head(dec.norm(x))[:, -1], torch.stack(new_k), torch.stack(new_v)


def decoder_graph(recognizer: Recognizer) -> nn.Module:
    """The step graph of an exportable recognizer; ValueError (one line) for the others."""
    if recognizer.kind == "diffusion":
        return SATStepGraph(recognizer.decoder).eval()
    if recognizer.kind == "ar":
        return ARStepGraph(recognizer.decoder).eval()
    raise ValueError(f"ONNX export supports model.kind diffusion (GryphOne) and ar; {recognizer.kind} is not "
                     f"exportable yet (its decoder keeps coverage state the step graphs do not carry)")

