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

import numpy as np
import torch

from .checkpoint import CheckpointError
from .inference import DecoderSpec, load_model, recognize


def load_input(path: Path, size: tuple[int, int], binarize: bool = False,
               render: dict | None = None) -> tuple[torch.Tensor, str | None]:
    """One file -> (tensor [1, H, W] with ink = 1, reference LaTeX or None). ValueError names the cause.

    render: the shards' render settings (stroke_width, margin, antialias, max_glyph) saved in the checkpoint, so
    an InkML file is drawn exactly as the training images were; the converter's defaults otherwise."""
    from datasets_prep.image_intake import ImageError, decode_noted, fit_to_canvas, ink_darkness, to_gray_on_white
    from datasets_prep.local_files import MAX_BYTES, FileRefused, read_capped

    try:  # the converter's checks: a regular file (no FIFO, no device) of at most its byte cap
        data = read_capped(path, MAX_BYTES)
    except FileRefused as exc:
        raise ValueError(str(exc)) from None
    if path.suffix.lower() == ".inkml":
        from datasets_prep.readers import InkError, read_inkml, target_label
        from datasets_prep.render import render_ink

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
        style = {k: render[k] for k in ("stroke_width", "margin", "antialias", "max_glyph") if k in render} \
            if render else {}
        arr = (255 - render_ink(ink, size=size, **style)).astype("float32") / 255.0
        return torch.from_numpy(arr)[None], reference
    try:
        margin = {"margin": render["margin"]} if render and "margin" in render else {}
        binarize = binarize or bool(render and render.get("binarize"))  # as the image shards were made
        image, notes = decode_noted(data)
        for note in notes:
            print(f"{path}: note: {note}", file=sys.stderr)
        canvas = fit_to_canvas(ink_darkness(to_gray_on_white(image), binarize), size, **margin)
        # the shards store 8-bit PNG: quantize the same way, so the model sees the same values
        return torch.from_numpy((np.rint(canvas * 255.0) / 255.0).astype("float32"))[None], None
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
    ap.add_argument("--T", type=int, default=10, help="diffusion steps (default: %(default)s)")
    ap.add_argument("--beam", type=int, default=1, help="AR beam width with --sampler beam (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random re-mask sampler (default: %(default)s)")
    ap.add_argument("--binarize", action="store_true", help="threshold images (photos, noisy scans) before fitting")
    ap.add_argument("--no-repair", action="store_true", help="print the raw argmax even when it does not parse")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="cpu or cuda (default: %(default)s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        model, vocab, mcfg, state = load_model(args.ckpt, args.device)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sampler = args.sampler or ("greedy" if mcfg.kind == "ar" else "remask")
    spec = DecoderSpec(sampler, T=args.T, beam=args.beam if sampler == "beam" else 1, seed=args.seed,
                       valid=not args.no_repair)
    failed = 0
    for path in args.files:
        try:
            image, reference = load_input(path, mcfg.image_size, args.binarize, state.get("render"))
        except (ValueError, OSError) as exc:
            print(f"{path}: skipped: {exc}", file=sys.stderr)
            failed += 1
            continue
        latex = recognize(model, vocab, image[None], spec)[0]
        print(f"{path}\t{latex}" + (f"\t{reference}" if reference is not None else ""), flush=True)
    if failed:
        print(f"{failed} of {len(args.files)} files could not be recognized", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
