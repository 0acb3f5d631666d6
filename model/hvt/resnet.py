"""A ResNet backbone for expression images: a two-convolution stem and stages of basic blocks, each
stage with its own (row, column) stride, so a wide canvas can keep more columns than rows.

HVT (model/hvt/recognizer.py) reads its feature map as 1x1 patches. Stride, channels and depth are per stage,
so one class covers the CPU-sized default and the 32-layer paper-like setting (docs/model.md).
"""
from __future__ import annotations

import torch
import torch.nn as nn

Stride = tuple[int, int]


def conv_bn(c_in: int, c_out: int, kernel: int, stride: Stride) -> nn.Sequential:
    """Convolution (no bias: BatchNorm follows) and BatchNorm; 'same' padding for odd kernels."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(c_out))


def out_size(n: int, stride: int) -> int:
    """Length of an axis after a stride-`stride` convolution with 'same' padding (odd kernel)."""
    return (n - 1) // stride + 1


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut (a 1x1 projection where stride or width changes)."""

    def __init__(self, c_in: int, c_out: int, stride: Stride):
        super().__init__()
        self.conv1 = conv_bn(c_in, c_out, 3, stride)
        self.conv2 = conv_bn(c_out, c_out, 3, (1, 1))
        self.shortcut = conv_bn(c_in, c_out, 1, stride) if c_in != c_out or stride != (1, 1) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(skip + self.conv2(torch.relu(self.conv1(x))))


class ResNet(nn.Module):
    """images [B, 1, H, W] -> features [B, channels[-1], h, w]."""

    def __init__(self, channels: tuple[int, ...], blocks: tuple[int, ...], strides: tuple[Stride, ...],
                 stem_stride: Stride = (2, 2)):
        super().__init__()
        if not (len(channels) == len(blocks) == len(strides)) or not channels:
            raise ValueError(f"one channel count, block count and stride per stage; got {len(channels)}, "
                             f"{len(blocks)}, {len(strides)}")
        self.stem = nn.Sequential(conv_bn(1, channels[0], 3, stem_stride), nn.ReLU(inplace=True),
                                  conv_bn(channels[0], channels[0], 3, (1, 1)), nn.ReLU(inplace=True))
        self.stem_stride = tuple(stem_stride)
        stages, c_in = [], channels[0]
        for c_out, n, stride in zip(channels, blocks, strides):
            stages.append(nn.Sequential(*(BasicBlock(c_in if i == 0 else c_out, c_out, stride if i == 0 else (1, 1))
                                          for i in range(n))))
            c_in = c_out
        self.stages = nn.Sequential(*stages)
        self.out_channels = channels[-1]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.stages(self.stem(images))

    def grid(self, size: tuple[int, int]) -> tuple[int, int]:
        """The feature map's (h, w) for an H x W canvas."""
        return self.flops(size)[1]

    def flops(self, size: tuple[int, int]) -> tuple[float, tuple[int, int]]:
        """(forward convolution FLOPs for one H x W image, 2 per multiply-add; the output grid)."""
        h, w = size
        total, last = 0.0, (h, w)
        for conv in (m for m in self.modules() if isinstance(m, nn.Conv2d)):
            if conv.kernel_size == (1, 1):  # a shortcut: same output grid as its block's first conv
                total += 2.0 * conv.in_channels * conv.out_channels * last[0] * last[1]
                continue
            h, w = out_size(h, conv.stride[0]), out_size(w, conv.stride[1])
            last = (h, w)
            total += 2.0 * conv.in_channels * conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1] * h * w
        return total, (h, w)

    def depth(self) -> int:
        """Weighted layers on the main path (stem convolutions and two per block), as ResNet-N counts."""
        return 2 + 2 * sum(len(stage) for stage in self.stages)
