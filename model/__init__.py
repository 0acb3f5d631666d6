"""Recognizers on one seam (model/recognizer.py): GryphOne (ViT + SAT masked diffusion), the
autoregressive baseline, PosFormer and HVT; `model.load(ckpt)` gives a trained one back with its render
and label specs.

Names are imported on first use (PEP 562), so `model.load(onnx_folder)` and the shipped weights'
manifest work where torch is not installed: only what a checkpoint needs imports torch.
"""
from __future__ import annotations

import importlib

# torch-free, imported now: `load` is also a submodule's name, and a later `import model.load` must not
# leave the package attribute pointing at the module instead of the function
from .decoding import DecodeSpec
from .errors import CheckpointError, RecognizerConfigError
from .load import Loaded, load
from .shipped import ShippedWeightsError, shipped_names

_WHERE = {
    "ARConfig": "ar", "ARRecognizer": "ar",
    "load_checkpoint": "checkpoint", "read_specs": "checkpoint", "save_checkpoint": "checkpoint",
    "LossConfig": "gryphone.diffusion", "SATDecoder": "gryphone.diffusion", "diffusion_loss": "gryphone.diffusion",
    "mask_view": "gryphone.diffusion", "sample_mask_predict": "gryphone.diffusion", "sample_remask": "gryphone.diffusion",
    "DecodeSpec": "decoding",
    "ViTConfig": "encoder", "ViTEncoder": "encoder",
    "EncoderInitError": "encoder_init", "init_encoder": "encoder_init", "load_vit_checkpoint": "encoder_init",
    "CheckpointError": "errors", "RecognizerConfigError": "errors",
    "GryphOne": "gryphone", "GryphOneConfig": "gryphone",
    "Loaded": "load", "load": "load",
    "ShippedWeightsError": "shipped", "shipped_names": "shipped",
    "PosFormer": "posformer", "PosFormerConfig": "posformer",
    "Recognizer": "recognizer", "RecognizerConfig": "recognizer", "count_params": "recognizer",
    "RECOGNIZERS": "registry", "build": "registry", "config_from_dict": "registry", "switch_kind": "registry",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'model' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
