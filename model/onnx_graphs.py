"""The pieces of a recognizer that become ONNX graphs, as small torch modules with tensor-only inputs.

A decoding loop has two costs: the encoder (once per image) and the decoder (once per refinement
step or per token). So the export is two graphs, and the loop between them runs outside
(model/onnx_samplers.py):
- `MemoryGraph`: images -> every decoder layer's cross-attention keys and values of the encoder
  memory, stacked [layers, B, heads, N, head_dim] (computed once per image, as the PyTorch path does);
- each recognizer's step graph, in its own package (`gryphone/onnx.py`: one refinement step of the SAT
  decoder; `ar/onnx.py`: one cached token step, the position an input; `posformer/onnx.py`: the same
  carrying the coverage; `hvt/onnx.py`: the LSTM's memory and one LSTM step), handed to the exporter
  by the recognizer's export hook as an `OnnxGraphs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

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


MEM_AXES = {1: "batch", 3: "memory"}
Examples = Callable[[Recognizer, dict], tuple]


@dataclass
class OnnxGraphs:
    """What a recognizer's export hook (`Recognizer.onnx_graphs`) gives model/onnx_export.py: its two
    graphs and how to trace them, and how model/onnx_runtime.py decodes them (`graph` names the NumPy
    loop, which is shared by every recognizer whose step has that form)."""

    graph: str                        # "sat-step" | "ar-cached-step" | "posformer-step" | "hvt-step"
    memory: nn.Module                 # images -> the loop's memory outputs (onnx_runtime.ENCODER_OUTPUTS[graph])
    step: nn.Module                   # one refinement step or one token
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
