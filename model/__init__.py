"""Recognizers on one seam (model/recognizer.py): GryphOne (ViT + SAT masked diffusion), the
autoregressive baseline and PosFormer; `model.load(ckpt)` gives a trained one back with its render and label specs."""
from .ar_baseline import ARConfig, ARRecognizer
from .checkpoint import load_checkpoint, read_specs, save_checkpoint
from .diffusion import LossConfig, SATDecoder, diffusion_loss, mask_view, sample_mask_predict, sample_remask
from .encoder import ViTConfig, ViTEncoder
from .encoder_init import EncoderInitError, init_encoder, load_vit_checkpoint
from .errors import CheckpointError, RecognizerConfigError
from .gryphone import GryphOne, GryphOneConfig
from .load import Loaded, load
from .shipped import ShippedWeightsError, shipped_names
from .posformer import PosFormer, PosFormerConfig
from .recognizer import DecodeSpec, Recognizer, RecognizerConfig, count_params
from .registry import RECOGNIZERS, build, config_from_dict, switch_kind

__all__ = [
    "ARConfig", "ARRecognizer", "CheckpointError", "DecodeSpec", "EncoderInitError", "GryphOne", "GryphOneConfig",
    "Loaded", "LossConfig", "ShippedWeightsError", "shipped_names", "PosFormer", "PosFormerConfig", "RECOGNIZERS", "Recognizer", "RecognizerConfig", "RecognizerConfigError", "SATDecoder",
    "ViTConfig", "ViTEncoder", "build", "config_from_dict", "count_params", "diffusion_loss", "init_encoder", "load",
    "load_checkpoint", "load_vit_checkpoint", "mask_view", "read_specs", "sample_mask_predict", "sample_remask",
    "save_checkpoint", "switch_kind",
]
