"""Transformer building blocks shared by the encoder and both decoders.

One attention module serves self-attention (bidirectional or causal, with an optional incremental
key/value cache for autoregressive decoding) and cross-attention (whose keys/values of the encoder
memory are computed once per image and reused across every decoding step).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class WeightsDropout(nn.Module):
    """An attention module that applies dropout at rate `self.dropout` to its attention weights in
    training. `model.attn_dropout=false` sets that rate to 0 on every such module (model.registry.build),
    whichever recognizer holds it."""

    dropout: float


class Attention(WeightsDropout):
    """Multi-head attention over `F.scaled_dot_product_attention` (flash/mem-efficient on CUDA)."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, kv_dim: int | None = None):
        super().__init__()
        if dim % heads:
            raise ValueError(f"width {dim} is not divisible by {heads} heads")
        self.heads, self.head_dim, self.dropout = heads, dim // heads, dropout
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(kv_dim or dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.head_dim).transpose(1, 2)

    def project_kv(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of `source`, shaped [B, heads, N, head_dim]; cache these for cross-attention."""
        k, v = self.kv(source).chunk(2, dim=-1)
        return self._split(k), self._split(v)

    def forward(
        self,
        x: torch.Tensor,
        source: torch.Tensor | None = None,
        kv: tuple[torch.Tensor, torch.Tensor] | None = None,
        causal: bool = False,
        key_padding: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x attends to `source` (default: itself), or to precomputed `kv`.

        key_padding: bool [B, N_keys], True where a key must be ignored.
        """
        q = self._split(self.q(x))
        k, v = kv if kv is not None else self.project_kv(x if source is None else source)
        mask = None
        if key_padding is not None:
            mask = ~key_padding[:, None, None, :]
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
            is_causal=causal and mask is None,
        )
        b, h, n, d = out.shape
        return self.proj(out.transpose(1, 2).reshape(b, n, h * d))


class MLP(nn.Module):
    def __init__(self, dim: int, hidden: int, dropout: float = 0.0):
        super().__init__()
        self.fc1, self.fc2, self.drop = nn.Linear(dim, hidden), nn.Linear(hidden, dim), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(self.drop(F.gelu(self.fc1(x)))))


class EncoderBlock(nn.Module):
    """Pre-norm ViT block."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, dropout: float = 0.0):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, dropout)
        self.mlp = MLP(dim, int(dim * mlp_ratio), dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x)))
        return x + self.mlp(self.norm2(x))


class DecoderBlock(nn.Module):
    """Pre-norm decoder block: self-attention, cross-attention to the encoder memory, MLP.

    `causal=True` makes it the autoregressive baseline's block; the diffusion decoder is bidirectional.
    """

    def __init__(self, dim: int, heads: int, mem_dim: int, mlp_ratio: float = 4.0, dropout: float = 0.0):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.self_attn = Attention(dim, heads, dropout)
        self.cross_attn = Attention(dim, heads, dropout, kv_dim=mem_dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio), dropout)
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        mem_kv: tuple[torch.Tensor, torch.Tensor],
        causal: bool = False,
        self_cache: dict | None = None,
    ) -> torch.Tensor:
        h = self.norm1(x)
        if self_cache is not None and "pos" in self_cache:  # preallocated: write at pos, mask what follows
            k, v = self.self_attn.project_kv(h)
            pos = self_cache["pos"]
            k, v = self_cache["k"].index_copy(2, pos, k), self_cache["v"].index_copy(2, pos, v)
            self_cache["k"], self_cache["v"] = k, v
            x = x + self.drop(self.self_attn(h, kv=(k, v), key_padding=self_cache["ignore"]))
        elif self_cache is not None:  # incremental causal decoding: x holds only the new positions
            k, v = self.self_attn.project_kv(h)
            if "k" in self_cache:
                k = torch.cat([self_cache["k"], k], dim=2)
                v = torch.cat([self_cache["v"], v], dim=2)
            self_cache["k"], self_cache["v"] = k, v
            x = x + self.drop(self.self_attn(h, kv=(k, v), causal=False))
        else:
            x = x + self.drop(self.self_attn(h, causal=causal))
        x = x + self.drop(self.cross_attn(self.norm2(x), kv=mem_kv))
        return x + self.mlp(self.norm3(x))


class NormedAttention(Attention):
    """The official GryphOne decoder's attention: every projection (q, k/v, out) is LayerNorm -> Linear."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, kv_dim: int | None = None):
        super().__init__(dim, heads, dropout, kv_dim)
        self.q = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim))
        self.kv = nn.Sequential(nn.LayerNorm(kv_dim or dim), nn.Linear(kv_dim or dim, 2 * dim))
        self.proj = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim))


