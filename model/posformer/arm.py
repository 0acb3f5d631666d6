"""Coverage-refined cross-attention: CoMER's attention refinement module (ARM) and PosFormer's implicit
attention correction (IAC), which is the ARM with structure tokens left out of the coverage.

How the refinement is computed (CoMER, ECCV 2022, as in its code): in every decoder layer but the
first, the cross-attention logits e_t of step t are corrected to e_t - R(C_t) before the softmax, where
the coverage C_t = sum over earlier steps s < t of [A'_s ; A_s], A'_s the previous layer's (refined)
attention and A_s this layer's unrefined one (2 * heads maps over the memory grid), and R is a 5x5
conv (2 * heads -> `channels`), ReLU, a 1x1 conv back to one map per head and a BatchNorm. Step t's own
attention never enters its coverage (an exclusive prefix sum), so an incremental decoder can carry
C_t as a running sum. IAC multiplies step s's maps by 0 when the token emitted at step s is a
structure token (model/posformer/token_forest.py: `^ _ { }`, spacing, layout, style commands): they have no
region in the image, so they must not mark any region as covered. (The official PosFormer code keys
the mask on the step's input token, i.e. one step later; we key it on the token the step's attention
was used to emit, which is what the paper describes.)
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..layers import WeightsDropout

Refine = Callable[[torch.Tensor], torch.Tensor]


def exclusive_coverage(attn: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """attn [B, C, T, N], keep [B, T] (bool or 0/1): C_t = sum_{s<t} keep_s * attn_s."""
    a = attn * keep[:, None, :, None].to(attn.dtype)
    return a.cumsum(2) - a


class AttentionRefinement(nn.Module):
    """R: coverage [B, 2 * heads, T, N] -> logit correction [B, heads, T, N] over the memory grid."""

    def __init__(self, heads: int, channels: int, grid: tuple[int, int]):
        super().__init__()
        self.heads, self.grid = heads, tuple(grid)
        self.conv = nn.Conv2d(2 * heads, channels, 5, padding=2)
        self.proj = nn.Conv2d(channels, heads, 1, bias=False)
        self.norm = nn.BatchNorm2d(heads)

    def forward(self, coverage: torch.Tensor) -> torch.Tensor:
        b, c, t, n = coverage.shape
        x = coverage.transpose(1, 2).reshape(b * t, c, *self.grid)
        x = self.norm(self.proj(F.relu(self.conv(x))))
        return x.view(b, t, self.heads, n).transpose(1, 2)


class CoverageCrossAttention(WeightsDropout):
    """Multi-head cross-attention with explicit weights, so a `refine` callback can correct the logits.
    Returns (output, refined attention, unrefined attention); the maps are float32."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"width {dim} is not divisible by {heads} heads")
        self.heads, self.head_dim, self.dropout = heads, dim // heads, dropout
        self.q, self.kv, self.proj = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim), nn.Linear(dim, dim)

    def project_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, _ = memory.shape
        k, v = self.kv(memory).view(b, n, 2, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return k, v

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], refine: Refine | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t, d = x.shape
        k, v = kv
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        logits = (q @ k.transpose(-1, -2)).float() * self.head_dim ** -0.5
        raw = logits.softmax(-1)
        attn = raw if refine is None else (logits - refine(raw).float()).softmax(-1)
        out = (F.dropout(attn, self.dropout, self.training).to(v.dtype) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out), attn, raw
