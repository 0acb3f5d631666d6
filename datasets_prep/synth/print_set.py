"""Write a printed-formula image set from a LaTeX corpus, in the `folder` source's layout.

`<out>/<split>/labels.tsv` (`name<TAB>latex`, one line per image) beside `<out>/<split>/<name>.png`,
so `python -m datasets_prep.images --src folder --input <out>` reads it back into shards (the split is
the folder's name). Images come from the layout engine (`renderer="layout"`, printed.py) or from TeX
(`renderer="tex"`, tex.py; in one math font or, with several `fonts`, in the font drawn for each
image from (seed, its index): `font_of`). Label i of the corpus becomes image `<i:07d>.png` (0-based,
in corpus order), so a run is deterministic and a name says which label it drew. A label that cannot be drawn
is skipped, counted by reason and listed in `<split>/print_summary.json` (JSON, not JSONL: the
folder source reads `*.jsonl` as label files); the run goes on.
The label written is the corpus label with whitespace collapsed (im2markup's normalized spacing is
kept as it is: it is the target such datasets are scored on), with one repair: a lone trailing `\\`
after a space (a control space whose space was stripped) is dropped, as `--src im2latex` does.
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tokenizer.files import atomic_write

from ..names import plain_name
from ..render import png_bytes
from ..sources.im2latex import im2latex_label
from .errors import SynthError
from .print_variation import PrintVariation
from .printed import PrintStyle, render_print

RENDERERS = ("layout", "tex", "auto")
CHUNK = 256
"""Labels drawn per TeX batch (and held in memory at once)."""
LABELS = "labels.tsv"
SUMMARY = "print_summary.json"
_OURS = re.compile(r"\d{7}\.png")


def image_name(index: int) -> str:
    return f"{index:07d}"


def font_of(index: int, fonts: Sequence[str], seed: int = 0) -> str:
    """The TeX font image `index` is drawn in: one of `fonts`, uniformly, from (seed, index) alone (its
    own stream, so adding fonts changes no other draw of the variation)."""
    if len(fonts) == 1:
        return fonts[0]
    return fonts[int(np.random.default_rng([seed, index, 0x66]).integers(len(fonts)))]


def write_printed(labels: Sequence[str], out: str | Path, *, split: str = "train", renderer: str = "layout",
                  style: PrintStyle = PrintStyle(), dpi: int | None = None, progress: bool = False,
                  variation: PrintVariation | None = None, fonts: Sequence[str] = ("cm",)) -> dict:
    """Render every label to out/<split>/; returns the summary (written, skipped list, reasons, the
    time and formulas/s, how many images each renderer drew, the variation's ranges).

    renderer: "layout" (the project's engine), "tex" (latex + dvipng, TexUnavailable without them) or
    "auto" (TeX where it is installed, the engine for a formula TeX refuses and for every formula
    when TeX is absent; `layout_fallback` in the summary lists the indices the engine drew). With
    `variation`, each image draws its own size, stroke weight, skew, blur, noise and JPEG quality from
    (variation.seed, its index); a TeX image takes the size by resampling and keeps TeX's weight.
    fonts: the TeX math fonts (tex.FONTS) images are drawn in, one per image (`font_of`, seeded by
    variation.seed); the engine has its own one. Raises ValueError on a bad split, renderer or font, and
    TexUnavailable when TeX draws and lacks a font's files (tex.FONT_PACKAGES)."""
    if renderer not in RENDERERS:
        raise ValueError(f"unknown renderer {renderer!r} (choose from {', '.join(RENDERERS)})")
    from .tex import preamble
    fonts = tuple(fonts)
    if not fonts:
        raise ValueError("fonts: name at least one TeX font")
    for font in fonts:
        preamble(font)  # ValueError naming a font TeX has no preamble for
    seed = variation.seed if variation is not None else 0
    plain_name(split)
    use_tex = _tex_wanted(renderer)
    if use_tex:
        from .tex import check_fonts
        check_fonts(fonts)  # TexUnavailable naming the package a font needs
    folder = Path(out) / split
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / LABELS).is_file():  # a previous run's images would otherwise linger unlabelled
        for p in folder.iterdir():
            if _OURS.fullmatch(p.name):
                p.unlink()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(labels), unit="formula", desc=f"print {renderer} -> {folder}")
    rows, skipped, reasons, drawn_by, fallback, nbytes = [], [], Counter(), Counter(), [], 0
    tex_fonts: Counter = Counter()
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, len(labels), CHUNK):
        latexes = [im2latex_label(raw)[0] for raw in labels[start:start + CHUNK]]
        chunk_fonts = [font_of(start + k, fonts, seed) for k in range(len(latexes))]
        tex = _tex_images(latexes, chunk_fonts, dpi, style) if use_tex else [None] * len(latexes)
        for k, (latex, typeset) in enumerate(zip(latexes, tex)):
            i = start + k
            try:
                image, by = _one_image(latex, labels[i], i, typeset, renderer, style, variation)
                data = png_bytes(image, level=6)
            except SynthError as e:
                skipped.append({"index": i, "label": labels[i], "reason": e.reason})
                reasons[re.sub(r" \(at token \d+\)$", "", e.reason)] += 1
            else:
                name = image_name(i)
                atomic_write(folder / f"{name}.png", data)
                rows.append(f"{name}\t{latex}\n")
                nbytes += len(data)
                drawn_by[by] += 1
                if by == "tex":
                    tex_fonts[chunk_fonts[k]] += 1
                if by == "layout" and use_tex:
                    fallback.append(i)
            if bar is not None:
                bar.update(1)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if bar is not None:
        bar.close()
    atomic_write(folder / LABELS, "".join(rows))
    summary = {"written": len(rows), "skipped": skipped, "reasons": dict(reasons.most_common()), "out": str(folder),
               "split": split, "renderer": renderer, "drawn_by": dict(drawn_by),
               "tex_fonts": dict(sorted(tex_fonts.items())), "layout_fallback": fallback,
               "tex_available": use_tex, "bytes": nbytes, "seconds": round(seconds, 3),
               "formulas_per_s": round(len(labels) / seconds, 1) if seconds > 0 else None,
               "cpu_seconds": round(cpu, 3),  # this process only (TeX runs in children); steadier on a busy machine
               "variation": None if variation is None else variation.summary()}
    atomic_write(folder / SUMMARY, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    return summary


def _tex_wanted(renderer: str) -> bool:
    """Whether TeX draws (checking it is there: "tex" without it raises TexUnavailable)."""
    if renderer == "layout":
        return False
    from .tex import TexUnavailable, check_tex
    try:
        check_tex()
    except TexUnavailable:
        if renderer == "tex":
            raise
        return False
    return True


def _tex_images(latexes: list[str], fonts: list[str], dpi: int | None, style: PrintStyle) -> list:
    """TeX's image (or refusal) of each formula in its font: one batch per font."""
    from .tex import DEFAULT_DPI, render_tex_batch
    out: list = [None] * len(latexes)
    for font in dict.fromkeys(fonts):
        idx = [i for i, f in enumerate(fonts) if f == font]
        for i, image in zip(idx, render_tex_batch([latexes[i] for i in idx], dpi=dpi or DEFAULT_DPI,
                                                  margin=int(style.margin), font=font)):
            out[i] = image
    return out


def _one_image(latex: str, raw: str, index: int, typeset, renderer: str, style: PrintStyle,
               variation: PrintVariation | None) -> tuple[np.ndarray, str]:
    """The image of one label and which renderer drew it; SynthError when none can."""
    if not latex:
        raise SynthError(raw, "empty label")
    rng = variation.rng(index) if variation is not None else None
    drawn = variation.style(style, rng) if variation is not None else style
    if isinstance(typeset, np.ndarray):
        image, by = typeset, "tex"
        if drawn.px_per_em != style.px_per_em:
            image = resample(image, drawn.px_per_em / style.px_per_em)
    elif isinstance(typeset, SynthError) and renderer == "tex":
        raise typeset
    else:
        image, by = render_print(latex, drawn), "layout"
    if variation is not None:
        image = variation.degrade(image, rng)
    return image, by


def resample(image: np.ndarray, scale: float) -> np.ndarray:
    """A gray image scaled by `scale` (bilinear; at least one pixel each way)."""
    from PIL import Image
    h, w = image.shape
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(image, mode="L").resize(size, Image.BILINEAR), dtype=np.uint8)


