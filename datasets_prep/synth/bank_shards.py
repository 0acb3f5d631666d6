"""`bank_shards(...)`: a folder of training shards of real-hand synthetic inks, made once per inputs.

For a trainer that wants N synthetic expressions in real handwriting without running two commands:
the inks are written by bank_synth.generate_hand (MathWriting-style InkML) and converted by the
project's converter (datasets_prep.convert, the same rendering and shard schema as every other
source), under out_dir/bank-<key>/, where the key hashes everything the result depends on (the
bank's files, the labels, count, size, seed, split, exclusions, options). A second call with the same
inputs returns the finished folder at once; the folder appears atomically (built beside it, then
renamed), so a killed or concurrent run never leaves a half folder under a key.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

VERSION = 1  # part of the key: bump when the inks a given input makes change
DONE = "bank_shards.json"


def _digest_file(path: Path, h) -> None:
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


def cache_key(bank_dir: Path, labels: Sequence[str] | None, count: int, size: tuple[int, int], seed: int,
              exclude: Sequence[str], options: dict) -> str:
    """16 hex digits over everything the shards depend on."""
    h = hashlib.blake2b(digest_size=8)
    h.update(f"gryphone-bank-shards/{VERSION}\0".encode())
    for name in ("index.json", "glyphs.npz"):
        _digest_file(Path(bank_dir) / name, h)
    h.update(json.dumps({"labels": None if labels is None else list(labels), "count": count, "size": list(size),
                         "seed": seed, "exclude": sorted(exclude), **options}, sort_keys=True).encode())
    return h.hexdigest()


def _is_file(text: str) -> bool:
    """Whether a string given as `exclude` names a label file (a label is never mistaken for one,
    however long or strange)."""
    try:
        return "\n" not in text and Path(text).is_file()
    except (OSError, ValueError):
        return False


def bank_shards(bank_dir: str | os.PathLike, labels: Sequence[str] | str | os.PathLike | None, count: int,
                out_dir: str | os.PathLike, size: tuple[int, int] = (224, 224), seed: int = 0, *,
                split: str = "train", exclude: Sequence[str] | Sequence[os.PathLike] = (),
                recombine_p: float = 0.0, bank_only: bool = False, keep_ink: bool = False,
                workers: int = 1, progress: bool = False) -> Path:
    """Make (or find) shards of `count` real-hand synthetic inks; returns the shard folder, a
    dataset folder like the converter writes (`<returned>/<split>` for `shards.load_split`).

    labels: a list of LaTeX labels, a label file (one a line, or name<TAB>latex), or None for random
    labels of the CROHME symbol set. exclude: labels, or label files, whose matches (after
    tokenizer normalization) are never drawn (e.g. the CROHME test captions). size: (H, W) of the
    rendered images. The run's report is `<returned>/../bank_shards.json` (`synth` and `convert`).
    Raises ValueError on bad arguments (a bad bank is bank.BankError, a ValueError).
    """
    from ..convert import convert
    from .bank_synth import generate_hand
    from .labels import read_label_file
    from .leakage import ExcludeSet

    if count < 1:
        raise ValueError("count must be >= 1")
    bank_dir = Path(bank_dir)
    if labels is not None and not isinstance(labels, (list, tuple)):
        labels = [lab for _, lab in read_label_file(Path(labels))]
    ex_labels: list[str] = []
    for e in exclude:
        if isinstance(e, os.PathLike) or (isinstance(e, str) and _is_file(e)):
            ex_labels += [lab for _, lab in read_label_file(Path(e))]
        else:
            ex_labels.append(str(e))
    size = (int(size[0]), int(size[1]))
    options = {"split": split, "recombine_p": recombine_p, "bank_only": bank_only, "keep_ink": keep_ink}
    try:
        key = cache_key(bank_dir, labels, count, size, seed, ex_labels, options)
    except OSError as e:
        raise ValueError(f"{bank_dir}: not a readable glyph bank ({e.strerror or e})") from None
    root = Path(out_dir) / f"bank-{key}"
    if (root / DONE).is_file():
        return root / "shards"
    tmp = Path(out_dir) / f".bank-{key}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        synth = generate_hand(count, tmp / "ink", bank_dir, labels=list(labels) if labels is not None else None,
                              seed=seed, split=split, exclude=ExcludeSet(ex_labels), recombine_p=recombine_p,
                              bank_only=bank_only, progress=progress)
        conv = convert("mathwriting", inputs=[tmp / "ink"], out=tmp / "shards", size=size, workers=workers,
                       keep_ink=keep_ink, progress=progress)
        (tmp / DONE).write_text(json.dumps({"key": key, "synth": synth, "convert": conv}, indent=1,
                                           ensure_ascii=False, default=str) + "\n")
        try:
            tmp.rename(root)
        except OSError:  # another process finished the same key first: use its folder
            if not (root / DONE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root / "shards"
