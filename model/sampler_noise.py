"""The random re-mask sampler's draws, in one place for PyTorch (model/gryphone/diffusion.py) and ONNX Runtime
(model/onnx_samplers.py); NumPy only, so an exported model decodes without torch."""
from __future__ import annotations

import numpy as np


def remask_noise(seed: int, T: int, n: int) -> np.ndarray:
    """float32 [T, n] in [0, 1): row T - t is step t's draws; position i is re-masked when its draw is
    below (t - 1) / T. From NumPy's PCG64 seeded with `seed` alone and the same row for every sample
    of a batch, so an image reads the same alone, in any batch and at any batch size."""
    return np.random.default_rng(seed).random((T, n), dtype=np.float32)