class OfficialDecoderBlock(nn.Module):
    """The official implementation's block layout (docs/model.md): self-attention, cross-attention and a
    d_model-wide ReLU feed-forward, each added to its input (post-add, no pre-norm), with LayerNorm
    inside every projection; dropout on the attention weights. Bidirectional only."""

    def __init__(self, dim: int, heads: int, mem_dim: int, dropout: float = 0.0):
        super().__init__()
        self.self_attn = NormedAttention(dim, heads, dropout)
        self.cross_attn = NormedAttention(dim, heads, dropout, kv_dim=mem_dim)
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.ReLU(), nn.LayerNorm(dim), nn.Linear(dim, dim))

    def forward(self, x: torch.Tensor, mem_kv: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.self_attn(x)
        x = x + self.cross_attn(x, kv=mem_kv)
        return x + self.ff(x)


def sincos_1d(n: int, dim: int) -> torch.Tensor:
    """Fixed 1D sin-cos table [n, dim]."""
    if dim % 2:
        raise ValueError("sin-cos positions need an even width")
    omega = 1.0 / (10000 ** (torch.arange(dim // 2, dtype=torch.float64) / (dim // 2)))
    angles = torch.arange(n, dtype=torch.float64)[:, None] * omega[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()


def position_table(n: int, dim: int, init: str) -> torch.Tensor:
    """A learned decoder position table's initial value [1, n, dim], at the token embeddings' 0.02 scale.

    "random": N(0, 0.02), GPT-style. "sincos": the fixed 1D sin-cos table scaled to the same std, so
    that neighbouring positions start out similar (an order the decoder would otherwise have to learn)."""
    if init == "random":
        return torch.randn(1, n, dim) * 0.02
    if init == "sincos":
        return (sincos_1d(n, dim) * (0.02 * 2 ** 0.5))[None]
    raise ValueError(f"unknown position init {init!r} (random | sincos)")


def sincos_2d(grid_h: int, grid_w: int, dim: int) -> torch.Tensor:
    """Fixed 2D sin-cos table [grid_h * grid_w, dim] (MAE/DINO style): half the width per axis."""
    if dim % 4:
        raise ValueError("2D sin-cos positions need a width divisible by 4")
    rows = sincos_1d(grid_h, dim // 2)[:, None, :].expand(grid_h, grid_w, dim // 2)
    cols = sincos_1d(grid_w, dim // 2)[None, :, :].expand(grid_h, grid_w, dim // 2)
    return torch.cat([rows, cols], dim=-1).reshape(grid_h * grid_w, dim)


def decoder_flops(positions: int, dim: int, depth: int, memory: int, mem_dim: int, outputs: int,
                  ff_hidden: int | None = None) -> tuple[float, float]:
    """(forward matmul FLOPs of a transformer decoder over `positions`, of its memory key/value
    projections), 2 per multiply-add: self- and cross-attention projections, the MLP, attention
    scores and values, and the output heads (`outputs` logits per position)."""
    L, dd = positions, dim
    ff = 2 * dd * (ff_hidden if ff_hidden is not None else 4 * dd)
    per_layer = 2 * L * (4 * dd * dd + ff + 2 * dd * dd) + 2 * 2 * L * L * dd + 2 * 2 * L * memory * dd
    mem_kv = depth * 2 * memory * mem_dim * 2 * dd
    return float(depth * per_layer + 2 * L * dd * outputs), float(mem_kv)
