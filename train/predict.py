"""Recognize handwritten expressions: images, InkML files, folders, archives or shard folders in, LaTeX out.

    python -m train.predict --ckpt runs/demo/ckpt.pt page1.png formula.inkml
    python -m train.predict --ckpt runs/demo/onnx inks/ scans.zip shards/test-set --jsonl out.jsonl --batch-size 32

--ckpt takes a checkpoint, a folder written by train.export_onnx, or the name of a model gryphone
ships (model/weights/); without --ckpt the shipped default reads, with the decoder its validation
chose (model/weights/MODEL_CARD.md). A PATH is an image (PNG, JPEG,
...) or InkML file, a folder (recursively: its images and .inkml files), an archive (.zip, .tar.gz,
... read member by member, never extracted) or a shard folder (one with dataset_dict.json, or one of its split folders: every
row, named by its sample_id). InkML is rendered as the shards are (datasets_prep.render); images go
through datasets_prep.image_intake (safe decode with a pixel limit, transparency composited on
white, ink polarity detected, background divided out, optional --binarize for photos, cropped to
the ink and fitted like a rendered ink). Inputs are decoded --batch-size at a time.

Without --jsonl: prints `path<TAB>latex<TAB>confidence` per input, and `<TAB>reference` when the input
carries one (an InkML truth/normalizedLabel, a shard row's label; shard rows are named `split/sample_id`); an input that cannot be used (unreadable,
too large, truncated, blank) is reported on stderr with its reason and the others still go through.
With --jsonl FILE: one JSON line per input, {"input", "latex", "confidence", "reference"} or
{"input", "refused": reason}; a progress bar on stderr. Both end with the throughput on stderr.

Exit status: 0 every input recognized; 1 at least one input could not be used, no input was found,
or the checkpoint could not be loaded; 2 bad command line.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from model import CheckpointError, DecodeSpec, load
from model.shipped import help_line
from train.serve.intake import MAX_T

from .compiled import add_compile_arg, compile_if_asked
from .threads import add_threads_arg, apply_threads, positive_int
from .predict_inputs import Input, count_inputs, iter_inputs, load_input

__all__ = ["build_parser", "load_input", "main", "recognize_all"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m train.predict", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, metavar="PATH",
                    help="image or InkML files, folders, archives (.zip, .tar.gz, ...) or shard folders")
    ap.add_argument("--ckpt", default=None,
                    help="checkpoint written by train.run (loaded without running code), a train.export_onnx folder, "
                         f"or a shipped model's name ({help_line('read')})")
    ap.add_argument("--printed", action="store_true",
                    help=f"the inputs are printed formulas: without --ckpt, the shipped printed model "
                         f"({help_line('printed')})")
    ap.add_argument("--sampler", default=None, choices=["remask", "remask-keep", "mask-predict", "greedy", "beam"],
                    help="decoder (default: the shipped model's own; else remask for GryphOne, greedy for the others)")
    ap.add_argument("--T", type=_steps, default=None,
                    help=f"diffusion steps, 1..{MAX_T} (default: the shipped model's own, else 10)")
    ap.add_argument("--beam", type=positive_int, default=None,
                    help="AR beam width with --sampler beam (default: the shipped model's own, else 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random re-mask sampler (default: %(default)s)")
    ap.add_argument("--binarize", action="store_true", help="threshold images (photos, noisy scans) before fitting")
    ap.add_argument("--no-repair", action="store_true", help="print the raw argmax even when it does not parse")
    ap.add_argument("--jsonl", type=Path, default=None, help="write one JSON line per input to this file")
    ap.add_argument("--batch-size", type=positive_int, default=16, help="images decoded together (default: %(default)s)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"],
                    help="cpu or cuda (default: %(default)s)")
    add_compile_arg(ap)
    add_threads_arg(ap)
    return ap


def _steps(text: str) -> int:
    value = positive_int(text)
    if value > MAX_T:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_T} (as on the page), got {value}")
    return value


def recognize_all(rec, inputs, spec: DecodeSpec, batch_size: int, emit) -> tuple[int, int, float]:
    """Decode `inputs` batch by batch and call emit(input, latex, confidence) for each, in input order
    (latex None for a refused input). Returns (recognized, refused, seconds spent decoding)."""
    pending: list[Input] = []
    done = refused = 0
    decode_s = 0.0

    def flush() -> None:
        nonlocal done, refused, decode_s
        ready = [it for it in pending if it.image is not None]
        texts, confidences = [], []
        if ready:
            t0 = time.perf_counter()
            texts = rec.recognize(torch.stack([it.image for it in ready]), spec, confidences=confidences)
            decode_s += time.perf_counter() - t0
        results = iter(zip(texts, confidences))
        for it in pending:
            latex, conf = next(results) if it.image is not None else (None, None)
            emit(it, latex, conf)
        done += len(ready)
        refused += len(pending) - len(ready)
        pending.clear()

    for it in inputs:  # a batch is batch_size inputs, refused ones included: 100,000 unreadable members
        pending.append(it)  # are reported as they come, in linear time, not held until an image arrives
        if len(pending) >= batch_size:
            flush()
    flush()
    return done, refused, decode_s


def _emitter(jsonl, bar):
    """emit(input, latex, confidence): a JSON line, or today's tab-separated line (refusals on stderr)."""
    def emit(it: Input, latex: str | None, conf: float | None) -> None:
        bar.update(1)
        if jsonl is not None:
            row = {"input": it.name, "refused": it.error} if latex is None else {
                "input": it.name, "latex": latex, "confidence": None if conf is None else round(conf, 5),
                **({"reference": it.reference} if it.reference is not None else {})}
            jsonl.write(json.dumps(row, ensure_ascii=False) + "\n")
            jsonl.flush()  # a killed run keeps every line written so far
        elif latex is None:
            bar.write(f"{it.name}: skipped: {it.error}", file=sys.stderr)
        else:
            shown = "" if conf is None else f"{conf:.4f}"
            print(f"{it.name}\t{latex}\t{shown}" + (f"\t{it.reference}" if it.reference is not None else ""),
                  flush=True)
    return emit


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    apply_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    if args.jsonl is not None and (args.jsonl.is_dir() or not args.jsonl.parent.resolve().is_dir()):
        ap.error(f"--jsonl {args.jsonl}: must be a file in an existing folder")
    try:
        loaded = load(args.ckpt, args.device, use="printed" if args.printed else "read")
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    rec, ship = loaded.recognizer, loaded.shipped
    compile_if_asked(ap, args, rec)
    sampler = args.sampler or (ship.sampler if ship else rec.default_sampler)
    if sampler not in rec.samplers:
        ap.error(f"--sampler {sampler}: a {rec.kind} model decodes with {', '.join(rec.samplers)}")
    beam = (args.beam or (ship.beam if ship else rec.default_beam)) if sampler == "beam" else 1
    spec = DecodeSpec(sampler, T=args.T or (ship.T if ship else 10), beam=beam, seed=args.seed,
                      valid=not args.no_repair)
    if ship is not None:
        print(f"reading with the shipped {ship.describe()}; decoder {spec.name}", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        jsonl = open(args.jsonl, "w", encoding="utf-8") if args.jsonl is not None else None
        with tqdm(total=count_inputs(args.files), unit="img", file=sys.stderr, disable=None if jsonl else True) as bar:
            try:
                done, refused, decode_s = recognize_all(rec, iter_inputs(args.files, loaded.render, args.binarize),
                                                        spec, args.batch_size, _emitter(jsonl, bar))
            finally:
                if jsonl is not None:
                    jsonl.close()
    except OSError as exc:  # --jsonl on a full disk (/dev/full), a closed pipe, ...
        print(f"error: cannot write {args.jsonl or 'the output'}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    print(f"recognized {done} images in {wall:.1f} s: {done / max(wall, 1e-9):.1f} images/s "
          f"({done / max(decode_s, 1e-9):.1f} images/s decoding alone, batch {args.batch_size})", file=sys.stderr)
    if refused:
        print(f"{refused} of {done + refused} inputs could not be recognized", file=sys.stderr)
    if done + refused == 0:
        print(f"error: no image or InkML file found in {', '.join(map(str, args.files))}", file=sys.stderr)
        return 1
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
