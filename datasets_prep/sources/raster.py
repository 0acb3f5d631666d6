"""Loading one image item: decode it safely, and take its label as the label file gives it.

Shared by every image source. The image goes through datasets_prep/image_intake.py (pixel limit
before decoding, verified decode, transparency on white); the worker then finds the ink and fits it
to the canvas. Labels of image datasets are space-tokenized LaTeX (`x ^ { 2 }`); whitespace is
collapsed as for CROHME truths and the tokenizer ignores it, so `latex` is the label with single
spaces and `latex_raw` the line as written.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..image_intake import ImageError, _reduce, _reduction, decode_noted, to_gray_on_white
from ..captions import from_caption
from ..readers import InkError
from .base import Item, Sample, read_bytes

KIND = "image"


def label(raw: str | None, path: str) -> tuple[str, str]:
    if raw is None or not raw.strip():
        raise InkError(path, "label", "empty label", "no-label")
    return from_caption(raw), raw


def load(item: Item, opts) -> Sample:
    latex, raw = label(item.label, item.path)
    ann = {"name": item.name or "", "label_at": item.label_at or ""}
    return Sample(latex, raw, ann, pixels=pixels(item, opts, ann))


def pixels(item: Item, opts, annotations: dict | None = None) -> np.ndarray:
    """The item's image as gray float32 [H, W], 1 = white; InkError(stage="image") if unusable.
    What decoding left out (GIF/TIFF frames after the first) goes to `annotations["note"]`."""
    try:
        if item.pixels is not None:
            return gray_from_array(item.pixels)
        im, notes = decode_noted(read_bytes(item, opts.max_bytes))
        if notes and annotations is not None:
            annotations["note"] = "; ".join(notes)
        return to_gray_on_white(im)
    except ImageError as e:
        raise InkError(item.path, "image", str(e), "bad-image") from None


def gray_from_array(a: np.ndarray, max_pixels: int = 40_000_000) -> np.ndarray:
    """A decoded image held as an array (TAMER's images.pkl: uint8 [H, W]) -> gray, 1 = white."""
    if not isinstance(a, np.ndarray) or a.ndim not in (2, 3) or a.dtype.kind not in "uifb":
        raise ImageError(f"not an image array ({type(a).__name__} {getattr(a, 'shape', '')} "
                         f"{getattr(a, 'dtype', '')})")
    if a.ndim == 3 and a.shape[2] not in (1, 3, 4):
        raise ImageError(f"array of shape {a.shape} is not an image (channels last, 1, 3 or 4)")
    if a.shape[0] * a.shape[1] > max_pixels or 0 in a.shape:
        raise ImageError(f"array of shape {a.shape} is empty or over {max_pixels / 1e6:.0f} MP")
    factor = _reduction(a.shape[1], a.shape[0])  # past 4 MP, as a decoded image is (image_intake.WORK_PIXELS)
    if factor > 1 and a.dtype != np.uint8:
        a, factor = a[::factor, ::factor], 1  # a strided view: the float copy below is of the reduced image
    if a.dtype != np.uint8:
        a = a.astype(np.float64)
        top = float(a.max()) if a.size else 0.0
        a = (np.clip(a / (top if top > 1.0 else 1.0), 0, 1) * 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    im = Image.fromarray(a)
    return to_gray_on_white(_reduce(im, factor) if factor > 1 else im)


def sample_id(item: Item, sample: Sample) -> str:
    return item.id_prefix + (item.name or item.path)
