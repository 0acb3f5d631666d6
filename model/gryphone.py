"""GryphOne (ViT encoder + SAT masked-diffusion decoder) and the autoregressive baseline on the same encoder.

`ModelConfig` holds every architectural choice; `build_model` turns it into one of two modules with
one interface: `loss(images, batch, generator)` for training and `recognize(images, ...)` for decoding
to id arrays (the caller turns ids into LaTeX with the vocabulary saved in the checkpoint).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn

from .autoregressive import ARDecoder, ar_loss, beam_search, greedy
from .aux_reader import SATCausalReader, reader_loss
from .diffusion import LossConfig, SATDecoder, diffusion_loss, sample_mask_predict, sample_remask
from .encoder import ViTEncoder


@dataclass
class ModelConfig:
    kind: str = "diffusion"               # "diffusion" (GryphOne) | "ar" (baseline)
    image_size: tuple[int, int] = (224, 224)
    patch: int = 8
    enc_dim: int = 384
    enc_depth: int = 12
    enc_heads: int = 6
    conv_stem: bool = False
    stem_blocks: int = 0                  # residual 3x3 units per conv-stem stage after the first (conv_stem only)
    dec_dim: int = 384
    dec_depth: int = 5
    dec_heads: int = 8
    dropout: float = 0.3
    max_len: int = 150                    # SAT positions (diffusion) or tokens incl. BOS/EOS (ar)
    num_symbols: int = 0                  # filled from the vocabulary
    num_modifiers: int = 0
    num_tokens: int = 0                   # ar only
    forest_depths: int = 0                # >0 adds position-forest heads (levels 0..forest_depths-1)
    dec_pos_init: str = "random"          # decoder position table at init: "random" N(0, 0.02) | "sincos"
    dec_pos: str = "learned"              # diffusion decoder positions: "learned" | "fixed" (official: unit sin-cos)
    dec_shared_table: bool = False        # diffusion decoder: one embedding table for symbols and modifiers (official)
    dec_block: str = "prenorm"            # diffusion decoder blocks: "prenorm" | "official" (post-add, normed projections)
    encoder_init: str = ""                # start the encoder from this file (gryphone checkpoint, DINO/timm/HF weights)
    decoder_init: str = ""                # start the decoder (and reader) from this AR baseline checkpoint
    aux_reader_weight: float = 0.0        # >0: a causal SAT reader on the encoder, trained with this weight (diffusion only)
    diffusion_enc_grad: float = 1.0       # scale of the diffusion loss's gradient into the encoder
    loss: LossConfig = field(default_factory=LossConfig)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        d = dict(d)
        d["loss"] = LossConfig(**d.get("loss", {}))
        d["image_size"] = tuple(d.get("image_size", (224, 224)))
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        return cls(**d)


class _Recognizer(nn.Module):
    """What both recognizers share: the ViT encoder, and forward() = the training loss (so DDP and
    torch.compile see it). Subclasses add `decoder`, `loss` and `recognize`."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = ViTEncoder(cfg.image_size, cfg.patch, cfg.enc_dim, cfg.enc_depth, cfg.enc_heads,
                                  cfg.conv_stem, stem_blocks=cfg.stem_blocks)

    def forward(self, images: torch.Tensor, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        return self.loss(images, batch, generator)

    def memory_kv(self, images: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Encode once; every decoder layer's cross-attention keys/values of the memory."""
        return self.decoder.memory_kv(self.encoder(images))


class GryphOne(_Recognizer):
    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.decoder = SATDecoder(cfg.num_symbols, cfg.num_modifiers, cfg.max_len, cfg.dec_dim, cfg.dec_depth,
                                  cfg.dec_heads, cfg.enc_dim, cfg.dropout, cfg.forest_depths,
                                  pos_init=cfg.dec_pos_init, pos=cfg.dec_pos, shared_table=cfg.dec_shared_table,
                                  block=cfg.dec_block)

        # training only: a left-to-right reader that teaches the encoder glyphs (model/aux_reader.py)
        self.reader = SATCausalReader(cfg.num_symbols, cfg.num_modifiers, cfg.max_len, cfg.dec_dim, cfg.dec_depth,
                                      cfg.dec_heads, cfg.enc_dim, cfg.dropout) if cfg.aux_reader_weight > 0 else None

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        forest = (batch["level"], batch["relation"]) if "level" in batch else None
        kl_scale = float(batch["kl_scale"]) if "kl_scale" in batch else 1.0
        memory = self.encoder(images)
        s = self.cfg.diffusion_enc_grad
        diff_memory = memory if s == 1.0 else memory * s + memory.detach() * (1 - s)  # same value, scaled gradient
        parts = diffusion_loss(self.decoder, self.decoder.memory_kv(diff_memory), batch["symbols"],
                               batch["modifiers"], self.cfg.loss, generator, forest, kl_scale)
        if self.reader is not None:
            aux = reader_loss(self.reader, memory, batch["symbols"], batch["modifiers"])
            parts["loss"] = parts["loss"] + self.cfg.aux_reader_weight * aux
            parts["reader_ce"] = aux.detach()
        return parts

    @torch.no_grad()
    def recognize(self, images: torch.Tensor, *, T: int = 10, sampler: str = "remask",
                  generator: torch.Generator | None = None, early_exit: bool = False,
                  history: list | None = None, final: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode a batch to (symbol ids, modifier ids), each [B, max_len], PAD after the label.

        Samplers: "remask" (the paper's), "remask-keep" (the official implementation's: visible tokens
        are kept, only masked ones re-predicted), "mask-predict". `final` receives the last step's
        log-probabilities."""
        mem_kv = self.memory_kv(images)
        if sampler in ("remask", "remask-keep"):
            return sample_remask(self.decoder, mem_kv, T, generator, early_exit, history,
                                 keep_visible=sampler == "remask-keep", final=final)
        if sampler == "mask-predict":
            return sample_mask_predict(self.decoder, mem_kv, T, early_exit, history, final)
        raise ValueError(f"unknown sampler {sampler!r} (remask | remask-keep | mask-predict)")


class ARRecognizer(_Recognizer):
    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.decoder = ARDecoder(cfg.num_tokens, cfg.max_len, cfg.dec_dim, cfg.dec_depth, cfg.dec_heads,
                                 cfg.enc_dim, cfg.dropout, pos_init=cfg.dec_pos_init)

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        return ar_loss(self.decoder, self.memory_kv(images), batch["tokens"])

    @torch.no_grad()
    def recognize(self, images: torch.Tensor, *, beam: int = 1, **_: object) -> torch.Tensor:
        """Decode a batch to token ids [B, <=max_len] (BOS ... EOS PAD)."""
        mem_kv = self.memory_kv(images)
        return greedy(self.decoder, mem_kv) if beam <= 1 else beam_search(self.decoder, mem_kv, beam)


def build_model(cfg: ModelConfig) -> GryphOne | ARRecognizer:
    if cfg.kind == "diffusion":
        if not (cfg.num_symbols and cfg.num_modifiers):
            raise ValueError("diffusion model needs num_symbols and num_modifiers from the vocabulary")
        return GryphOne(cfg)
    if cfg.kind == "ar":
        if not cfg.num_tokens:
            raise ValueError("autoregressive model needs num_tokens from the vocabulary")
        return ARRecognizer(cfg)
    raise ValueError(f"unknown model kind {cfg.kind!r} (diffusion | ar)")


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def flops_per_image(cfg: ModelConfig, train: bool = True) -> float:
    """Matmul FLOPs per image (2 per multiply-add), forward only unless `train` (x3 for backward).

    Counts the encoder over its patches and the decoder over its positions (both RMML views when on),
    including attention score/value products; used for MFU.
    """
    n_patch = (cfg.image_size[0] // cfg.patch) * (cfg.image_size[1] // cfg.patch)
    d, L = cfg.enc_dim, cfg.max_len
    enc = cfg.enc_depth * (2 * n_patch * 12 * d * d + 2 * 2 * n_patch * n_patch * d)
    enc += 2 * n_patch * d * cfg.patch * cfg.patch  # patch embedding
    dd = cfg.dec_dim
    ff = 2 * dd * dd if (cfg.kind == "diffusion" and cfg.dec_block == "official") else 8 * dd * dd  # d- or 4d-wide
    per_layer = 2 * L * (4 * dd * dd + ff + 2 * dd * dd) + 2 * 2 * L * L * dd + 2 * 2 * L * n_patch * dd
    mem_kv = cfg.dec_depth * 2 * n_patch * d * 2 * dd
    heads = 2 * L * dd * (cfg.num_symbols + cfg.num_modifiers + cfg.num_tokens)
    views = 2 if (cfg.kind == "diffusion" and cfg.loss.rmml and train) else 1
    dec = views * (cfg.dec_depth * per_layer + heads) + mem_kv
    total = enc + dec
    return float(total * (3 if train else 1))
