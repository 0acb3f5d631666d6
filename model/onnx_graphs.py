"""The pieces of a recognizer that become ONNX graphs, as small torch modules with tensor-only inputs.

A decoding loop has two costs: the encoder (once per image) and the decoder (once per refinement
step or per token). So the export is two graphs, and the loop between them runs outside
(model/onnx_samplers.py):
- `MemoryGraph`: images -> every decoder layer's cross-attention keys and values of the encoder
  memory, stacked [layers, B, heads, N, head_dim] (computed once per image, as the PyTorch path does);
- `SATStepGraph` (GryphOne): one refinement step of the SAT decoder, (symbols, modifiers, memory
  keys/values) -> symbol and modifier logits [B, L, V];
- `ARStepGraph` (the AR baseline): one cached decoder step, (last token, its position, the
  self-attention cache so far, memory keys/values) -> next-token logits and the cache grown by one;
- `PosFormerStepGraph`: the same, plus the coverage each refined layer carries ([layers, B, 2 * heads,
  N]) and the previous step's maps, added to it here once the token they emitted (this step's input)
  says whether they count (IAC);
- `HVTMemoryGraph` / `HVTStepGraph`: images -> the attention memory, its keys and the LSTM's initial
  (h, c); one LSTM step with coverage attention, (token, h, c, context, coverage) -> logits and the
  next (h, c, context, coverage).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .autoregressive import ARDecoder
from .coverage_decoder import Memory, State
from .diffusion import SATDecoder
from .posformer_decoder import StepState
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
    posformer_search's `StepState.commit` does after each step (zeros before the first step)."""

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


def memory_graph(recognizer: Recognizer) -> nn.Module:
    """The encoder half: images -> what every decoder step reads (and HVT's initial LSTM state)."""
    if recognizer.kind == "posformer":
        return PosFormerMemoryGraph(recognizer).eval()
    if recognizer.kind == "hvt":
        return HVTMemoryGraph(recognizer).eval()
    return MemoryGraph(recognizer).eval()


def decoder_graph(recognizer: Recognizer) -> nn.Module:
    """The step graph of an exportable recognizer; ValueError (one line) for the others."""
    graphs = {"diffusion": lambda r: SATStepGraph(r.decoder), "ar": lambda r: ARStepGraph(r.decoder),
              "posformer": PosFormerStepGraph, "hvt": HVTStepGraph}
    if recognizer.kind not in graphs:
        raise ValueError(f"ONNX export supports model.kind {', '.join(graphs)}; {recognizer.kind} is not exportable")
    return graphs[recognizer.kind](recognizer).eval()

