"""Write a printed-formula image set from a LaTeX corpus, in the `folder` source's layout.

`<out>/<split>/labels.tsv` (`name<TAB>latex`, one line per image) beside `<out>/<split>/<name>.png`,
so `python -m datasets_prep.images --src folder --input <out>` reads it back into shards (the split is
the folder's name). Images come from the layout engine (`renderer="layout"`, printed.py) or from TeX
(`renderer="tex"`, tex.py). Label i of the corpus becomes image `<i:07d>.png` (0-based, in corpus
order), so a run is deterministic and a name says which label it drew. A label that cannot be drawn
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

from tokenizer.files import atomic_write

from ..names import plain_name
from ..render import png_bytes
from ..sources.im2latex import im2latex_label
from .errors import SynthError
from .print_variation import PrintVariation
from .printed import PrintStyle, render_print

RENDERERS = ("layout", "tex")
LABELS = "labels.tsv"
SUMMARY = "print_summary.json"
_OURS = re.compile(r"\d{7}\.png")


def image_name(index: int) -> str:
    return f"{index:07d}"


def write_printed(labels: Sequence[str], out: str | Path, *, split: str = "train", renderer: str = "layout",
                  style: PrintStyle = PrintStyle(), dpi: int | None = None, progress: bool = False,
                  variation: PrintVariation | None = None) -> dict:
    """Render every label to out/<split>/; returns the summary (written, skipped list, reasons, the
    time and formulas/s, the variation's ranges). With `variation`, each image draws its own size,
    stroke weight, skew, blur, noise and JPEG quality from (variation.seed, its index); the TeX
    renderer takes the degradations but keeps its own size and weight.
    Raises ValueError on a bad split or renderer, tex.TexUnavailable without TeX."""
    if renderer not in RENDERERS:
        raise ValueError(f"unknown renderer {renderer!r} (choose from {', '.join(RENDERERS)})")
    plain_name(split)
    if renderer == "tex":
        from .tex import DEFAULT_DPI, check_tex, render_tex
        check_tex()
        draw = lambda latex, st: render_tex(latex, dpi=dpi or DEFAULT_DPI, margin=int(style.margin))  # noqa: E731
    else:
        draw = lambda latex, st: render_print(latex, st)  # noqa: E731
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
    rows, skipped, reasons, nbytes = [], [], Counter(), 0
    t0, c0 = time.perf_counter(), time.process_time()
    for i, raw in enumerate(labels):
        latex = im2latex_label(raw)[0]
        try:
            if not latex:
                raise SynthError(raw, "empty label")
            if variation is None:
                image = draw(latex, style)
            else:
                rng = variation.rng(i)
                image = variation.degrade(draw(latex, variation.style(style, rng)), rng)
            data = png_bytes(image, level=6)
        except SynthError as e:
            skipped.append({"index": i, "label": raw, "reason": e.reason})
            reasons[re.sub(r" \(at token \d+\)$", "", e.reason)] += 1
        else:
            name = image_name(i)
            atomic_write(folder / f"{name}.png", data)
            rows.append(f"{name}\t{latex}\n")
            nbytes += len(data)
        if bar is not None:
            bar.update(1)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if bar is not None:
        bar.close()
    atomic_write(folder / LABELS, "".join(rows))
    summary = {"written": len(rows), "skipped": skipped, "reasons": dict(reasons.most_common()), "out": str(folder),
               "split": split, "renderer": renderer, "bytes": nbytes, "seconds": round(seconds, 3),
               "formulas_per_s": round(len(labels) / seconds, 1) if seconds > 0 else None,
               "cpu_seconds": round(cpu, 3),
               "variation": None if variation is None else variation.summary()}  # this process only (TeX runs in children); steadier on a busy machine
    atomic_write(folder / SUMMARY, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    return summary


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
                                progress=not args.quiet, variation=variation)
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
              f"renderer {args.renderer}{', varied' if args.vary else ''})")
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
