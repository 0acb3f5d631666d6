"""Random photometric degradation of training images, on the batch tensor (ink = 1 on 0).

Why: the printed set bakes one draw of blur, noise and JPEG into each stored image (print_variation),
so every epoch shows the same artefacts, and those artefacts are what makes a stored image large: a
printed shard row is ~4.2 KB, ~1.3 KB with 4 gray levels (BENCHMARKS, "Fewer gray levels on the wire").
A GPU lease carries at most 64 MiB, so it takes three times the training images when they travel
quantized (`datasets_prep.subset --quantize`), with blur and noise drawn again here, on the device, at
every
step. The effects, in the order a page meets them: stroke weight (a fractional dilation or erosion),
optical blur (a Gaussian of its own width per image) and sensor noise, drawn as they look after the
image intake (datasets_prep.image_intake.ink_darkness), which every stored or uploaded picture went
through: darkness below 0.15 is paper there, so the noise lands in the ink only and the paper stays
clean, and the darkest ink is scaled to 1. A degraded image is one the intake could have produced.
JPEG's block artefacts are not drawn: blur and noise stand in for them.

Like train.augment, the draws come from the caller's generator (a resumed run repeats them), every
image draws all its parameters whether or not an effect applies (so one image's draws do not shift the
next one's), and the images not picked come back exactly as they came.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

MAX_BLUR = 3.0
"""The widest blur (sigma, pixels) a config may ask for: the kernel is 2 * ceil(3 sigma) + 1 wide."""
PAPER_FLOOR = 0.15
"""ink_darkness's cut: darkness below it is paper (grain and compression noise there are set to 0)."""


@dataclass
class DegradeConfig:
    prob: float = 0.0                          # share of training images degraded; 0 = off
    stroke: tuple[float, float] = (-0.5, 1.0)  # stroke weight: < 0 erodes, > 0 dilates (share of one 3x3 step)
    p_stroke: float = 0.3
    blur: tuple[float, float] = (0.3, 1.0)     # Gaussian sigma in pixels (print_variation's range)
    p_blur: float = 0.7                        # most images: a quantized image's edges are harder than a print's
    noise: tuple[float, float] = (2.0, 12.0)   # noise standard deviation on the 0-255 scale (print_variation's)
    p_noise: float = 0.3
    floor: float = PAPER_FLOOR                 # darkness below this is paper: no noise there, as the intake cleans it

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """A ValueError naming the bad setting (overrides set fields after construction: call again)."""
        probs = (self.prob, self.p_stroke, self.p_blur, self.p_noise)
        ok = (all(0.0 <= p <= 1.0 for p in probs)
              and -1.0 <= self.stroke[0] <= self.stroke[1] <= 1.0
              and 0.0 <= self.blur[0] <= self.blur[1] <= MAX_BLUR
              and 0.0 <= self.noise[0] <= self.noise[1] <= 128.0
              and 0.0 <= self.floor < 1.0)
        if not ok:
            raise ValueError(f"degrade: need probabilities in [0, 1], -1 <= stroke lo <= hi <= 1, "
                             f"0 <= blur lo <= hi <= {MAX_BLUR:g}, 0 <= noise lo <= hi <= 128, "
                             f"0 <= floor < 1; got {self}")


def _draw(n: int, lo: float, hi: float, p: float, generator: torch.Generator, device) -> torch.Tensor:
    """n values in [lo, hi], each kept with probability p and 0 otherwise (both draws always made)."""
    value = lo + (hi - lo) * torch.rand(n, generator=generator, device=device)
    keep = torch.rand(n, generator=generator, device=device) < p
    return torch.where(keep, value, torch.zeros_like(value))


def _stroke(images: torch.Tensor, amount: torch.Tensor) -> torch.Tensor:
    """Dilate (amount > 0) or erode (amount < 0) each image by |amount| of one 3x3 step."""
    a = amount[:, None, None, None]
    grown = F.max_pool2d(images, 3, stride=1, padding=1)
    shrunk = -F.max_pool2d(-images, 3, stride=1, padding=1)
    return torch.where(a >= 0, images + a * (grown - images), images + (-a) * (shrunk - images))


def _blur(images: torch.Tensor, sigma: torch.Tensor, widest: float) -> torch.Tensor:
    """A separable Gaussian of width sigma[i] on image i (sigma 0: the image unchanged). The kernel's
    size comes from the config's `widest` sigma, not from the draws: one shape every step, and nothing
    read back from the device."""
    b, _, h, w = images.shape
    radius = max(1, math.ceil(3 * widest))
    x = torch.arange(-radius, radius + 1, device=images.device, dtype=images.dtype)
    s = sigma.to(images.dtype).clamp_min(1e-3)[:, None]
    kernel = torch.exp(-0.5 * (x[None, :] / s) ** 2)
    kernel = kernel / kernel.sum(-1, keepdim=True)
    delta = (x == 0).to(images.dtype).expand_as(kernel)
    kernel = torch.where((sigma > 0)[:, None], kernel, delta)
    flat = images.reshape(1, b, h, w)
    flat = F.conv2d(F.pad(flat, (radius, radius, 0, 0)), kernel[:, None, None, :], groups=b)
    flat = F.conv2d(F.pad(flat, (0, 0, radius, radius)), kernel[:, None, :, None], groups=b)
    return flat.reshape(b, 1, h, w)


def _darkest_to_one(images: torch.Tensor) -> torch.Tensor:
    """Each image scaled so that its darkest ink is 1, as the intake scales it (blank images as they are)."""
    top = images.amax(dim=(1, 2, 3), keepdim=True)
    return torch.where(top > 0, images / top.clamp_min(1e-6), images)


def degrade_batch(images: torch.Tensor, cfg: DegradeConfig, generator: torch.Generator) -> torch.Tensor:
    """images [B, 1, H, W] (ink 1 on 0) -> the same shape, each degraded with probability cfg.prob."""
    if cfg.prob <= 0:
        return images
    b, dev = images.shape[0], images.device
    on = torch.rand(b, generator=generator, device=dev) < cfg.prob
    stroke = _draw(b, *cfg.stroke, cfg.p_stroke, generator, dev) * on
    sigma = _draw(b, *cfg.blur, cfg.p_blur, generator, dev) * on
    noise = _draw(b, *cfg.noise, cfg.p_noise, generator, dev) / 255.0
    grain = torch.randn(images.shape, generator=generator, device=dev, dtype=images.dtype)
    out = _stroke(images, stroke.to(images.dtype))
    out = _blur(out, sigma, cfg.blur[1])
    grain = torch.where(out >= cfg.floor, grain, torch.zeros_like(grain))  # the intake's clean paper
    out = (out + noise[:, None, None, None].to(images.dtype) * grain).clamp_(0.0, 1.0)
    out = _darkest_to_one(out)
    return torch.where(on[:, None, None, None], out, images)  # the rest exactly as they came
