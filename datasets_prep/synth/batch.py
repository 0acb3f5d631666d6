"""Write synthetic inks as InkML files, MathWriting- or CROHME-style, deterministic for a seed.

Ink i of a run depends only on (seed, split, format, i) and its label, through its own
`numpy.random.default_rng([seed, i, ...])` streams, so a run can be repeated, extended or split across
processes with identical files. Labels that cannot be drawn are skipped, reported, and listed in
`<out>/<split>/synth_skipped.jsonl`; the run goes on.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

import numpy as np

from tokenizer.files import atomic_write

from ..names import plain_name

from .core import synthesize_batch
from .errors import SynthError
from .inkml_write import crohme_inkml, mathwriting_inkml
from .labels import random_label

FORMATS = ("mathwriting", "crohme")
_CHUNK = 64  # inks per numeric pass (see core.synthesize_batch)
_SPLIT_SALT = {"train": 0, "valid": 1, "test": 2, "synthetic": 3}


def sample_id(seed: int, split: str, fmt: str, index: int) -> str:
    """16 hex digits, like MathWriting's sample ids (and file names), stable for a run's inputs."""
    return hashlib.blake2b(f"gryphone-synth/{seed}/{split}/{fmt}/{index}".encode(), digest_size=8).hexdigest()


def write_inkml(path: Path, text: str) -> None:
    """Write one InkML file atomically (tokenizer/files.py): a kill never leaves half a file."""
    atomic_write(path, text)


def _split_salt(split: str) -> int:
    return _SPLIT_SALT.get(split, int(hashlib.blake2b(split.encode(), digest_size=4).hexdigest(), 16))


def generate(count: int, out: Path, *, labels: list[str] | None = None, seed: int = 0, fmt: str = "mathwriting",
             split: str = "train", progress: bool = False, depth: int = 2, length: int = 8) -> dict:
    """Write `count` inks to out/<split>/ and return a summary.

    labels: draw these (cycled when count exceeds them; count=0 means one ink per label); without
    them, random CROHME-symbol-set labels of the given depth and length. Summary keys: written,
    skipped (list of {index, label, reason}), out, split, format, seed, bytes.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if labels is not None and not labels:
        raise ValueError("labels is an empty list")
    if labels is not None and count <= 0:
        count = len(labels)
    if count < 0:
        raise ValueError("count must be >= 0")
    plain_name(split)
    folder = Path(out) / split
    folder.mkdir(parents=True, exist_ok=True)
    salt = _split_salt(split)
    made = "synthetic" if labels is None else None

    def chunk(idx: range) -> tuple[list[str], list]:
        if labels is not None:
            return [labels[i % len(labels)] for i in idx], [np.random.default_rng([seed, salt, i, 0]) for i in idx]
        rngs = [np.random.default_rng([seed, salt, i, 1]) for i in idx]  # one stream: the label, then the hand
        return [random_label(rng, depth=depth, length=length) for rng in rngs], rngs

    def file(i: int, latex: str, ink) -> tuple[str, str]:
        sid = sample_id(seed, split, fmt, i)
        return f"{sid}.inkml", file_text(ink, fmt, sid, split, made)

    written, nbytes, skipped = write_inks(count, folder, chunk, synthesize_batch, file,
                                          f"synth {fmt}/{split}" if progress else None)
    write_skipped(folder, skipped)
    return {"written": written, "skipped": skipped, "out": str(folder), "split": split, "format": fmt,
            "seed": seed, "bytes": nbytes}


Chunk = Callable[[range], tuple[list[str], list]]
File = Callable[[int, str, object], tuple[str, str]]


def write_inks(count: int, folder: Path, chunk: Chunk, synthesize: Callable, file: File,
               progress: str | None = None) -> tuple[int, int, list[dict]]:
    """The writer loop every ink generator shares: indices in chunks of _CHUNK; per chunk its labels
    and RNGs (`chunk`), one numeric pass (`synthesize(labels, rngs)`), then per ink its file name and
    text (`file`) or, where synthesis failed, a skipped record. Returns (written, bytes, skipped)."""
    written, nbytes, skipped = 0, 0, []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=count, unit="ink", desc=progress)
    for lo in range(0, count, _CHUNK):
        idx = range(lo, min(lo + _CHUNK, count))
        labels, rngs = chunk(idx)
        for i, latex, ink in zip(idx, labels, synthesize(labels, rngs)):
            if isinstance(ink, SynthError):
                skipped.append({"index": i, "label": latex, "reason": ink.reason})
                continue
            name, text = file(i, latex, ink)
            write_inkml(folder / name, text)
            written += 1
            nbytes += len(text)
        if bar is not None:
            bar.update(len(idx))
    if bar is not None:
        bar.close()
    return written, nbytes, skipped


def write_skipped(folder: Path, skipped: list[dict]) -> None:
    """synth_skipped.jsonl beside the inks: one line per label that could not be drawn (none: no file)."""
    path = folder / "synth_skipped.jsonl"
    if skipped:
        with path.open("w", encoding="utf-8") as f:
            for rec in skipped:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    elif path.exists():
        path.unlink()


def file_text(ink, fmt: str, sid: str, split: str, label_creation: str | None, ui_prefix: str = "synth",
              writer: str | None = None) -> str:
    """An ink's file in `fmt` (MathWriting or CROHME), from the annotations synthesis left on it."""
    ann = ink.annotations
    if fmt == "mathwriting":
        return mathwriting_inkml(ink, sample_id=sid, split=split, label=ann["normalizedLabel"],
                                 label_creation=label_creation)
    strokes = [int(v) for v in ann["strokeSymbols"].split()]
    return crohme_inkml(ink, ui=f"{ui_prefix}_{split}_{sid}", truth_spaced=ann["truth"][1:-1],
                        stroke_symbols=strokes, symbol_labels=ann["symbolLabels"].split("\t"),
                        **({"writer": writer} if writer else {}))
