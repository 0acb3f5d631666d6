"""GryphOne: ViT encoder + SAT masked-diffusion decoder, and an autoregressive baseline on the same encoder."""
from .diffusion import LossConfig, SATDecoder, diffusion_loss, mask_view, sample_mask_predict, sample_remask
from .encoder import ViTEncoder
from .encoder_init import EncoderInitError, init_encoder, load_vit_checkpoint
from .gryphone import ARRecognizer, GryphOne, ModelConfig, build_model, count_params, flops_per_image

__all__ = [
    "ARRecognizer", "EncoderInitError", "GryphOne", "LossConfig", "ModelConfig", "SATDecoder", "ViTEncoder", "build_model",
    "count_params", "diffusion_loss", "flops_per_image", "init_encoder", "load_vit_checkpoint", "mask_view",
    "sample_mask_predict", "sample_remask",
]
