"""HVT: a hybrid vision transformer encoder and an LSTM decoder with coverage attention (Le et al.,
"A Hybrid Vision Transformer Approach for Mathematical Expression Recognition").

The encoder is a ResNet (model/hvt/resnet.py) whose feature map is read as 1x1 patches, projected to
enc_dim, given fixed 2D sin-cos positions (half the width for the row, half for the column), prefixed
with a learned [CLS] token and passed through pre-norm ViT blocks: convolutions see strokes, the
transformer relates symbols across the whole expression. The decoder (model/hvt/decoder.py)
starts from an MLP of the [CLS] output and attends over the patch outputs with coverage.
Ablations: `pos_2d` (1D positions over the flattened grid), `cls_init` (start from the mean patch
output instead), `coverage` (plain additive attention), and the backbone's size.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec

from ..errors import RecognizerConfigError
from ..layers import EncoderBlock, sincos_1d, sincos_2d
from ..recognizer import DecodeSpec, Recognizer, RecognizerConfig
from ..search import TokenSteps, search_ids
from .decoder import CoverageLSTMDecoder, Memory, State, image_rows, lstm_step, teacher_forced_loss
from .resnet import ResNet, Stride

HVT_PAPER = dict(res_channels=(64, 128, 256, 512), res_blocks=(3, 4, 6, 2),
                 res_strides=(1, 1, 2, 2, 2, 1, 2, 1), enc_dim=256, enc_depth=6, enc_heads=8,
                 dec_dim=512, emb_dim=256, attn_dim=512, cov_kernel=11, cov_channels=256)
"""A paper-sized setting (`model.*` overrides): a 32-layer ResNet (2 stem convolutions + 15 basic
blocks) in 4 stages; the split, the widths and the decoder sizes are not in the paper and chosen here
(docs/model.md)."""


@dataclass
class HVTConfig(RecognizerConfig):
    kind: str = "hvt"
    res_channels: tuple[int, ...] = (16, 32, 64, 128)      # per ResNet stage
    res_blocks: tuple[int, ...] = (1, 1, 1, 1)             # basic blocks per stage (2 convolutions each)
    res_strides: tuple[int, ...] = (1, 1, 2, 2, 2, 2, 2, 1)  # (row, col) per stage, flat: 1x1,2x2,2x2,2x1
    res_stem_stride: Stride = (2, 2)
    enc_dim: int = 128
    enc_depth: int = 2
    enc_heads: int = 4
    pos_2d: bool = True                 # 2D sin-cos (row | column halves); false: 1D over the flattened grid
    cls_init: bool = True               # LSTM (h0, c0) from the [CLS] output; false: from the mean patch output
    coverage: bool = True               # coverage term in the attention score
    dec_dim: int = 256                  # LSTM hidden width
    emb_dim: int = 128                  # token embedding width (and the output layer's)
    attn_dim: int = 128
    cov_kernel: int = 5                 # coverage convolution, cov_kernel x cov_kernel over the grid
    cov_channels: int = 32
    cov_penalty: float = 0.0            # weight of the re-attention penalty (hvt/decoder.py, coverage_penalty)

    def __post_init__(self) -> None:
        """Stored configs come back as lists (JSON, checkpoints): keep tuples so configs compare equal.
        Strides are kept flat (the command line's `model.res_strides=1x1,2x2,...` reads that way);
        (row, col) pairs are flattened."""
        try:
            self.res_channels, self.res_blocks = tuple(self.res_channels), tuple(self.res_blocks)
            pairs = (s if isinstance(s, (list, tuple)) else (s,) for s in self.res_strides)
            self.res_strides = tuple(v for pair in pairs for v in pair)
            self.res_stem_stride = tuple(self.res_stem_stride)
        except TypeError:
            pass  # HVT's validation names the bad value

    def stage_strides(self) -> tuple[Stride, ...]:
        """res_strides as one (row, col) pair per stage."""
        return tuple(zip(self.res_strides[::2], self.res_strides[1::2]))

    @property
    def dec_heads(self) -> int:
        """The LSTM decoder has no heads; the registry's width check pairs dec_dim with dec_heads."""
        return 1


def _positive_ints(values, n: int | None = None) -> bool:
    return (isinstance(values, tuple) and (n is None or len(values) == n)
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values))


def validate_hvt(cfg: HVTConfig) -> None:
    """RecognizerConfigError naming the first impossible HVT setting."""
    stages = len(cfg.res_channels) if isinstance(cfg.res_channels, tuple) else 0
    checks = [
        (stages >= 1 and _positive_ints(cfg.res_channels), "res_channels must be positive integers, one per stage"),
        (_positive_ints(cfg.res_blocks, stages), "res_blocks must be positive integers, one per res_channels stage"),
        (_positive_ints(cfg.res_strides, 2 * stages), "res_strides must be one (row, col) pair per stage"),
        (_positive_ints(cfg.res_stem_stride, 2), "res_stem_stride must be a (row, col) pair"),
        (_positive_ints((cfg.emb_dim, cfg.attn_dim, cfg.cov_kernel, cfg.cov_channels)),
         "emb_dim, attn_dim, cov_kernel and cov_channels must be positive integers"),
        (cfg.cov_kernel % 2 == 1 if isinstance(cfg.cov_kernel, int) else False, "cov_kernel must be odd"),
        (cfg.enc_dim % (4 if cfg.pos_2d else 2) == 0, "enc_dim must be a multiple of 4 (2D positions) or 2 (1D)"),
        (cfg.max_len >= 2, "max_len must leave room for BOS and EOS"),
        (isinstance(cfg.cov_penalty, (int, float)) and cfg.cov_penalty >= 0, "cov_penalty must be >= 0"),
    ]
    for ok, message in checks:
        if not ok:
            raise RecognizerConfigError(f"model: {message} (hvt)")


