"""`python -m datasets_prep.synth`: write synthetic handwritten-math InkML files.

    python -m datasets_prep.synth --count 2000 --out synth/            # random labels, MathWriting style
    python -m datasets_prep.synth --labels my.txt --out synth/ --format crohme
    python -m datasets_prep.synth --fixtures                            # regenerate the committed fixtures/
    python -m datasets_prep.synth --bboxes mathwriting-2024/ --out synth/   # official rebuild, real glyphs
    python -m datasets_prep.synth --bank bank/ --labels corpus.txt --count 2000 --out synth/ \
        --exclude test_captions.txt                                     # real-hand glyphs from a bank
    python -m datasets_prep.synth --style print --labels corpus.txt --out printed/  # printed PNGs + labels.tsv

Exit status: 0 all labels drawn, 1 some labels skipped (listed in <out>/<split>/synth_skipped.jsonl),
2 usage or input error.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .batch import FORMATS, generate

REPO_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m datasets_prep.synth", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Exit status: 0 ok, 1 some labels skipped, 2 usage/input error.")
    p.add_argument("--count", type=int, default=None,
                   help="inks to write (default: one per label with --labels, else 100)")
    p.add_argument("--out", type=Path, default=Path("synth"), help="output folder; files go to OUT/<split>/")
    p.add_argument("--labels", type=Path, help="label file: one expression a line, or name<TAB>latex")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same files)")
    p.add_argument("--format", choices=FORMATS, default="mathwriting", help="InkML flavour to write")
    p.add_argument("--split", default=None, help="split name (default train; synthetic with --bboxes)")
    p.add_argument("--depth", type=int, default=2, help="nesting depth of random labels")
    p.add_argument("--length", type=int, default=8, help="typical visible symbols per random label")
    p.add_argument("--fixtures", action="store_true",
                   help=f"regenerate the committed embedded default set in {REPO_FIXTURES} (ignores other options)")
    p.add_argument("--bboxes", type=Path, metavar="DIR",
                   help="rebuild MathWriting synthetic inks from real glyphs: DIR holds symbols.jsonl, "
                        "synthetic-bboxes.jsonl and train/")
    p.add_argument("--bank", type=Path, metavar="DIR",
                   help="draw with real handwritten symbols from a glyph bank (python -m datasets_prep.synth.bank)")
    p.add_argument("--exclude", type=Path, nargs="+", default=[], metavar="FILE",
                   help="label files (e.g. the CROHME test captions): labels equal to one of them after "
                        "tokenizer normalization are not drawn, and are counted in the report")
    p.add_argument("--keep-excluded", action="store_true", help="draw --exclude matches anyway (still counted)")
    p.add_argument("--recombine", type=float, default=0.0, metavar="P",
                   help="with --bank and --labels: chance that an ink's label joins the head of one label "
                        "to the tail of another (default 0)")
    p.add_argument("--bank-symbols-only", action="store_true",
                   help="with --bank: draw only labels whose symbols all have bank samples")
    p.add_argument("--style", choices=("handwriting", "print"), default="handwriting",
                   help="print: render --labels as printed formulas (PNG + labels.tsv per split, the `folder` "
                        "source layout) instead of handwriting InkML")
    p.add_argument("--renderer", choices=("layout", "tex", "auto"), default="layout",
                   help="with --style print: the project's layout engine (no TeX needed), latex + dvipng, or auto "
                        "(TeX where installed, the engine for what TeX refuses; print_summary.json says which drew each)")
    p.add_argument("--vary", action="store_true",
                   help="with --style print: each image its own size, stroke weight, slight skew, blur, noise and "
                        "JPEG quality, drawn from --seed and its index (ranges: datasets_prep/synth/print_variation.py; "
                        "recorded in print_summary.json)")
    p.add_argument("--dpi", type=int, default=None, help="with --renderer tex: dvipng resolution (default 160)")
    p.add_argument("--fonts", default="cm", help="with --renderer tex/auto: comma-separated TeX math fonts, one drawn "
                   "per image (cm, times, palatino, euler, sans; default: cm)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def _report(summary: dict, as_json: bool) -> int:
    skipped = summary.get("skipped", [])
    if as_json:
        print(json.dumps(summary, indent=1, ensure_ascii=False))
    else:
        where = summary.get("out", "")
        print(f"wrote {summary['written']} inks ({summary.get('bytes', 0) / 1e6:.2f} MB) to {where}")
        if skipped:
            print(f"skipped {len(skipped)} label(s) that cannot be drawn:", file=sys.stderr)
            for rec in skipped[:10]:
                print(f"  [{rec['index']}] {rec['label']!r}: {rec['reason']}", file=sys.stderr)
            if len(skipped) > 10:
                print(f"  ... {len(skipped) - 10} more in synth_skipped.jsonl", file=sys.stderr)
        for prob in summary.get("glyph_problems", [])[:10]:
            print(f"  glyph source problem: {prob['file']} (line {prob['line']}): {prob['error']}", file=sys.stderr)
    return 1 if skipped else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.fixtures:
        from .fixtures import regenerate

        if not (REPO_FIXTURES.parent / "pyproject.toml").is_file():
            print(f"error: --fixtures rewrites a source checkout's fixtures/, and {REPO_FIXTURES.parent} "
                  "is not one (installed package?)", file=sys.stderr)
            return 2

        summary = regenerate(REPO_FIXTURES)
        summary["out"] = str(REPO_FIXTURES)
        return _report(summary, args.json)
    if args.count is not None and args.count < 0:
        print("error: --count must be >= 0", file=sys.stderr)
        return 2
    if args.depth < 0 or args.length < 1:
        print("error: --depth must be >= 0 and --length >= 1", file=sys.stderr)
        return 2
    if args.vary and args.style != "print":
        print("error: --vary varies printed formulas: use it with --style print", file=sys.stderr)
        return 2
    if args.style == "print":
        from .print_set import run_cli

        return run_cli(args)
    if args.bboxes is not None:
        from .bboxes import BBoxInputError, rebuild_all

        try:
            summary = rebuild_all(args.bboxes, args.out, seed=args.seed, split=args.split or "synthetic",
                                  count=args.count, progress=not args.quiet)
        except BBoxInputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return _report(summary, args.json)
    labels = None
    if args.labels is not None:
        from .labels import read_label_file

        try:
            labels = [lab for _, lab in read_label_file(args.labels)]
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if not labels:
            print(f"error: {args.labels}: no labels in the file", file=sys.stderr)
            return 2
    count = args.count if args.count is not None else (len(labels) if labels else 100)
    if args.bank is not None or args.exclude:
        from .bank_synth import run_cli
        return run_cli(args, labels, count, _report)
    try:
        summary = generate(count, args.out, labels=labels, seed=args.seed, fmt=args.format,
                           split=args.split or "train", progress=not args.quiet, depth=args.depth,
                           length=args.length)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return _report(summary, args.json)


if __name__ == "__main__":
    sys.exit(main())
