"""Recognize handwritten expressions: PNG/JPEG/... images or InkML files in, LaTeX out.

    python -m train.predict --ckpt runs/demo/ckpt.pt page1.png formula.inkml

InkML is rendered as the shards are (datasets_prep.render); images go through
datasets_prep.image_intake (safe decode with a pixel limit, transparency composited on white, ink
polarity detected, background divided out, optional --binarize for photos, cropped to the ink and
fitted like a rendered ink). Prints `path<TAB>latex` per file, and `<TAB>reference` when the file
carries one (an InkML truth/normalizedLabel). A file that cannot be used (unreadable, too large,
truncated, blank) is reported on stderr with its reason and the others still go through.

Exit status: 0 every file recognized; 1 at least one file could not be used, or the checkpoint
could not be loaded; 2 bad command line.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from datasets_prep.canvas import draw_ink, fit_image_noted
from datasets_prep.image_intake import ImageError
from datasets_prep.local_files import MAX_BYTES, FileRefused, read_capped
from datasets_prep.readers import InkError, read_inkml
from datasets_prep.sources import target_label
from datasets_prep.render_spec import RenderSpec
from model import CheckpointError, DecodeSpec, load


def load_input(path: Path, render: RenderSpec, binarize: bool = False) -> tuple[torch.Tensor, str | None]:
    """One file -> (tensor [1, H, W] with ink = 1, reference LaTeX or None). ValueError names the cause.

    `render` is the checkpoint's RenderSpec, so an InkML file is drawn and an image fitted exactly as
    the training shards were. The file passes the converter's checks first: a regular file (no FIFO,
    no device) of at most its byte cap."""
    try:
        data = read_capped(path, MAX_BYTES)
    except FileRefused as exc:
        raise ValueError(str(exc)) from None
    if path.suffix.lower() == ".inkml":
        try:
            ink = read_inkml(data, str(path))
        except InkError as exc:
            raise ValueError(str(exc)) from None
        if ink.num_points == 0:
            raise ValueError("the ink has no points (an empty canvas)")
        reference = None
        for src in ("mathwriting", "crohme"):
            try:
                reference = target_label(ink, src, str(path))[0]
                break
            except (InkError, ValueError):
                continue
        return torch.from_numpy(draw_ink(render, ink))[None], reference
    try:
        image, notes = fit_image_noted(render, data, binarize)
        for note in notes:
            print(f"{path}: note: {note}", file=sys.stderr)
        return torch.from_numpy(image)[None], None
    except ImageError as exc:
        raise ValueError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m train.predict", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="image files (PNG, JPEG, ...) or InkML files")
    ap.add_argument("--ckpt", required=True, help="checkpoint written by train.run (loaded without running code)")
    ap.add_argument("--sampler", default=None, choices=["remask", "remask-keep", "mask-predict", "greedy", "beam"],
                    help="decoder (default: remask for GryphOne, greedy for the AR baseline)")
    ap.add_argument("--T", type=_at_least_one, default=10, help="diffusion steps (default: %(default)s)")
    ap.add_argument("--beam", type=_at_least_one, default=1, help="AR beam width with --sampler beam (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random re-mask sampler (default: %(default)s)")
    ap.add_argument("--binarize", action="store_true", help="threshold images (photos, noisy scans) before fitting")
    ap.add_argument("--no-repair", action="store_true", help="print the raw argmax even when it does not parse")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"],
                    help="cpu or cuda (default: %(default)s)")
    return ap


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    try:
        loaded = load(args.ckpt, args.device)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    rec = loaded.recognizer
    sampler = args.sampler or rec.default_sampler
    if sampler not in rec.samplers:
        ap.error(f"--sampler {sampler}: a {rec.kind} checkpoint decodes with {', '.join(rec.samplers)}")
    spec = DecodeSpec(sampler, T=args.T, beam=args.beam if sampler == "beam" else 1, seed=args.seed,
                      valid=not args.no_repair)
    failed = 0
    for path in args.files:
        try:
            image, reference = load_input(path, loaded.render, args.binarize)
        except (ValueError, OSError) as exc:
            print(f"{path}: skipped: {exc}", file=sys.stderr)
            failed += 1
            continue
        latex = rec.recognize(image[None], spec)[0]
        print(f"{path}\t{latex}" + (f"\t{reference}" if reference is not None else ""), flush=True)
    if failed:
        print(f"{failed} of {len(args.files)} files could not be recognized", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
