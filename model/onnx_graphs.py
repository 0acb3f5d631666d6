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

from dataclasses import dataclass
from typing import Callable

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


MEM_AXES = {1: "batch", 3: "memory"}
Examples = Callable[[Recognizer, dict], tuple]


@dataclass
class OnnxGraphs:
    """What a recognizer's export hook (`Recognizer.onnx_graphs`) gives model/onnx_export.py: its two
    graphs and how to trace them, and how model/onnx_runtime.py decodes them (`graph` names the NumPy
    loop, which is shared by every recognizer whose step has that form)."""

    graph: str                        # "sat-step" | "ar-cached-step" | "posformer-step" | "hvt-step"
    memory: nn.Module                 # images -> memory_outputs (once per image)
    step: nn.Module                   # one refinement step or one token
    memory_outputs: tuple[str, ...]
    examples: Examples                # (recognizer, memory outputs) -> (args, input names, output names, axes)
    samplers: tuple[str, ...]         # what the NumPy loops decode it with


def sat_step_examples(rec: Recognizer, mem: dict) -> tuple:
    ids = torch.full((2, rec.cfg.max_len), 1, dtype=torch.long)
    return ((ids, ids.clone(), mem["mem_k"], mem["mem_v"]), ["symbols", "modifiers", "mem_k", "mem_v"],
            ["sym_logits", "mod_logits"],
            {"symbols": {0: "batch"}, "modifiers": {0: "batch"}, "mem_k": MEM_AXES, "mem_v": MEM_AXES,
             "sym_logits": {0: "batch"}, "mod_logits": {0: "batch"}})


def cached_step_examples(rec: Recognizer, mem: dict, coverage: bool = False) -> tuple:
    """A cached token step's inputs: token, position, the self-attention cache (and with `coverage`,
    PosFormer's coverage and pending maps)."""
    depth, _, heads, n, head_dim = mem["mem_k"].shape
    past = torch.zeros(depth, 2, heads, 1, head_dim)
    cache, grown = {1: "batch", 3: "past"}, {1: "batch", 3: "past_plus_one"}
    args = [torch.ones(2, 1, dtype=torch.long), torch.tensor([1]), past, past.clone()]
    inputs, outputs = ["token", "position", "past_k", "past_v"], ["logits", "new_k", "new_v"]
    axes = {"token": {0: "batch"}, "past_k": cache, "past_v": cache, "logits": {0: "batch"}, "new_k": grown,
            "new_v": grown}
    if coverage:
        cover = torch.zeros(depth, 2, 2 * heads, n)
        args += [cover, cover.clone()]
        inputs += ["coverage", "pending"]
        outputs += ["new_coverage", "new_pending"]
        axes.update({k: {1: "batch", 3: "memory"} for k in ("coverage", "pending", "new_coverage", "new_pending")})
    axes.update({"mem_k": MEM_AXES, "mem_v": MEM_AXES})
    return tuple(args + [mem["mem_k"], mem["mem_v"]]), inputs + ["mem_k", "mem_v"], outputs, axes


def lstm_step_examples(rec: Recognizer, mem: dict) -> tuple:
    b, n, d = mem["mem_values"].shape
    state = (mem["h"], mem["c"], torch.zeros(b, d), torch.zeros(b, n))
    inputs = ["token", "h", "c", "context", "coverage", "mem_values", "mem_keys"]
    outputs = ["logits", "new_h", "new_c", "new_context", "new_coverage"]
    return ((torch.ones(b, 1, dtype=torch.long), *state, mem["mem_values"], mem["mem_keys"]), inputs, outputs,
            {name: {0: "batch"} for name in inputs + outputs})


def cached_token_graphs(rec: Recognizer) -> OnnxGraphs:
    """A ViT-style encoder (`rec.encoder`) and an ARDecoder (`rec.decoder`): the AR baseline's export,
    and any recognizer built from the same two parts."""
    return OnnxGraphs("ar-cached-step", MemoryGraph(rec).eval(), ARStepGraph(rec.decoder).eval(), ("mem_k", "mem_v"),
                      cached_step_examples, ("greedy",))
