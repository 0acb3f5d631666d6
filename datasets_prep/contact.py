"""Contact sheets: rendered samples in a grid, each captioned with its label, to eyeball a conversion.

Read back from the written shards (not from memory), so the sheet also shows that the stored PNGs
decode to what was meant.
"""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .shards import load_split


def contact_sheet(images: list[np.ndarray], captions: list[str], cols: int = 4, caption_lines: int = 2) -> Image.Image:
    """Grid of grayscale images (uint8 [H, W], any sizes) with up to `caption_lines` of text under each."""
    if not images:
        raise ValueError("no images for the contact sheet")
    font = ImageFont.load_default()
    cell_w = max(a.shape[1] for a in images) + 8
    cell_h = max(a.shape[0] for a in images)
    line_h = 12
    chars = max(8, cell_w // 6)
    rows = (len(images) + cols - 1) // cols
    sheet = Image.new("L", (cols * cell_w, rows * (cell_h + caption_lines * line_h + 10)), 230)
    draw = ImageDraw.Draw(sheet)
    for i, (img, cap) in enumerate(zip(images, captions)):
        r, c = divmod(i, cols)
        x, y = c * cell_w + 4, r * (cell_h + caption_lines * line_h + 10) + 4
        sheet.paste(Image.fromarray(img), (x, y))
        wrapped = textwrap.wrap(cap, chars, break_long_words=True)[:caption_lines] or [""]
        for j, line in enumerate(wrapped):
            draw.text((x, y + cell_h + 2 + j * line_h), line, fill=0, font=font)
    return sheet


def write_preview(out: Path, splits: list[str], n: int, dest: Path) -> Path:
    """A sheet of the first rows of each split (n in all), captioned "split: latex" (+ [invalid])."""
    images, captions = [], []
    tables = [(s, load_split(out / s)) for s in splits]
    tables = [(s, t) for s, t in tables if t.num_rows]
    for i, (s, table) in enumerate(tables):
        share = -(-(n - len(images)) // (len(tables) - i))  # what is left, spread over the splits left
        k = min(share, table.num_rows)
        if k <= 0:
            continue
        sub = table.slice(0, k).select(["image", "latex", "label_error"]).to_pylist()
        for row in sub:
            images.append(np.array(Image.open(io.BytesIO(row["image"]["bytes"]))))
            flag = " [invalid]" if row["label_error"] else ""
            captions.append(f"{s}: {row['latex']}{flag}")
    if images:
        contact_sheet(images, captions).save(dest)
    return dest
