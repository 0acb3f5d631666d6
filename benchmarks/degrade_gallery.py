"""A picture of what `--quantize` keeps and what `degrade.prob` draws again: a few formulas typeset by
TeX, each as a printed shard stores it (one draw of print_variation's blur, noise and JPEG, through
the image intake), its copies with 4 and with 2 gray levels (`datasets_prep.subset --quantize`), and
the 4-level copy degraded on the fly twice (train/degrade.py, every image degraded, default effects).

Why: whether a quantized copy plus on-the-fly degradation looks like the stored images is something a
reader judges faster by eye than from a table (it is how the 2-level copy was found to drop strokes);
side-by-side training runs measure the rest. The
formulas are textbook ones (font_gallery's), so no corpus formula or image ends up in the docs.

    python benchmarks/degrade_gallery.py --out docs/img/degrade.png
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.font_gallery import FORMULAS  # noqa: E402
from datasets_prep.quantize import quantize_png  # noqa: E402
from datasets_prep.image_intake import fit_to_canvas, ink_darkness, to_gray_on_white  # noqa: E402
from datasets_prep.synth.errors import SynthError  # noqa: E402
from datasets_prep.synth.print_variation import PrintVariation  # noqa: E402
from datasets_prep.synth.tex import TexUnavailable, check_tex, render_tex  # noqa: E402

CANVAS = (64, 512)
"""The printed preset's canvas (print-cpu)."""
DRAWS = 2


def stored(formula: str, index: int, variation: PrintVariation) -> np.ndarray:
    """The formula as a printed shard holds it: uint8 gray [H, W], 255 = paper."""
    from PIL import Image

    rng = variation.rng(index)
    gray = variation.degrade(render_tex(formula, font="cm"), rng)
    dark = ink_darkness(to_gray_on_white(Image.fromarray(gray, mode="L")))
    return np.rint((1.0 - fit_to_canvas(dark, CANVAS)) * 255.0).astype(np.uint8)


def quantized(gray: np.ndarray, levels: int) -> np.ndarray:
    """The image as `datasets_prep.subset --quantize` writes it, decoded back to uint8 gray."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(gray, mode="L").save(buf, format="PNG")
    with Image.open(io.BytesIO(quantize_png(buf.getvalue(), levels))) as im:
        return np.asarray(im.convert("L"), dtype=np.uint8)


def rows_for(formula: str, index: int, variation: PrintVariation) -> list[tuple[str, np.ndarray]]:
    """(label, uint8 gray image) per row: stored, 4 and 2 levels, DRAWS degradations of the 4-level copy."""
    import torch

    from train.degrade import DegradeConfig, degrade_batch

    shard = stored(formula, index, variation)
    four, two = (quantized(shard, n) for n in (4, 2))
    ink = torch.from_numpy(255 - four).float().div(255.0)[None, None].repeat(DRAWS, 1, 1, 1)
    out = degrade_batch(ink, DegradeConfig(prob=1.0), torch.Generator().manual_seed(index))
    drawn = [np.rint((1.0 - out[i, 0].numpy()) * 255.0).astype(np.uint8) for i in range(DRAWS)]
    return ([("stored", shard), ("4 levels", four), ("2 levels", two)]
            + [(f"4, degraded {i + 1}", d) for i, d in enumerate(drawn)])


def compose(groups: list[list[tuple[str, np.ndarray]]], title: str):
    """One picture: per formula, a row per version: label | image (a framed 64x512 canvas)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=15)
    pad, label_w = 6, 120
    h, w = CANVAS
    height = 36 + sum(len(g) * (h + pad) + 2 * pad for g in groups)
    canvas = Image.new("RGB", (label_w + w + 3 * pad, height), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((pad, 8), title, fill="black", font=font)
    y = 32
    for group in groups:
        draw.line((0, y, canvas.width, y), fill=(200, 200, 200))
        y += pad
        for label, image in group:
            draw.text((pad, y + h // 2 - 8), label, fill="black", font=font)
            canvas.paste(Image.fromarray(image).convert("RGB"), (label_w + pad, y))
            draw.rectangle((label_w + pad - 1, y - 1, label_w + pad + w, y + h), outline=(220, 220, 220))
            y += h + pad
        y += pad
    return canvas


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--formula", action="append", default=None,
                    help="a formula to typeset (repeatable; default: three textbook formulas)")
    args = ap.parse_args(argv)
    # every drawn effect on, so the stored row shows what one image of the set can carry
    variation = PrintVariation(p_blur=1.0, p_noise=1.0, p_jpeg=1.0, seed=7)
    try:
        check_tex()
        groups = [rows_for(f, i, variation) for i, f in enumerate(args.formula or FORMULAS[:3])]
    except (TexUnavailable, SynthError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    compose(groups, "stored (blur, noise, JPEG), quantized to 4 and 2 gray levels, 4 levels degraded on the fly"
            ).save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
