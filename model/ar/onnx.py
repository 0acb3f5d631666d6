"""The AR baseline's step graph for ONNX, and the export of any recognizer built from a ViT-style
encoder and an ARDecoder (`cached_token_graphs`)."""
from __future__ import annotations

import torch
import torch.nn as nn

from ..onnx_graphs import MemoryGraph, OnnxGraphs, cached_step_examples
from ..recognizer import Recognizer
from .decoder import ARDecoder


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


def cached_token_graphs(rec: Recognizer) -> OnnxGraphs:
    """A ViT-style encoder (`rec.encoder`) and an ARDecoder (`rec.decoder`): the AR baseline's export,
    and any recognizer built from the same two parts."""
    samplers = tuple(s for s in ("greedy", "beam") if s in rec.samplers)  # beam: model.search.beam's rule in NumPy
    return OnnxGraphs("ar-cached-step", MemoryGraph(rec).eval(), ARStepGraph(rec.decoder).eval(), cached_step_examples,
                      samplers or ("greedy",))
