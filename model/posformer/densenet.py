"""DenseNet-B image encoder as in CoMER and PosFormer (growth 24, 16 bottleneck layers per dense block,
3 blocks, compression 0.5): the CNN encoder most HMER papers report with, so PosFormer can be run as
published as well as on the project's ViT.

The feature map (stride 16) gets a 1x1 projection to the decoder width, a LayerNorm and fixed 2D
sin-cos positions over normalized coordinates (CoMER's image positional encoding: each axis' position
divided by its extent and scaled to 2*pi, half the width per axis), and is flattened into the memory
[B, N, d]. The canvases here have no padding mask (zero is background), so the normalization is over
the whole grid.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    """BN-ReLU-conv1x1 (4 * growth) - BN-ReLU-conv3x3 (growth), concatenated to the input."""

    def __init__(self, ch: int, growth: int, dropout: float):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(ch), nn.Conv2d(ch, 4 * growth, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(4 * growth), nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x), inplace=True))
        out = self.drop(self.conv2(F.relu(self.bn2(out), inplace=True)))
        return torch.cat([x, out], 1)


class Transition(nn.Module):
    """BN-ReLU-conv1x1 to `out` channels (the compression), then 2x2 average pooling."""

    def __init__(self, ch: int, out: int, dropout: float):
        super().__init__()
        self.bn, self.conv, self.drop = nn.BatchNorm2d(ch), nn.Conv2d(ch, out, 1, bias=False), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.conv(F.relu(self.bn(x), inplace=True)))
        return F.avg_pool2d(x, 2, ceil_mode=True)


class DenseNet(nn.Module):
    """7x7 stride-2 stem + 2x2 max pool, then dense blocks with transitions between them: stride 16."""

    def __init__(self, growth: int = 24, layers: int = 16, blocks: int = 3, compression: float = 0.5,
                 dropout: float = 0.2):
        super().__init__()
        ch = 2 * growth
        self.stem = nn.Conv2d(1, ch, 7, stride=2, padding=3, bias=False)
        self.stem_bn = nn.BatchNorm2d(ch)
        stages: list[nn.Module] = []
        for b in range(blocks):
            for _ in range(layers):
                stages.append(Bottleneck(ch, growth, dropout))
                ch += growth
            if b < blocks - 1:
                out = int(math.floor(ch * compression))
                stages.append(Transition(ch, out, dropout))
                ch = out
        self.stages = nn.Sequential(*stages)
        self.post_bn = nn.BatchNorm2d(ch)
        self.out_channels = ch

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_bn(self.stem(images)), inplace=True)
        x = F.max_pool2d(x, 2, ceil_mode=True)
        return F.relu(self.post_bn(self.stages(x)), inplace=True)


def image_pos_2d(grid_h: int, grid_w: int, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """[grid_h * grid_w, dim]: (y, x) each in (0, 2*pi] (position / extent), sin and cos of
    dim/4 frequencies per axis, y first."""
    if dim % 4:
        raise ValueError(f"2D image positions need a width divisible by 4, got {dim}")
    q = dim // 4
    freqs = temperature ** (torch.arange(q, dtype=torch.float64) / q)
    ys = torch.arange(1, grid_h + 1, dtype=torch.float64) / grid_h * 2 * math.pi
    xs = torch.arange(1, grid_w + 1, dtype=torch.float64) / grid_w * 2 * math.pi
    ay, ax = ys[:, None] / freqs, xs[:, None] / freqs
    ey = torch.cat([ay.sin(), ay.cos()], 1)[:, None, :].expand(grid_h, grid_w, 2 * q)
    ex = torch.cat([ax.sin(), ax.cos()], 1)[None, :, :].expand(grid_h, grid_w, 2 * q)
    return torch.cat([ey, ex], -1).reshape(grid_h * grid_w, dim).float()


def densenet_grid(canvas: tuple[int, int]) -> tuple[int, int]:
    """The feature grid of an H x W canvas: four ceil-halvings (stem, max pool, two transitions)."""
    h, w = canvas
    for _ in range(4):
        h, w = -(-h // 2), -(-w // 2)
    return h, w


class DenseNetEncoder(nn.Module):
    """images [B, 1, H, W] -> memory [B, N, dim] (projection, LayerNorm, 2D positions)."""

    def __init__(self, canvas: tuple[int, int], dim: int, growth: int = 24, layers: int = 16,
                 dropout: float = 0.2):
        super().__init__()
        self.cnn = DenseNet(growth, layers, dropout=dropout)
        self.proj = nn.Conv2d(self.cnn.out_channels, dim, 1)
        self.norm = nn.LayerNorm(dim)
        self.grid = densenet_grid(canvas)
        self.register_buffer("pos", image_pos_2d(*self.grid, dim)[None], persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.proj(self.cnn(images)).flatten(2).transpose(1, 2)
        return self.norm(x) + self.pos.to(x.dtype)


def densenet_flops(canvas: tuple[int, int], dim: int, growth: int = 24, layers: int = 16, blocks: int = 3) -> float:
    """Forward conv/matmul FLOPs of DenseNetEncoder per image, 2 per multiply-add."""
    h, w = -(-canvas[0] // 2), -(-canvas[1] // 2)
    flops = 2.0 * h * w * 49 * 2 * growth
    h, w = -(-h // 2), -(-w // 2)
    ch = 2 * growth
    for b in range(blocks):
        for _ in range(layers):
            flops += 2.0 * h * w * (ch * 4 * growth + 9 * 4 * growth * growth)
            ch += growth
        if b < blocks - 1:
            out = ch // 2
            flops += 2.0 * h * w * ch * out
            ch, h, w = out, -(-h // 2), -(-w // 2)
    return flops + 2.0 * h * w * ch * dim
