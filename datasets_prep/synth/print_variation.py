"""The variation real printed documents have, drawn per image: size, stroke weight, slight skew, blur,
noise and JPEG artefacts.

Why: a recognizer trained on one size, one weight and perfectly clean pixels (the layout engine's
default) meets scans, screenshots and photographed pages that have none of those. Each effect is
optional (a zero range turns it off) and each image draws its own parameters from `(seed, index)`
alone, so a run is deterministic, an image can be re-drawn by its index, and adding images does not
change the others. `PrintVariation.summary()` is what `print_summary.json` records.
"""
from __future__ import annotations

import io
from dataclasses import asdict, dataclass, replace

import numpy as np

from .printed import PrintStyle


@dataclass(frozen=True)
class PrintVariation:
    """Ranges each image's parameters are drawn from (uniformly; `(0, 0)` or 0 turns an effect off).

    size: pixels per em; stroke: stroke width in pixels; skew_deg: a rotation of at most this many
    degrees either way; blur: Gaussian blur radius in pixels, applied with probability p_blur; noise:
    the standard deviation (0-255 scale) of additive Gaussian noise, with probability p_noise; jpeg:
    JPEG quality, with probability p_jpeg."""

    size: tuple[float, float] = (16.0, 26.0)
    stroke: tuple[float, float] = (1.0, 2.2)
    skew_deg: float = 1.5
    blur: tuple[float, float] = (0.3, 1.0)
    p_blur: float = 0.3
    noise: tuple[float, float] = (2.0, 12.0)
    p_noise: float = 0.3
    jpeg: tuple[int, int] = (35, 90)
    p_jpeg: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("size", "stroke", "blur", "noise", "jpeg"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise ValueError(f"print variation {name}: want 0 <= low <= high, got ({lo}, {hi})")
        if self.size[0] <= 0 or self.stroke[0] <= 0:
            raise ValueError("print variation: size and stroke must be positive")
        if self.jpeg[1] > 100:
            raise ValueError("print variation jpeg: quality is at most 100")
        for name in ("p_blur", "p_noise", "p_jpeg"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"print variation {name}: a probability in [0, 1]")
        if not 0 <= self.skew_deg <= 45:
            raise ValueError("print variation skew_deg: 0 to 45 degrees")

    def rng(self, index: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, index])

    def style(self, base: PrintStyle, rng: np.random.Generator) -> PrintStyle:
        """The drawing style of one image (size and weight drawn; the rest from base)."""
        return replace(base, px_per_em=float(rng.uniform(*self.size)), stroke_width=float(rng.uniform(*self.stroke)))

    def degrade(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Skew, blur, noise and JPEG, in the order a page meets them (uint8 gray in, uint8 gray out)."""
        from PIL import Image, ImageFilter

        angle = float(rng.uniform(-self.skew_deg, self.skew_deg))
        blur = float(rng.uniform(*self.blur)) if rng.random() < self.p_blur else 0.0
        noise = float(rng.uniform(*self.noise)) if rng.random() < self.p_noise else 0.0
        quality = int(rng.integers(self.jpeg[0], self.jpeg[1] + 1)) if rng.random() < self.p_jpeg else 0
        pic = Image.fromarray(image, mode="L")
        if abs(angle) > 0.05:
            pic = pic.rotate(angle, resample=Image.BILINEAR, expand=True, fillcolor=255)
        if blur > 0:
            pic = pic.filter(ImageFilter.GaussianBlur(blur))
        out = np.asarray(pic, dtype=np.uint8)
        if noise > 0:
            out = np.clip(out.astype(np.float32) + rng.normal(0.0, noise, out.shape), 0, 255).astype(np.uint8)
        if quality:
            buf = io.BytesIO()
            Image.fromarray(out, mode="L").save(buf, format="JPEG", quality=quality)
            buf.seek(0)
            out = np.asarray(Image.open(buf).convert("L"), dtype=np.uint8)
        return np.ascontiguousarray(out)

    def summary(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
