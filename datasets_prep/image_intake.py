"""One intake for every raster a user hands over (predict today, image datasets next): decode it
safely, find the ink, and fit it to the canvas the way the shards' renderer fits an ink.

Why each step: images are untrusted and varied. A PNG header can promise 20000x20000 pixels in 76 KB
(a decompression bomb), so the pixel count is checked before anything is decoded; a truncated file
must be an error, not a half-black picture; grey+alpha and RGBA images keep their ink in the alpha
channel, so they are composited on white before anything else; white-on-black images are inverted;
photos have an uneven, noisy background, so the background is estimated and divided out, and
`binarize` thresholds the result (Otsu) for camera images. An image with no ink left is refused,
never guessed at.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter, UnidentifiedImageError

from .render import DEFAULT_MARGIN

MAX_PIXELS = 40_000_000
"""Larger images are refused (per file, with the size in the message): 40 MP is a full-page scan at
600 dpi, far beyond any expression, and bounds the memory one file can take (~40 MB grey)."""
INK_LEVEL = 0.35     # normalized darkness above which a pixel counts as ink
MIN_INK_PIXELS = 8   # fewer ink pixels than this: an empty canvas


class ImageError(ValueError):
    """An image that cannot be used; the message says why (the caller adds the file name)."""


FORMATS = ("PNG", "BMP", "JPEG", "TIFF", "GIF", "WEBP")
"""The raster formats decoded, and no others, whatever a file's name says: Pillow's EPS plugin runs
Ghostscript on a file whose bytes say PostScript (a `.png` can), and no plugin that hands the bytes to
another program may ever see an untrusted file."""
WORK_PIXELS = 4_000_000
"""Images larger than this are reduced (box filter, whole factors) before any float work: a 224-pixel
canvas cannot use more, and a 40 MP RGBA page otherwise costs gigabytes and a minute (JPEG is decoded
at the reduced size directly)."""


MAX_ASPECT = 100
"""Longest side over shortest: an IM2LATEX line is ~12:1, a CROHME ink under 30:1. A 1 x 100,000 strip
holds no formula, and fitted to the canvas it would look like "no ink"; it is refused by its shape."""


def decode(data: bytes, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """Bytes -> a fully decoded PIL image, or ImageError (not an image, too large, truncated)."""
    return decode_noted(data, max_pixels)[0]


def decode_noted(data: bytes, max_pixels: int = MAX_PIXELS) -> tuple[Image.Image, list[str]]:
    """`decode`, with notes on what was left out (the frames after the first of a GIF/TIFF, a
    reduction), for the caller to report."""
    if not data:
        raise ImageError("empty file (0 bytes)")
    notes: list[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data), formats=FORMATS)
            w, h = im.size
            if w * h > max_pixels:
                raise ImageError(f"{w}x{h} pixels exceeds the limit of {max_pixels / 1e6:.0f} MP")
            if w and h and max(w, h) > MAX_ASPECT * min(w, h):
                raise ImageError(f"{w}x{h} pixels: {max(w, h) // min(w, h)} times longer than it is wide, "
                                 f"past the {MAX_ASPECT}:1 any formula has; crop it to the formula")
            frames = int(getattr(im, "n_frames", 1) or 1)
            if frames > 1:
                notes.append(f"{frames} frames: only the first is used")
            factor = _reduction(w, h)
            if factor > 1 and im.format == "JPEG":
                im.draft(im.mode, (w // factor, h // factor))  # decoded at 1/2, 1/4 or 1/8 scale
            im.load()
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"refused as a decompression bomb: {exc}") from None
    except UnidentifiedImageError:
        raise ImageError(f"not an image file (the formats read are {', '.join(FORMATS)}; "
                         "anything else, PostScript/EPS included, is refused)") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:  # truncated data, broken CRC, bad chunks
        raise ImageError(f"cannot decode the image (truncated or corrupt?): {exc}") from None
    if w == 0 or h == 0:
        raise ImageError("image has no pixels")
    factor = _reduction(*im.size)
    if factor > 1:
        im = _reduce(im, factor)
        notes.append(f"{w}x{h} pixels reduced to {im.size[0]}x{im.size[1]} before fitting")
    return im, notes


def _reduction(w: int, h: int) -> int:
    factor = 1
    while (w // factor) * (h // factor) > WORK_PIXELS:
        factor += 1
    return factor


def _reduce(im: Image.Image, factor: int) -> Image.Image:
    """Box-average by a whole factor, in a mode that keeps transparency and 16-bit depth."""
    try:
        return im.reduce(factor)
    except (ValueError, OSError):
        pass
    alpha = im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in im.info
    try:
        return _plain(im, "RGBA" if alpha else "L").reduce(factor)
    except (ValueError, OSError) as exc:
        raise ImageError(f"cannot reduce a {im.mode} image: {exc}") from None


def _plain(im: Image.Image, mode: str) -> Image.Image:
    """`im` in `mode` ("L" or "RGBA"); LAB is read by its lightness channel (Pillow cannot convert
    it), any other mode Pillow cannot convert is an ImageError, never a crash."""
    if im.mode == mode:
        return im
    if im.mode == "LAB":
        im = im.getchannel("L")
        return im if mode == "L" else im.convert(mode)
    try:
        return im.convert(mode)
    except (ValueError, OSError):
        pass
    try:
        return im.convert("RGB").convert(mode)
    except (ValueError, OSError) as exc:
        raise ImageError(f"colour mode {im.mode} cannot be read as grey: {exc}") from None


def to_gray_on_white(im: Image.Image) -> np.ndarray:
    """Any mode -> float32 [H, W] in [0, 1], 1 = white: transparency composited on white."""
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(im, dtype=np.float32)
        top = max(float(arr.max()), 1.0)
        return arr / top
    if im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or (im.mode == "P" and "transparency" in im.info):
        rgba = _plain(im, "RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        gray = np.asarray(Image.alpha_composite(white, rgba).convert("L"), dtype=np.float32) / 255.0
        alpha = np.asarray(rgba, dtype=np.float32)[..., 3] / 255.0
        if float(gray.std()) < 1e-3 < float(alpha.std()):  # light ink on transparency: the alpha is the ink
            return 1.0 - alpha
        return gray
    return np.asarray(_plain(im, "L"), dtype=np.float32) / 255.0


def ink_darkness(gray: np.ndarray, binarize: bool = False) -> np.ndarray:
    """Gray (1 = white) -> ink darkness in [0, 1] with the background at 0.

    Polarity: the background is the majority of pixels, so a dark median means light ink on dark and
    the image is inverted. The background level is estimated per pixel (a wide max-filter of the
    lightness, i.e. the paper), and darkness is measured against it, which flattens uneven light;
    `binarize` then keeps only Otsu-thresholded ink (for photos and JPEG noise)."""
    g = gray
    if float(np.median(g)) < 0.5:
        g = 1.0 - g
    h, w = g.shape
    radius = max(3, min(h, w) // 16) | 1
    small = Image.fromarray((g * 255).astype(np.uint8))
    paper = np.asarray(small.filter(ImageFilter.MaxFilter(min(radius, 31))).filter(
        ImageFilter.BoxBlur(radius)), dtype=np.float32) / 255.0
    dark = np.clip((paper - g) / np.maximum(paper, 0.2), 0.0, 1.0)
    top = float(np.percentile(dark, 99.9)) if dark.size else 0.0
    if top < 0.08:  # nothing darker than the paper by even 8%: no ink
        return np.zeros_like(dark)
    dark = np.clip(dark / top, 0.0, 1.0)
    if binarize:
        dark = (dark > _otsu(dark)).astype(np.float32)
    else:
        dark[dark < 0.15] = 0.0  # paper grain and compression noise
    return dark


def _otsu(x: np.ndarray) -> float:
    hist, edges = np.histogram(x, bins=64, range=(0.0, 1.0))
    p = hist.astype(np.float64) / max(1, hist.sum())
    omega, mu = np.cumsum(p), np.cumsum(p * (edges[:-1] + edges[1:]) / 2)
    between = (mu[-1] * omega - mu) ** 2 / np.maximum(omega * (1 - omega), 1e-12)
    return float(edges[int(np.argmax(between)) + 1])


@dataclass(frozen=True)
class Fitted:
    """A fitted image and the mapping used: canvas pixel = source pixel * scale + offset (as the
    renderer records for inks), bbox = the ink's box in source pixels [x0, y0, x1, y1]."""

    canvas: np.ndarray  # float32 [H, W], ink = 1 on 0
    scale: float
    offset: tuple[float, float]
    bbox: tuple[float, float, float, float]


