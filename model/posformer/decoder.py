"""PosFormer's decoder: CoMER-style post-norm transformer layers whose cross-attention is refined by the
coverage of earlier steps (model/posformer/arm.py), run teacher-forced for training or one step at a time with a
key/value cache and a running coverage for greedy and beam search.

One stack serves two inputs: token embeddings (the recognizer) and, in training only, position-
identifier embeddings (the position-forest branch, model/posformer/recognizer.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..layers import Attention, sincos_1d
from .arm import AttentionRefinement, CoverageCrossAttention, Refine, exclusive_coverage


class CoverageDecoderLayer(nn.Module):
    """Causal self-attention, refined cross-attention, ReLU feed-forward; each added then LayerNorm."""

    def __init__(self, dim: int, heads: int, ff: int, dropout: float):
        super().__init__()
        self.self_attn = Attention(dim, heads, dropout)
        self.cross_attn = CoverageCrossAttention(dim, heads, dropout)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff, dim))
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mem_kv, refine: Refine | None, cache: dict | None = None):
        if cache is None:
            sa = self.self_attn(x, causal=True)
        else:  # x holds the new positions only
            k, v = self.self_attn.project_kv(x)
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
            sa = self.self_attn(x, kv=(k, v))
        x = self.norm1(x + self.drop(sa))
        ca, attn, raw = self.cross_attn(x, mem_kv, refine)
        x = self.norm2(x + self.drop(ca))
        return self.norm3(x + self.drop(self.ff(x))), attn, raw


@dataclass
class StepState:
    """What incremental decoding carries per layer: the self-attention cache, the coverage so far
    ([B, 2 * heads, N], None = zero) and the current step's maps, added by `commit` once the emitted
    token (and so whether it counts) is known."""

    caches: list[dict]
    coverage: list[torch.Tensor | None]
    pending: list[torch.Tensor | None] = field(default_factory=list)

    @classmethod
    def empty(cls, depth: int) -> "StepState":
        return cls([{} for _ in range(depth)], [None] * depth, [None] * depth)

    def reorder(self, idx: torch.Tensor) -> None:
        """Keep rows `idx` (beam search: the source hypothesis of each survivor)."""
        for c in self.caches:
            c["k"], c["v"] = c["k"][idx], c["v"][idx]
        self.coverage = [None if c is None else c[idx] for c in self.coverage]
        self.pending = [None if p is None else p[idx] for p in self.pending]

    def commit(self, keep: torch.Tensor) -> None:
        """Add this step's maps to the coverage where keep [B] is true."""
        for i, p in enumerate(self.pending):
            if p is not None:
                add = p * keep[:, None, None].to(p.dtype)
                self.coverage[i] = add if self.coverage[i] is None else self.coverage[i] + add
        self.pending = [None] * len(self.pending)


class CoverageDecoder(nn.Module):
    """The layer stack; without `correction` it has no refinement module (a plain transformer decoder)."""

    def __init__(self, dim: int, depth: int, heads: int, ff: int, dropout: float, correction: bool,
                 arm_channels: int, grid: tuple[int, int]):
        super().__init__()
        self.layers = nn.ModuleList(CoverageDecoderLayer(dim, heads, ff, dropout) for _ in range(depth))
        self.arm = AttentionRefinement(heads, arm_channels, grid) if correction else None

    def memory_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [layer.cross_attn.project_kv(memory) for layer in self.layers]

    def forward(self, x: torch.Tensor, mem_kv, keep: torch.Tensor) -> torch.Tensor:
        """Teacher-forced: x [B, T, d], keep [B, T] (does step t's attention count as coverage)."""
        prev = None
        for layer, kv in zip(self.layers, mem_kv):
            x, prev, _ = layer(x, kv, self._refine_full(prev, keep))
        return x

    def _refine_full(self, prev: torch.Tensor | None, keep: torch.Tensor) -> Refine | None:
        if self.arm is None or prev is None:
            return None
        return lambda raw: self.arm(exclusive_coverage(torch.cat([prev, raw], 1), keep))

    def step(self, x: torch.Tensor, mem_kv, state: StepState) -> torch.Tensor:
        """One new position x [B, 1, d]; the caller commits the coverage after choosing the token."""
        prev = None
        for i, (layer, kv) in enumerate(zip(self.layers, mem_kv)):
            refine = None
            if self.arm is not None and prev is not None:
                refine = self._refine_step(state.coverage[i], prev)
            x, attn, raw = layer(x, kv, refine, state.caches[i])
            if refine is not None:
                state.pending[i] = torch.cat([prev, raw], 1)[:, :, 0]
            prev = attn
        return x

    def _refine_step(self, coverage: torch.Tensor | None, prev: torch.Tensor) -> Refine:
        if coverage is None:
            b, h, _, n = prev.shape
            coverage = prev.new_zeros(b, 2 * h, n)
        return lambda raw: self.arm(coverage[:, :, None, :])


class TokenDecoder(nn.Module):
    """Token embedding (+ LayerNorm) and 1D sin-cos positions, the stack, the vocabulary head."""

    def __init__(self, num_tokens: int, max_len: int, dim: int, stack: CoverageDecoder):
        super().__init__()
        self.embed = nn.Sequential(nn.Embedding(num_tokens, dim), nn.LayerNorm(dim))
        self.register_buffer("pos", sincos_1d(max_len, dim)[None], persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.stack = stack
        self.head = nn.Linear(dim, num_tokens)

    def inputs(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.norm(self.embed(ids) + self.pos[:, start: start + ids.shape[1]].to(self.head.weight.dtype))

    def forward(self, ids: torch.Tensor, mem_kv, keep: torch.Tensor) -> torch.Tensor:
        return self.head(self.stack(self.inputs(ids), mem_kv, keep))

    def step(self, last: torch.Tensor, pos: int, mem_kv, state: StepState) -> torch.Tensor:
        """last [B] (the previous token) -> log-probabilities [B, V] of the next one."""
        h = self.stack.step(self.inputs(last[:, None], pos), mem_kv, state)
        return F.log_softmax(self.head(h[:, 0]).float(), -1)
