"""ViT image encoder for any HxW raster (the paper: DINO ViT-S/8 on 224x224).

Input is one grayscale channel with ink = 1 and background = 0 (so zero padding is background).
Positions are fixed 2D sin-cos, so any grid works without interpolation. An optional small
convolutional stem replaces the single patchify convolution; it helps a ViT trained from scratch on
small data, which is every CPU run.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn

from .layers import EncoderBlock, sincos_2d


class ConvStem(nn.Module):
    """3x3 stride-2 convolutions down to the patch stride, then a 1x1 projection (Xiao et al., 2021)."""

    def __init__(self, patch: int, dim: int):
        super().__init__()
        if patch & (patch - 1) or patch < 2:
            raise ValueError(f"conv stem needs a power-of-two patch size, got {patch}")
        layers: list[nn.Module] = []
        ch_in, ch = 1, max(dim // 8, 16)
        stride = 1
        while stride < patch:
            layers += [nn.Conv2d(ch_in, ch, 3, 2, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
            ch_in, ch, stride = ch, min(ch * 2, dim), stride * 2
        layers.append(nn.Conv2d(ch_in, dim, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ViTEncoder(nn.Module):
    def __init__(self, image_size: tuple[int, int], patch: int, dim: int, depth: int, heads: int,
                 conv_stem: bool = False, dropout: float = 0.0):
        super().__init__()
        h, w = image_size
        if h % patch or w % patch:
            raise ValueError(f"image size {h}x{w} is not a multiple of the patch size {patch}")
        self.grid = (h // patch, w // patch)
        self.patch_embed = ConvStem(patch, dim) if conv_stem else nn.Conv2d(1, dim, patch, patch)
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


def load_vit_checkpoint(encoder: ViTEncoder, path: str | Path) -> list[str]:
    """Load DINO/timm ViT weights from a local file into `encoder`; returns the keys left unused.

    timm/DINO names (`blocks.N.attn.qkv`, `patch_embed.proj`, ...) are mapped onto ours; the RGB patch
    kernel is summed over its channels for grayscale input; `pos_embed` and `cls_token` are dropped
    (positions here are fixed sin-cos). Raises ValueError naming the file on an unreadable checkpoint.
    """
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt files
        raise ValueError(f"{path}: cannot read ViT checkpoint: {exc}") from None
    for key in ("model", "state_dict", "teacher", "student"):
        if isinstance(state, dict) and key in state and isinstance(state[key], dict):
            state = state[key]
    state = {k.removeprefix("module.").removeprefix("backbone."): v for k, v in state.items()}
    ours: dict[str, torch.Tensor] = {}
    unused: list[str] = []
    for key, value in state.items():
        if key == "patch_embed.proj.weight":
            if isinstance(encoder.patch_embed, ConvStem):
                unused.append(key)
                continue
            ours["patch_embed.weight"] = value.sum(dim=1, keepdim=True)
        elif key == "patch_embed.proj.bias":
            ours["patch_embed.bias"] = value
        elif ".attn.qkv." in key:
            dim = value.shape[0] // 3
            prefix, kind = key.split(".attn.qkv.")
            ours[f"{prefix}.attn.q.{kind}"] = value[:dim]
            ours[f"{prefix}.attn.kv.{kind}"] = value[dim:]
        elif key.startswith(("blocks.", "norm.")):
            ours[key] = value
        else:
            unused.append(key)
    params = dict(encoder.named_parameters())
    shape_errors = [k for k, v in ours.items() if k in params and params[k].shape != v.shape]
    if shape_errors:
        raise ValueError(f"{path}: shapes do not match this encoder for {shape_errors[:3]}")
    _, unexpected = encoder.load_state_dict(ours, strict=False)
    return unused + list(unexpected)
