"""What every source shares: the work item, the loaded sample, split names and the folder walk.

A source module (one per dataset, see `datasets_prep/sources/__init__.py`) has three functions:
`items(path, ctx)` turns one user input into Items (and InkErrors for what cannot even be listed),
`load(item, opts)` turns one Item into a Sample in a worker process, and `sample_id(item, sample)`.
The worker (datasets_prep/worker.py) never asks which dataset it is converting: it renders
`Sample.ink` or fits `Sample.pixels`, runs the label through the tokenizer and writes the row.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..archive import ARCHIVE_SUFFIXES
from ..ink import Ink
from ..readers import InkError

SPLIT_ORDER = ("train", "valid", "val", "dev", "test", "synthetic", "symbols")


@dataclass
class Item:
    """One sample to convert. `path` is what the shards record (relative, POSIX); the bytes are in
    `data` (archives), in `pixels` (an image already decoded from a pickle) or read by the worker
    from `file` (folders). `label` is the label as its label file has it (image sources), `glyph` a
    MathWriting symbols.jsonl record ({"strokeIndices", "label", "sourceSampleId"})."""

    split: str
    path: str
    file: str | None = None
    data: bytes | None = None
    glyph: dict | None = None
    label: str | None = None
    name: str | None = None          # the sample's name in its label file (image sources)
    label_at: str | None = None      # where the label came from: `caption.txt:12`, a `.lg` file
    pixels: np.ndarray | None = None  # an already decoded image (TAMER's images.pkl)
    id_prefix: str = ""              # set when another input already gave this split the same path


@dataclass
class Sample:
    """A loaded item: an ink to render or a raster to fit, with its target and raw label."""

    latex: str
    latex_raw: str
    annotations: dict = field(default_factory=dict)
    ink: Ink | None = None
    pixels: np.ndarray | None = None  # gray float32 [H, W], 1 = white (image sources)


@dataclass(frozen=True)
class Context:
    """What `items` needs besides the path: the split filter and name, and the archive byte cap."""

    splits: set[str] | None = None
    split_override: str | None = None
    max_bytes: int = 64 << 20
    on_read: object = None

    def wants(self, split: str) -> bool:
        return self.splits is None or split in self.splits


def split_name(text: str) -> str:
    """A Hugging Face-safe split name (\\w+): 'CROHME2019-test' -> 'CROHME2019_test'."""
    name = re.sub(r"\W+", "_", text).strip("_")
    return name or "data"


def sort_splits(names) -> list[str]:
    """train*, valid*/val*/dev*, test*, synthetic, symbols, then the rest; by name within each."""
    def key(name: str):
        low = name.lower()
        rank = next((i for i, s in enumerate(SPLIT_ORDER) if low.startswith(s)), len(SPLIT_ORDER))
        return rank, name
    return sorted(set(names), key=key)


def rel(p: Path, base: Path) -> str:
    return p.relative_to(base).as_posix()


def walk(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path | InkError]:
    """Every file under root ending in one of `suffixes` (any case), sorted by relative path;
    symlinked folders are not followed.

    Everything else that would otherwise vanish is accounted for as an InkError: a symbolic link to a
    file is not followed (archives refuse links too), and an archive inside a folder is not opened
    (give it as an input of its own)."""
    found = []
    base = len(str(root)) + 1
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
        for f in filenames:
            full = os.path.join(dirpath, f)
            if f.lower().endswith((*suffixes, *ARCHIVE_SUFFIXES)):
                found.append((full[base:].replace(os.sep, "/"), full))
    found.sort()
    for rel_name, full in found:
        if os.path.islink(full):
            yield InkError(full, "read", "symbolic link: links are not followed (as in archives)", "symlink")
        elif not rel_name.lower().endswith(suffixes):
            yield InkError(full, "read", "an archive inside a folder input is not opened; pass it as an "
                                         "--input of its own", "nested-archive")
        else:
            yield Path(full)


def read_bytes(item: Item, max_bytes: int) -> bytes:
    """The item's bytes: in memory already, or read from its file with the size checked first."""
    if item.data is not None:
        return item.data
    try:
        with open(item.file, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise InkError(item.path, "read", f"file is {size} bytes, over the limit of {max_bytes}", "too-large")
            return f.read()
    except OSError as e:
        raise InkError(item.path, "read", f"cannot read: {e.strerror or e}", "unreadable") from None


def single_file(path: Path, ctx: Context) -> Iterator[Item]:
    """A lone file given as an input: its split is its folder's name (or --split)."""
    split = ctx.split_override or split_name(path.parent.name)
    if ctx.wants(split):
        yield Item(split, path.name, file=str(path))