def run_cli(args) -> int:
    """`python -m datasets_prep.synth --style print ...` (options parsed by synth/__main__.py).

    Exit status: 0 every label drawn, 1 some skipped (listed), 2 usage error or TeX not installed."""
    import sys

    from .labels import read_label_file
    from .tex import TexUnavailable

    if args.labels is None:
        print("error: --style print draws a corpus: give --labels FILE (one formula a line, or name<TAB>latex)",
              file=sys.stderr)
        return 2
    if args.dpi is not None and args.dpi < 10:
        print("error: --dpi must be >= 10", file=sys.stderr)
        return 2
    try:
        labels = [lab for _, lab in read_label_file(args.labels)]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not labels:
        print(f"error: {args.labels}: no labels in the file", file=sys.stderr)
        return 2
    if args.count is not None and args.count > 0:
        labels = labels[:args.count]  # the first N (a printed formula drawn twice is the same image)
    try:
        variation = PrintVariation(seed=args.seed) if args.vary else None
        summary = write_printed(labels, args.out, split=args.split or "train", renderer=args.renderer, dpi=args.dpi,
                                progress=not args.quiet, variation=variation, fonts=args.fonts.split(","))
    except TexUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**summary, "skipped": summary["skipped"][:100]}, indent=1, ensure_ascii=False))
    else:
        print(f"wrote {summary['written']} printed formulas ({summary['bytes'] / 1e6:.2f} MB) to {summary['out']} "
              f"in {summary['seconds']:.1f} s ({summary['formulas_per_s']} formulas/s, "
              f"{summary['cpu_seconds']:.1f} s CPU, "
              f"renderer {args.renderer}{', varied' if args.vary else ''}; drawn by "
              f"{', '.join(f'{k} {v}' for k, v in summary['drawn_by'].items()) or 'none'}"
              + (f"; TeX fonts {', '.join(f'{k} {v}' for k, v in summary['tex_fonts'].items())}"
                 if len(summary["tex_fonts"]) > 1 else "") + ")")
    if summary["skipped"]:
        n = len(summary["skipped"])
        print(f"skipped {n} of {len(labels)} formula(s) that cannot be drawn (listed in "
              f"{Path(summary['out']) / SUMMARY}); by reason:", file=sys.stderr)
        for reason, k in list(summary["reasons"].items())[:10]:
            print(f"  {k:6d}  {reason}", file=sys.stderr)
        if len(summary["reasons"]) > 10:
            print(f"  ... {len(summary['reasons']) - 10} more reasons", file=sys.stderr)
        return 1
    return 0
