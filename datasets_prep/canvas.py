"""Turn an ink or an image file into the model's input exactly as a RenderSpec says.

The one place prediction, the server and evaluation of new files draw their inputs: the same
renderer and image intake the converter used for the shards, with the spec stored in the
checkpoint, so a new ink looks to the model like its training data.
"""
from __future__ import annotations

import numpy as np

from .image_intake import decode_noted, fit_to_canvas, ink_darkness, to_gray_on_white
from .ink import Ink
from .render import render_ink
from .render_spec import RenderSpec


def draw_ink(spec: RenderSpec, ink: Ink) -> np.ndarray:
    """An `Ink` -> float32 [H, W] with ink = 1 on 0 (ValueError for an ink with no points)."""
    img = render_ink(ink, size=spec.size, stroke_width=spec.stroke_width, margin=spec.margin,
                     antialias=spec.antialias, max_glyph=spec.max_glyph)
    return (255 - img).astype(np.float32) / 255.0


def fit_image(spec: RenderSpec, data: bytes, binarize: bool = False) -> np.ndarray:
    """Image file bytes -> float32 [H, W], ink = 1, fitted as the image shards were and quantized to
    8 bits like their PNGs. ImageError (datasets_prep.image_intake) on anything unusable."""
    return fit_image_noted(spec, data, binarize)[0]


def fit_image_noted(spec: RenderSpec, data: bytes, binarize: bool = False) -> tuple[np.ndarray, list[str]]:
    """fit_image, and the notes decoding made (frames after a GIF's or TIFF's first, say)."""
    image, notes = decode_noted(data)
    canvas = fit_to_canvas(ink_darkness(to_gray_on_white(image), binarize or spec.binarize), spec.size, spec.margin)
    return (np.rint(canvas * 255.0) / 255.0).astype(np.float32), notes
