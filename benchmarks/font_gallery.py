"""A picture of the printed reader at work: a few formulas typeset by TeX in every font it knows (the
three it trained on and the two kept out, `datasets_prep.synth.tex.BASE_FONTS`; any of `FONTS` on
request), each beside what the
reader returned, typeset back in Computer Modern, and whether it is the formula (the same canonical
spelling, or the same picture once both are typeset in Computer Modern).

Why: "reads 76 BLEU-4" says little to someone deciding whether to paste a formula in; a glance at what
comes back, font by font, says more. The formulas are textbook ones written here (no corpus formula
and no image derived from one ends up in the docs); every reading is the model's own, unpicked.

    python benchmarks/font_gallery.py --out docs/img/printed-fonts.png            # the shipped print-ens
    python benchmarks/font_gallery.py --ckpt print-ar --fonts cm,euler --out gallery.png
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datasets_prep.synth.errors import SynthError  # noqa: E402
from datasets_prep.synth.tex import BASE_FONTS, FONTS, TexUnavailable, check_fonts, check_tex, render_tex  # noqa: E402
from tokenizer.markup_metrics import same_ink  # noqa: E402
from train.eval import canonical  # noqa: E402

FORMULAS = (r"x = \frac{-b \pm \sqrt{b^{2} - 4ac}}{2a}",
            r"\int_{-\infty}^{\infty} e^{-x^{2}} \, dx = \sqrt{\pi}",
            r"\zeta(s) = \sum_{n=1}^{\infty} \frac{1}{n^{s}} = \prod_{p} \frac{1}{1 - p^{-s}}",
            r"\nabla \times \mathbf{B} = \mu_{0} \mathbf{J} + \mu_{0} \epsilon_{0} \frac{\partial \mathbf{E}}{\partial t}")
"""Textbook formulas (the quadratic formula, the Gaussian integral, Euler's product, Ampere-Maxwell)."""


@dataclass(frozen=True)
class Reading:
    font: str
    typeset: np.ndarray          # the input, uint8 gray
    latex: str                   # what the reader returned
    redrawn: np.ndarray | None   # that LaTeX typeset in Computer Modern (None: TeX refused it)
    same: bool                   # the same canonical spelling, or the same Computer Modern picture


def same_spelling(a: str, b: str) -> bool:
    """Equal once both are in their canonical spelling (`train.eval.canonical`: spacing commands and
    redundant braces aside). Why beside the pictures: TeX places each glyph on whole pixels, so a thin
    space can move what follows by a pixel column and two readings of one picture differ in pixels."""
    return canonical(a) == canonical(b)


def read_fonts(formula: str, fonts: Sequence[str], ckpt: str | None) -> list[Reading]:
    """The formula in each font, read by `ckpt` (None: the shipped printed default)."""
    from train.api import read

    reference = render_tex(formula, font="cm")
    out = []
    for font in fonts:
        typeset = render_tex(formula, font=font)
        latex = read(typeset, ckpt, printed=True).latex
        try:
            redrawn = render_tex(latex, font="cm")
        except SynthError:
            redrawn = None
        same = same_spelling(formula, latex) or (redrawn is not None and same_ink(reference, redrawn))
        out.append(Reading(font, typeset, latex, redrawn, same))
    return out


def compose(rows: list[list[Reading]], title: str) -> Image.Image:
    """One picture: per formula, a row per font: font | input | read back | same or not."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=15)
    pad, label_w, mark_w = 8, 90, 70
    in_w = max(r.typeset.shape[1] for g in rows for r in g)
    out_w = max((r.redrawn.shape[1] if r.redrawn is not None else 200) for g in rows for r in g)
    heights = [max(r.typeset.shape[0], r.redrawn.shape[0] if r.redrawn is not None else 20) + pad for g in rows for r in g]
    width = label_w + in_w + out_w + mark_w + 4 * pad
    height = 40 + sum(heights) + len(rows) * 2 * pad
    canvas = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((pad, 8), title, fill="black", font=font)
    draw.text((label_w + pad, 24), "typeset by TeX in", fill="gray", font=font)
    draw.text((label_w + in_w + 3 * pad, 24), "what the reader returned, typeset back", fill="gray", font=font)
    y, k = 44, 0
    for group in rows:
        draw.line((0, y, width, y), fill=(200, 200, 200))
        y += pad
        for r in group:
            h = heights[k]
            k += 1
            draw.text((pad, y + h // 2 - 8), r.font, fill="black", font=font)
            canvas.paste(Image.fromarray(r.typeset).convert("RGB"), (label_w + pad, y))
            x_out = label_w + in_w + 3 * pad
            if r.redrawn is not None:
                canvas.paste(Image.fromarray(r.redrawn).convert("RGB"), (x_out, y))
            else:
                draw.text((x_out, y), "(TeX refuses it)", fill="red", font=font)
            mark, color = ("same", (0, 130, 0)) if r.same else ("differs", (200, 0, 0))
            draw.text((x_out + out_w + pad, y + h // 2 - 8), mark, fill=color, font=font)
            y += h
        y += pad
    return canvas


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", default=None, help="a checkpoint or shipped name (default: the shipped printed default)")
    ap.add_argument("--fonts", default=",".join(BASE_FONTS),
                    help=f"comma-separated TeX fonts (default {','.join(BASE_FONTS)}; any of {','.join(FONTS)})")
    ap.add_argument("--formula", action="append", default=None,
                    help="a formula to typeset (repeatable; default: four textbook formulas)")
    ap.add_argument("--out", required=True, help="the PNG to write")
    args = ap.parse_args(argv)
    fonts = [f for f in args.fonts.split(",") if f]
    unknown = [f for f in fonts if f not in FONTS]
    if unknown or not fonts:
        print(f"error: unknown TeX font(s) {', '.join(unknown) or '(none given)'} (choose from {', '.join(FONTS)})",
              file=sys.stderr)
        return 2
    from model import CheckpointError
    try:
        check_tex()
        check_fonts(fonts)  # the Debian package a font needs, before anything is drawn
        rows = [read_fonts(f, fonts, args.ckpt) for f in (args.formula or FORMULAS)]
    except (TexUnavailable, SynthError, ValueError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    same = sum(r.same for g in rows for r in g)
    total = sum(len(g) for g in rows)
    name = args.ckpt or "the shipped printed reader"
    compose(rows, f"{name}: {same} of {total} readings typeset back the same").save(args.out)
    for g in rows:
        for r in g:
            print(f"{r.font:9s} {'same   ' if r.same else 'differs'} {r.latex}")
    print(f"{same} of {total} the same; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
