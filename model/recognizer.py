"""The recognizer seam: what every recognizer gives the trainer, evaluation, prediction and export.

A recognizer is one module with its own config dataclass and a class deriving `Recognizer`; one line
in `model/registry.py` makes `model.kind=NAME` pick it. The rest of the project talks to it only
through this interface:

- `targets(latex)`: one label -> the training target arrays (LatexError when it cannot be encoded),
- `loss(images, batch, generator)`: the training loss (a dict with "loss" and "ce"); `forward` is
  the same call, so DDP and torch.compile wrap it,
- `draws(batch, generator)`: the step's random numbers as tensors, drawn before the step so the
  loss compiles into one graph (the masks of GryphOne's forward process; none for the others),
- `step_inputs(step)`: per-step extras the loss reads from the batch (a ramp, say),
- `train_parts`: submodules a training step calls many times with one shape, compiled on their own
  where a loss with a Python loop over label columns would not make one graph worth having (HVT),
- `recognize(images, spec)`: images -> LaTeX strings (every one parses unless `spec.valid` is off),
  and with `confidences=[]` one confidence per image (model/confidence.py; None where a recognizer
  gives none),
- `token_steps(images)`: a token recognizer's decoding hook (one decoder step at a time, model.search),
  which its greedy and beam searches run on and an ensemble averages (model/ensemble.py),
- `samplers` / `default_sampler`: the decoding options it supports,
- `flops_per_image(train)`: matmul FLOPs for MFU,
- `warm_start(log)`: start weights from files named in its config (encoder_init, ...).

Images are float [B, 1, H, W] with ink = 1 on 0, H x W the RenderSpec's canvas.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import torch
import torch.nn as nn

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec
from tokenizer.vocab import TokenVocab

from .decoding import DecodeSpec, check_decode_spec, finish_tokens
from .search import TokenSteps


@dataclass
class RecognizerConfig:
    """What every recognizer's config has; each recognizer's own dataclass derives from it."""

    kind: str = ""
    max_len: int = 150        # label window: SAT positions or tokens including BOS/EOS
    dropout: float = 0.1      # the decoder's
    attn_dropout: bool = True  # dropout also on attention weights; off, the CPU's fused attention kernel trains


class Recognizer(nn.Module):
    kind: ClassVar[str]
    config_class: ClassVar[type]
    label_kind: ClassVar[str] = "token"            # which LabelSpec vocabulary it reads: "sat" | "token"
    samplers: ClassVar[tuple[str, ...]] = ("greedy", "beam")
    default_sampler: ClassVar[str] = "greedy"
    default_beam: int = 1                          # the beam width when the default sampler is "beam"
    training_only: ClassVar[tuple[str, ...]] = ()  # submodules that never run at inference (auxiliary losses)
    title: ClassVar[str] = ""                      # the name people know it by (logs)
    description: ClassVar[str] = ""                # one line: what it is (model cards)
    step_samplers: ClassVar[tuple[str, ...]] = ()  # samplers that refine a whole answer over T steps (none:
    #                                                token by token); the page and the run's picture show them
    log_parts: ClassVar[tuple[str, ...]] = ()      # loss parts the training log prints beside loss and ce

    def __init__(self, cfg: RecognizerConfig, render: RenderSpec, labels: LabelSpec):
        super().__init__()
        if labels.kind != self.label_kind:
            raise ValueError(f"{self.kind} reads {self.label_kind!r} labels, got a {labels.kind!r} label spec")
        self.cfg, self.render, self.labels = cfg, render, labels

    # --- training -------------------------------------------------------------------------------
    def targets(self, latex: str) -> dict[str, np.ndarray]:
        """Token recognizers: BOS tokens EOS PAD... over max_len (LatexError when it cannot be)."""
        return {"tokens": self.labels.vocab.encode(latex, self.cfg.max_len)}

    def target_names(self) -> tuple[str, ...]:
        return tuple(self.targets("x"))

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator | None = None
             ) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def forward(self, images: torch.Tensor, batch: dict, generator: torch.Generator | None = None
                ) -> dict[str, torch.Tensor]:
        return self.loss(images, batch, generator)

    trims_padding = False
    """True where the loss reads each label position from earlier positions only and ignores PAD
    targets (the token recognizers): the label columns past a batch's longest label can then be cut
    (`trim_padding`) and the loss stays the same (PosFormer's training-mode BatchNorm aside: see there).
    GryphOne's decoder reads every position and learns where the formula ends, so its window stays whole."""

    def trim_padding(self, batch: dict, buckets: int = 0) -> dict:
        """`batch` with its per-position columns ([B, max_len] tensors) cut after the longest label's EOS,
        where `trims_padding`; the batch itself otherwise. Why: a batch of printed formulas averages 26
        tokens and its longest about 80, so a fixed 160-token window spends most of a token decoder's
        training step on PAD. With `buckets` > 0 the cut is rounded up to one of `buckets` widths
        (max_len * k / buckets): what a compiled loss uses, one graph per width instead of per batch."""
        tokens = batch.get("tokens")
        if not self.trims_padding or not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
            return batch
        full, width = tokens.shape[1], max(2, int((tokens != TokenVocab.PAD).sum(1).max()))
        if buckets > 0:
            width = bucket_width(width, full, buckets)
        if width >= full:
            return batch
        return {k: v[:, :width] if isinstance(v, torch.Tensor) and v.dim() == 2 and v.shape[1] == full else v
                for k, v in batch.items()}

    train_parts: tuple[str, ...] = ()
    """Submodules an eager training step calls many times with one shape (HVT's coverage attention,
    once per LSTM step): compiled on their own where the whole loss is not (`compile_parts`,
    train/compiled.py), which fuses their element-wise work; dotted names, as `get_submodule` reads."""
    static_parts: tuple[str, ...] = ("encoder",)
    """Submodules called with the same shapes at every decoding step once `static_decoding` is on
    (train/compiled.py compiles them)."""
    static_decoding = False
    """Decode on fixed shapes (preallocated caches) where a recognizer has two ways: what a compiled or
    CUDA-graph decoder needs; eager on a CPU the growing cache is the faster."""

    def draws(self, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """The random numbers one training step's loss uses, as tensors (none by default). The trainer
        draws them before the step and passes them in `batch`, so the loss is a function of tensors
        alone and compiles into one graph; `loss(..., generator)` draws them itself when they are absent."""
        return {}

    def step_inputs(self, step: int) -> dict[str, torch.Tensor]:
        return {}

    def onnx_graphs(self):
        """The export hook: an `onnx_graphs.OnnxGraphs` (the graphs, how to trace them, how the NumPy
        loops decode them). ValueError for a recognizer without one."""
        raise ValueError(f"model.kind {self.kind} has no ONNX export (Recognizer.onnx_graphs)")

    @classmethod
    def inert_keys(cls, cfg: RecognizerConfig) -> dict[str, str]:
        """Config keys that do nothing with `cfg`'s other settings -> why (setting one is an error,
        train.config.apply_overrides). None by default."""
        return {}

    @classmethod
    def stage_one(cls, cfg: RecognizerConfig) -> str | None:
        """Why the AR reader cannot pretrain this config's encoder first (train/pretrain.py), or None
        when it can: it trains a ViT encoder, so a config with one (and no other encoder chosen)."""
        from .encoder import ViTConfig

        if not isinstance(cfg, ViTConfig) or getattr(cfg, "encoder", "vit") != "vit":
            return f"model.kind={cfg.kind} has no ViT encoder for the AR reader to train"
        return None

    def warm_start(self, log: Callable[[str], None] = print) -> None:
        """Load starting weights named by the config (nothing by default)."""

    def flops_per_image(self, train: bool = True) -> float:
        raise NotImplementedError

    # --- decoding -------------------------------------------------------------------------------
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None) -> torch.Tensor:
        """Token recognizers: ids [B, <=max_len] (BOS ... EOS PAD)."""
        raise NotImplementedError

    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec,
                      history: list | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """decode_ids, and each decoded token's probability [B, width - 1] where the recognizer gives
        one (None where it does not: its confidences are None)."""
        return self.decode_ids(images, spec, history), None

    def token_steps(self, images: torch.Tensor) -> TokenSteps:
        """The token recognizers' step hook (model.search.TokenSteps): images encoded once, then one
        decoder step at a time, over every image or over `width` rows of one. What their greedy and
        beam searches run on, and what an ensemble (model/ensemble.py) averages. ValueError for a
        recognizer that decodes otherwise (GryphOne refines whole answers)."""
        raise ValueError(f"model.kind {self.kind} has no token step hook (Recognizer.token_steps)")

    @torch.no_grad()
    def recognize(self, images: torch.Tensor, spec: DecodeSpec | None = None, history: list | None = None,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
        """images [B, 1, H, W] -> LaTeX; with spec.valid every string parses. `stats` accumulates
        "outputs", "raw_invalid", "repaired" and "last_resort" counts; `history` collects per-step
        states where the decoder has steps (GryphOne's refinement); `confidences`, when a list, gets
        one confidence per image appended (model/confidence.py)."""
        spec = spec or DecodeSpec(self.default_sampler)
        self.check_spec(spec)
        images = images.to(next(self.parameters()).device)
        if confidences is None:
            ids, probs = self.decode_ids(images, spec, history), None
        else:
            ids, probs = self.decode_scored(images, spec, history)
        return finish_tokens(self.labels.vocab, ids.tolist(), None if probs is None else probs.tolist(),
                             spec, stats, confidences)

    def check_spec(self, spec: DecodeSpec) -> None:
        check_decode_spec(self.kind, self.samplers, spec)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def inference_params(model: Recognizer) -> int:
    """Parameters that decoding uses: all but the recognizer's training-only submodules."""
    unused = sum(count_params(m) for m in (getattr(model, name, None) for name in model.training_only) if m is not None)
    return count_params(model) - unused


def bucket_width(width: int, full: int, buckets: int) -> int:
    """The smallest of `buckets` evenly spaced window widths (full * k / buckets, rounded up) that holds
    `width` columns; `full` itself at the top."""
    for k in range(1, buckets + 1):
        w = -(-full * k // buckets)
        if w >= width:
            return w
    return full
