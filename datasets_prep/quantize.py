"""Shard images re-encoded with a few gray levels: a palette PNG of 1, 2 or 4 bits per pixel.

Why: a printed training image carries its drawn blur, noise and JPEG artefacts: a shard row of the
printed set is ~4.2 KB, ~1.3 KB with 4 gray levels, ~0.9 KB with 2 (BENCHMARKS, "Fewer gray levels on
the wire"), and a GPU lease's 64 MiB then holds three times the training images. Four levels is the
default because at the printed canvas (64x512) thin strokes are drawn gray, not black: cut at mid-gray (2 levels) a
formula loses strokes, whole symbols at times (docs/img/degrade.png). The noise in the ink is mostly
quantized away; the trainer can draw blur and noise again on the device (`degrade.prob`,
train/degrade.py). Only training splits should be quantized: a split that is scored keeps the images
the model will meet.
"""
from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
from PIL import Image

from .image_intake import ImageError, decode

LEVELS = (2, 4, 16)
"""The gray levels a copy may keep (a palette PNG of 1, 2 or 4 bits per pixel)."""
DEFAULT_LEVELS = 4


def check_levels(levels: int) -> None:
    """ValueError unless `levels` is one of LEVELS."""
    if levels not in LEVELS:
        raise ValueError(f"--levels {levels}: one of {', '.join(map(str, LEVELS))}")


def quantize_gray(gray: np.ndarray, levels: int = DEFAULT_LEVELS) -> np.ndarray:
    """uint8 gray (255 = paper) -> the index of the nearest of `levels` evenly spaced darknesses."""
    check_levels(levels)
    dark = (255 - gray.astype(np.int32)) * (levels - 1)
    return ((dark + 127) // 255).astype(np.uint8)  # round half up, in integers: no float ties


def palette(levels: int) -> list[int]:
    """RGB triples for the level indices: index k is darkness k / (levels - 1)."""
    grays = [round(255 * (1 - k / (levels - 1))) for k in range(levels)]
    return [v for g in grays for v in (g, g, g)]


def quantize_png(data: bytes, levels: int = DEFAULT_LEVELS) -> bytes:
    """Image bytes (any mode decode reads) -> a palette PNG of the same size with `levels` grays;
    ImageError on a bad image, ValueError on a bad level count."""
    check_levels(levels)
    index = quantize_gray(np.asarray(decode(data).convert("L"), dtype=np.uint8), levels)
    image = Image.fromarray(index, mode="P")
    image.putpalette(palette(levels))
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True, bits=int(np.log2(levels)))
    return buf.getvalue()


def quantize_table(table: pa.Table, levels: int = DEFAULT_LEVELS, where: str = "") -> pa.Table:
    """The table with every image quantized (the other columns untouched). A bad image raises
    ValueError naming `where`, the row and its sample id."""
    images = table.column("image").combine_chunks()
    data, paths = images.field("bytes").to_pylist(), images.field("path")
    ids = table.column("sample_id").to_pylist() if "sample_id" in table.column_names else [None] * len(data)
    out = []
    for row, (blob, sid) in enumerate(zip(data, ids)):
        try:
            out.append(quantize_png(blob or b"", levels))
        except ImageError as exc:
            raise ValueError(f"{where}: row {row}{f' ({sid})' if sid else ''}: {exc}") from None
    column = pa.StructArray.from_arrays([pa.array(out, pa.binary()), paths], fields=list(images.type))
    return table.set_column(table.column_names.index("image"), table.field("image"), column)
