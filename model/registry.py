"""Which recognizers exist: `model.kind=NAME` picks one. Adding a recognizer is its module and one line
in RECOGNIZERS."""
from __future__ import annotations

import dataclasses

import torch.nn as nn

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec

from .ar.recognizer import ARRecognizer
from .errors import RecognizerConfigError
from .gryphone.recognizer import GryphOne
from .hvt.recognizer import HVT
from .posformer.recognizer import PosFormer
from .layers import WeightsDropout
from .recognizer import Recognizer, RecognizerConfig

RECOGNIZERS: dict[str, type[Recognizer]] = {
    "diffusion": GryphOne,       # GryphOne: ViT + SAT masked diffusion (model/gryphone/recognizer.py)
    "ar": ARRecognizer,          # the AR baseline on the same encoder (model/ar/recognizer.py)
    "posformer": PosFormer,      # PosFormer: DenseNet or ViT + coverage-corrected decoder (model/posformer/recognizer.py)
    "hvt": HVT,                  # ResNet + ViT encoder, coverage-attention LSTM decoder (model/hvt/recognizer.py)
}

POSITIVE = ("patch", "enc_dim", "enc_depth", "enc_heads", "dec_dim", "dec_depth", "dec_heads", "max_len")
NON_NEGATIVE = ("patch_w",)  # 0 means "as the other setting" (patch_w 0: square patches)


def recognizer_class(kind: str) -> type[Recognizer]:
    try:
        return RECOGNIZERS[kind]
    except KeyError:
        raise RecognizerConfigError(f"unknown model.kind {kind!r}; choose from {', '.join(RECOGNIZERS)}") from None


def config_keys(kind: str) -> list[str]:
    return [f.name for f in dataclasses.fields(recognizer_class(kind).config_class)]


def config_from_dict(d: dict) -> RecognizerConfig:
    """A recognizer config from its dict (as stored); unknown keys are an error listing the valid ones."""
    if not isinstance(d, dict):
        raise RecognizerConfigError(f"model config must be a mapping, got {type(d).__name__}")
    cls = recognizer_class(d.get("kind", "diffusion")).config_class
    return _dataclass_from_dict(cls, d, "model")


def _dataclass_from_dict(cls: type, d: dict, where: str):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - set(fields))
    if unknown:
        raise RecognizerConfigError(f"{where}: unknown keys {unknown} for this kind; valid: {', '.join(fields)}")
    kwargs = {}
    for name, value in d.items():
        default = cls().__dict__[name] if name in cls().__dict__ else None
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            value = _dataclass_from_dict(type(default), value, f"{where}.{name}")
        elif isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def switch_kind(cfg: RecognizerConfig, kind: str) -> RecognizerConfig:
    """A config of another kind that keeps every setting the two kinds share (encoder, widths, window),
    so `--config demo model.kind=ar` is the AR baseline on the demo's encoder (and PosFormer, which has
    two encoders, takes the ViT whose settings carry over: the demo's measured PosFormer). The window counts SAT
    positions for GryphOne and LaTeX tokens (with BOS/EOS) for the others, about twice as many: it is
    doubled (halved) on the way from one to the other."""
    new = recognizer_class(kind)
    names = {f.name for f in dataclasses.fields(new.config_class)}
    shared = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name in names and f.name != "kind"}
    old_labels = recognizer_class(cfg.kind).label_kind
    if "max_len" in shared and old_labels != new.label_kind:
        shared["max_len"] = shared["max_len"] * 2 if new.label_kind == "token" else max(2, shared["max_len"] // 2)
    if "encoder" in names and "encoder" not in shared and hasattr(cfg, "patch"):
        shared["encoder"] = "vit"  # the preset's ViT settings carry over, so its ViT is the encoder
    return new.config_class(kind=kind, **shared)


def validate_config(cfg: RecognizerConfig) -> None:
    for names, least, what in ((POSITIVE, 1, "a positive integer"), (NON_NEGATIVE, 0, "an integer >= 0")):
        for name in names:
            value = getattr(cfg, name, least)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise RecognizerConfigError(f"model.{name} must be {what}, got {value!r}")
    for dim, heads in (("enc_dim", "enc_heads"), ("dec_dim", "dec_heads")):
        if hasattr(cfg, dim) and hasattr(cfg, heads) and getattr(cfg, dim) % getattr(cfg, heads):
            raise RecognizerConfigError(f"model.{dim}={getattr(cfg, dim)} is not a multiple of "
                                        f"model.{heads}={getattr(cfg, heads)}")
    if not 0 <= cfg.dropout < 1:
        raise RecognizerConfigError(f"model.dropout must be in [0, 1), got {cfg.dropout!r}")
    if not isinstance(cfg.attn_dropout, bool):
        raise RecognizerConfigError(f"model.attn_dropout must be true or false, got {cfg.attn_dropout!r}")


def build(cfg: RecognizerConfig, render: RenderSpec, labels: LabelSpec) -> Recognizer:
    validate_config(cfg)
    model = recognizer_class(cfg.kind)(cfg, render, labels)
    if not cfg.attn_dropout:
        without_attention_dropout(model)
    return model


def without_attention_dropout(model: nn.Module) -> nn.Module:
    """Turn off dropout on the attention weights of every attention module (the residual, MLP and
    embedding dropout stay). Why: with dropout on its weights, PyTorch's CPU attention falls back to
    the unfused math kernel, which materializes the weights and draws a mask for each; without, the
    fused flash kernel runs in training too (`model.attn_dropout=false`; BENCHMARKS.md times it).
    Every `layers.WeightsDropout` module is one (PosFormer's coverage cross-attention too), so the
    setting means one thing for every recognizer."""
    for module in model.modules():
        if isinstance(module, WeightsDropout):
            module.dropout = 0.0
    return model
