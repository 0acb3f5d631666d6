"""Recognize handwritten expressions: PNG/JPEG images or InkML files in, LaTeX out.

    python -m train.predict --ckpt runs/demo/ckpt.pt page1.png formula.inkml

InkML is rendered exactly as the shards were (datasets_prep.render); images are converted to
grayscale, inverted if the background is light, cropped to the ink and fitted (aspect kept) into the
model's canvas. Prints `path<TAB>latex` per file; a file that cannot be read is reported on stderr
with its reason and the others still go through (exit 1 if any failed).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from .checkpoint import CheckpointError
from .inference import DecoderSpec, load_model, recognize


def fit_image(gray: np.ndarray, size: tuple[int, int], margin: int = 4) -> np.ndarray:
    """Any grayscale image (ink dark or light) -> uint8 [H, W], ink = 255 on 0, ink box fitted and centred."""
    arr = gray.astype(np.float32)
    if arr.mean() > 127:  # light background: make ink bright
        arr = 255 - arr
    arr -= arr.min()
    ink = arr > 0.25 * max(arr.max(), 1)
    h, w = size
    canvas = np.zeros((h, w), dtype=np.uint8)
    if not ink.any():
        return canvas
    ys, xs = np.nonzero(ink)
    crop = arr[ys.min(): ys.max() + 1, xs.min(): xs.max() + 1]
    scale = min((h - 2 * margin) / crop.shape[0], (w - 2 * margin) / crop.shape[1])
    nh, nw = max(1, round(crop.shape[0] * scale)), max(1, round(crop.shape[1] * scale))
    resized = Image.fromarray(np.clip(crop, 0, 255).astype(np.uint8)).resize((nw, nh), Image.Resampling.LANCZOS)
    top, left = (h - nh) // 2, (w - nw) // 2
    canvas[top: top + nh, left: left + nw] = np.asarray(resized)
    return canvas


def load_input(path: Path, size: tuple[int, int]) -> torch.Tensor:
    """One file -> tensor [1, H, W] with ink = 1. Raises ValueError naming the cause."""
    if path.suffix.lower() == ".inkml":
        from datasets_prep.readers import InkError, read_inkml
        from datasets_prep.render import render_ink

        try:
            ink = read_inkml(path.read_bytes(), str(path))
        except InkError as exc:
            raise ValueError(str(exc)) from None
        arr = 255 - render_ink(ink, size=size)
    else:
        try:
            with Image.open(path) as im:
                arr = fit_image(np.asarray(im.convert("L")), size)
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"cannot read image: {exc}") from None
    return torch.from_numpy(arr.astype(np.float32) / 255.0)[None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.predict", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="PNG/JPEG images or InkML files")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--sampler", default=None, help="remask | mask-predict (diffusion) or greedy | beam (AR)")
    ap.add_argument("--T", type=int, default=10, help="diffusion steps")
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)
    try:
        model, vocab, mcfg, _ = load_model(args.ckpt, args.device)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sampler = args.sampler or ("greedy" if mcfg.kind == "ar" else "remask")
    spec = DecoderSpec(sampler, T=args.T, beam=args.beam if sampler == "beam" else 1, seed=args.seed)
    failed = 0
    for path in args.files:
        try:
            image = load_input(path, mcfg.image_size)
        except (ValueError, FileNotFoundError) as exc:
            print(f"{path}: skipped: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{path}\t{recognize(model, vocab, image[None], spec)[0]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
