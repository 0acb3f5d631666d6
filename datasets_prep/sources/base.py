"""What every source shares: the work item, the loaded sample, split names and the folder walk.

A source module (one per dataset, see `datasets_prep/sources/__init__.py`) has three functions:
`items(path, ctx)` turns one user input into Items (and InkErrors for what cannot even be listed),
`load(item, opts)` turns one Item into a Sample in a worker process, and `sample_id(item, sample)`.
The worker (datasets_prep/worker.py) never asks which dataset it is converting: it renders
`Sample.ink` or fits `Sample.pixels`, runs the label through the tokenizer and writes the row.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..archive import ARCHIVE_SUFFIXES
from ..ink import Ink
from ..local_files import FileRefused, read_capped, walk_files
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
    """Every file under root ending in one of `suffixes` (any case), sorted by relative path, under
    the one link policy of datasets_prep/local_files.py (links that stay inside the input are
    followed, links that leave it are refused).

    Everything else that would otherwise vanish is accounted for as an InkError: a refused link (of
    any name: a linked folder holds files too), a FIFO/device/socket with a wanted name, and an
    archive inside a folder, which is not opened (give it as an input of its own)."""
    for rel_name, full, bad in walk_files(root):
        low = rel_name.lower()
        wanted = low.endswith(suffixes)
        if bad is not None:
            if wanted or low.endswith(ARCHIVE_SUFFIXES) or bad.kind in ("link-outside", "link-loop", "unreadable"):
                yield InkError(full, "read", str(bad), bad.kind)
        elif not wanted:
            if low.endswith(ARCHIVE_SUFFIXES):
                yield InkError(full, "read", "an archive inside a folder input is not opened; pass it as an "
                                             "--input of its own", "nested-archive")
        else:
            yield Path(full)


def read_bytes(item: Item, max_bytes: int) -> bytes:
    """The item's bytes: in memory already, or read from its file after the file-type and size checks
    (datasets_prep/local_files.py: a FIFO or a device is refused, never opened for reading)."""
    if item.data is not None:
        return item.data
    try:
        return read_capped(item.file, max_bytes)
    except FileRefused as e:
        raise InkError(item.path, "read", str(e), e.kind) from None


def single_file(path: Path, ctx: Context) -> Iterator[Item]:
    """A lone file given as an input: its split is its folder's name (or --split)."""
    split = ctx.split_override or split_name(path.parent.name)
    if ctx.wants(split):
        yield Item(split, path.name, file=str(path))
