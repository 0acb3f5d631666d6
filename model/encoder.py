"""ViT image encoder for any HxW raster (the paper: DINO ViT-S/8 on 224x224).

Input is one grayscale channel with ink = 1 and background = 0 (so zero padding is background).
Positions are fixed 2D sin-cos, so any grid works without interpolation. An optional small
convolutional stem replaces the single patchify convolution; it helps a ViT trained from scratch on
small data, which is every CPU run.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from .layers import EncoderBlock, sincos_2d


class ResidualConv(nn.Module):
    """x + BN(conv3x3(x)), then ReLU: one stride-1 unit that lets a stem stage look at its neighbourhood
    again before the next downsampling, at the cost of one 3x3 convolution."""

    def __init__(self, ch: int):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(ch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.bn(self.conv(x)))


class ConvStem(nn.Module):
    """3x3 stride-2 convolutions down to the patch stride, then a 1x1 projection (Xiao et al., 2021).

    A patch `patch` high and `patch_w` wide (0: square) halves each axis until it reaches its own
    stride, so a 16x8 patch's last convolution halves the rows alone. `blocks` > 0 adds that many
    residual 3x3 units after every downsampling but the first (the full-resolution stage is where a
    unit costs most and sees least): a deeper local feature extractor, the inductive bias CNN
    encoders bring to HMER on small data."""

    def __init__(self, patch: int, dim: int, blocks: int = 0, patch_w: int = 0):
        super().__init__()
        ph, pw = patch, patch_w or patch
        if any(p & (p - 1) or p < 1 for p in (ph, pw)) or max(ph, pw) < 2:
            raise ValueError(f"conv stem needs power-of-two patch sides, got {ph}x{pw}")
        if blocks < 0:
            raise ValueError(f"stem blocks must be >= 0, got {blocks}")
        layers: list[nn.Module] = []
        ch_in, ch = 1, max(dim // 8, 16)
        sh = sw = 1
        while sh < ph or sw < pw:
            step = (2 if sh < ph else 1, 2 if sw < pw else 1)
            layers += [nn.Conv2d(ch_in, ch, 3, step, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
            if sh * sw > 1:
                layers += [ResidualConv(ch) for _ in range(blocks)]
            ch_in, ch, sh, sw = ch, min(ch * 2, dim), sh * step[0], sw * step[1]
        layers.append(nn.Conv2d(ch_in, dim, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ViTEncoder(nn.Module):
    def __init__(self, image_size: tuple[int, int], patch: int, dim: int, depth: int, heads: int,
                 conv_stem: bool = False, dropout: float = 0.0, stem_blocks: int = 0, patch_w: int = 0):
        super().__init__()
        h, w = image_size
        ph, pw = patch, patch_w or patch
        if h % ph or w % pw:
            raise ValueError(f"image size {h}x{w} is not a multiple of the patch size {ph}x{pw}")
        self.grid = (h // ph, w // pw)
        if stem_blocks and not conv_stem:
            raise ValueError("stem_blocks needs conv_stem=true")
        self.patch_embed = (ConvStem(patch, dim, stem_blocks, patch_w) if conv_stem
                            else nn.Conv2d(1, dim, (ph, pw), (ph, pw)))
        self.register_buffer("pos_embed", sincos_2d(*self.grid, dim)[None], persistent=False)
        self.blocks = nn.ModuleList(EncoderBlock(dim, heads, dropout=dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images [B, 1, H, W] -> memory [B, grid_h * grid_w, dim]."""
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = x + self.pos_embed.to(x.dtype)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)



@dataclass
class ViTConfig:
    """The ViT encoder's settings, shared by every recognizer built on it (a base of their configs)."""

    patch: int = 8                # patch height in pixels (and width, unless patch_w says otherwise)
    patch_w: int = 0              # patch width in pixels; 0: square patches. Wide printed lines read
                                  # better with more columns than rows (16x8 on a 64x512 canvas: 4x64)
    enc_dim: int = 384
    enc_depth: int = 12
    enc_heads: int = 6
    conv_stem: bool = False
    stem_blocks: int = 0          # residual 3x3 units per conv-stem stage after the first (conv_stem only)
    encoder_init: str = ""        # start the encoder from this file (gryphone checkpoint, DINO/timm/HF weights)


def build_vit(cfg: ViTConfig, canvas: tuple[int, int]) -> ViTEncoder:
    return ViTEncoder(canvas, cfg.patch, cfg.enc_dim, cfg.enc_depth, cfg.enc_heads, cfg.conv_stem,
                      stem_blocks=cfg.stem_blocks, patch_w=cfg.patch_w)


def vit_flops(cfg: ViTConfig, canvas: tuple[int, int]) -> tuple[float, int]:
    """(forward matmul FLOPs of the encoder per image, number of memory positions)."""
    pw = cfg.patch_w or cfg.patch
    n = (canvas[0] // cfg.patch) * (canvas[1] // pw)
    d = cfg.enc_dim
    flops = cfg.enc_depth * (2 * n * 12 * d * d + 2 * 2 * n * n * d) + 2 * n * d * cfg.patch * pw
    return float(flops), n