def position_encoding(grid: tuple[int, int], dim: int, two_d: bool) -> torch.Tensor:
    """Fixed positions [h * w, dim] of a row-major grid: 2D = concat(1D(row), 1D(column)), each dim / 2
    wide; 1D = one sin-cos table over the flattened order."""
    return sincos_2d(grid[0], grid[1], dim) if two_d else sincos_1d(grid[0] * grid[1], dim)


class HVTEncoder(nn.Module):
    """images [B, 1, H, W] -> [B, 1 + h * w, enc_dim]: the [CLS] output first, then the grid row-major."""

    def __init__(self, cfg: HVTConfig, canvas: tuple[int, int]):
        super().__init__()
        self.backbone = ResNet(cfg.res_channels, cfg.res_blocks, cfg.stage_strides(), cfg.res_stem_stride)
        self.grid = self.backbone.grid(canvas)
        self.proj = nn.Linear(self.backbone.out_channels, cfg.enc_dim)   # 1x1 patches of the feature map
        self.cls = nn.Parameter(torch.randn(1, 1, cfg.enc_dim) * 0.02)
        self.register_buffer("pos_embed", position_encoding(self.grid, cfg.enc_dim, cfg.pos_2d)[None],
                             persistent=False)
        self.blocks = nn.ModuleList(EncoderBlock(cfg.enc_dim, cfg.enc_heads) for _ in range(cfg.enc_depth))
        self.norm = nn.LayerNorm(cfg.enc_dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        feats = self.backbone(images)
        if tuple(feats.shape[-2:]) != self.grid:
            raise ValueError(f"images {tuple(images.shape[-2:])} give a {tuple(feats.shape[-2:])} feature grid; "
                             f"this encoder was built for {self.grid}")
        x = self.proj(feats.flatten(2).transpose(1, 2)) + self.pos_embed.to(feats.dtype)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1).to(x.dtype), x], 1)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class HVT(Recognizer):
    kind = "hvt"
    config_class = HVTConfig
    label_kind = "token"
    trims_padding = True
    train_parts = ("decoder.attn",)  # its [B, N, attn_dim] energy (adds, tanh) dominates an eager step
    samplers = ("greedy", "beam")
    default_sampler = "greedy"
    title = "HVT"
    description = "HVT (ResNet + ViT encoder, coverage-attention LSTM decoder)"

    def __init__(self, cfg: HVTConfig, render: RenderSpec, labels: LabelSpec):
        super().__init__(cfg, render, labels)
        validate_hvt(cfg)
        self.encoder = HVTEncoder(cfg, render.size)
        self.decoder = CoverageLSTMDecoder(len(labels.vocab.tokens), cfg.emb_dim, cfg.dec_dim, cfg.enc_dim,
                                           cfg.attn_dim, self.encoder.grid, cfg.cov_kernel, cfg.cov_channels,
                                           cfg.coverage, cfg.dropout)

    def start(self, images: torch.Tensor) -> tuple[Memory, State]:
        """Encode and set up decoding: attention over the patch outputs, (h0, c0) from the [CLS] output
        (or the mean patch output with cls_init off)."""
        x = self.encoder(images)
        patches = x[:, 1:]
        return self.decoder.start(patches, x[:, 0] if self.cfg.cls_init else patches.mean(1))

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        memory, state = self.start(images)
        return teacher_forced_loss(self.decoder, memory, state, batch["tokens"], self.cfg.cov_penalty)

    @torch.no_grad()
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None) -> torch.Tensor:
        return self._decode(*self.start(images), spec)

    @torch.no_grad()
    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec,
                      history: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoded ids and each decoded token's probability, from one teacher-forced pass over them."""
        memory, state = self.start(images)
        ids = self._decode(memory, state, spec)
        logits, _ = self.decoder.teacher_forced(ids, state, memory)
        return ids, logits.float().softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]

    def token_steps(self, images: torch.Tensor) -> TokenSteps:
        return self._steps(*self.start(images))

    def _steps(self, memory: Memory, state: State) -> TokenSteps:
        dec = self.decoder
        return TokenSteps(memory.values.shape[0], lambda: lstm_step(dec, memory, state),
                          lambda i, width: lstm_step(dec, *image_rows(memory, state, i, width)), self.cfg.max_len,
                          memory.values.device)

    def _decode(self, memory: Memory, state: State, spec: DecodeSpec) -> torch.Tensor:
        return search_ids(self._steps(memory, state), spec.beam if spec.sampler == "beam" else 1)

    def onnx_graphs(self):
        from ..onnx_graphs import OnnxGraphs, lstm_step_examples
        from .onnx import HVTMemoryGraph, HVTStepGraph

        return OnnxGraphs("hvt-step", HVTMemoryGraph(self).eval(), HVTStepGraph(self).eval(), lstm_step_examples,
                          ("greedy", "beam"))

    def flops_per_image(self, train: bool = True) -> float:
        """Convolutions, patch projection, ViT blocks (with [CLS]) and max_len - 1 decoder steps."""
        cfg = self.cfg
        conv, (h, w) = self.encoder.backbone.flops(self.render.size)
        n, d = h * w, cfg.enc_dim
        enc = conv + 2 * n * self.encoder.backbone.out_channels * d
        enc += cfg.enc_depth * (2 * (n + 1) * 12 * d * d + 2 * 2 * (n + 1) ** 2 * d)
        dec = self.decoder.flops(cfg.max_len - 1, n, d, len(self.labels.vocab.tokens))
        return float(enc + dec) * (3 if train else 1)