def fit_image(dark: np.ndarray, size: tuple[int, int], margin: float = DEFAULT_MARGIN) -> Fitted:
    """Crop to the ink and fit it, aspect kept and centred, `margin` px from the border as
    datasets_prep.render.fit places an ink."""
    ink = dark > INK_LEVEL
    if int(ink.sum()) < MIN_INK_PIXELS:
        raise ImageError("no ink found (an empty or blank canvas)")
    ys, xs = np.nonzero(ink)
    y0, y1, x0, x1 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
    crop = dark[y0:y1, x0:x1]
    h, w = size
    # the crop includes the strokes' thickness, which the renderer's fit adds to the stroke centres'
    # box: the outer ink extent there is exactly the canvas less the margins
    avail_h, avail_w = h - 2 * margin, w - 2 * margin
    scale = min(avail_h / crop.shape[0], avail_w / crop.shape[1])
    nh, nw = max(1, round(crop.shape[0] * scale)), max(1, round(crop.shape[1] * scale))
    resized = np.asarray(Image.fromarray((crop * 255).astype(np.uint8)).resize(
        (nw, nh), Image.Resampling.BOX if scale < 1 else Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
    if scale < 1:  # area averaging greys out strokes thinner than a pixel: restore their contrast
        peak = float(np.percentile(resized[resized > 0], 99)) if (resized > 0).any() else 1.0
        resized = np.clip(resized / max(peak, 1e-3), 0.0, 1.0)
    canvas = np.zeros((h, w), dtype=np.float32)
    top, left = (h - nh) // 2, (w - nw) // 2
    canvas[top: top + nh, left: left + nw] = resized
    return Fitted(canvas, float(scale), (left - x0 * scale, top - y0 * scale), (x0, y0, x1, y1))


def fit_to_canvas(dark: np.ndarray, size: tuple[int, int], margin: float = DEFAULT_MARGIN) -> np.ndarray:
    """`fit_image`'s canvas alone: float32 [H, W], ink = 1 on 0."""
    return fit_image(dark, size, margin).canvas


def image_to_canvas(data: bytes, size: tuple[int, int], *, binarize: bool = False, margin: float = DEFAULT_MARGIN,
                    max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Image file bytes -> the model's input, float32 [H, W] with ink = 1; ImageError on anything unusable."""
    return fit_to_canvas(ink_darkness(to_gray_on_white(decode(data, max_pixels)), binarize), size, margin)
