"""What `train.predict` reads: every PATH argument turned into inputs, one per image to recognize.

A PATH is an image or InkML file; a folder (walked recursively for images and .inkml, links
followed only while they stay inside it, datasets_prep/local_files.py); an archive (.zip, .tar.gz,
... read member by member with datasets_prep/archive.py, never extracted); or a shard folder (one
holding dataset_dict.json: every row of every split, named by its sample_id; or one split folder of
it, holding state.json). Each input carries
either its image (drawn or fitted exactly as the training shards were, by the model's RenderSpec)
or the one-line reason it cannot be used, in the order the inputs were given.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from datasets_prep.archive import is_archive, iter_members
from datasets_prep.canvas import draw_ink, fit_image_noted
from datasets_prep.image_intake import ImageError
from datasets_prep.local_files import MAX_BYTES, FileRefused, read_capped, walk_files
from datasets_prep.readers import InkError, read_inkml
from datasets_prep.render_spec import RenderSpec
from datasets_prep.shards import DICT_FILE, STATE_FILE, ShardError, load_split, split_names
from datasets_prep.sources import LABEL_READERS, target_label
from datasets_prep.sources.pairing import IMAGE_SUFFIXES

from .data import image_to_tensor

WANTED = (".inkml", *IMAGE_SUFFIXES)


@dataclass
class Input:
    """One thing to recognize: its name (path, archive:member or sample id) and image, or why not."""

    name: str
    image: torch.Tensor | None = None     # [1, H, W], ink = 1
    reference: str | None = None          # the label the file or the shard row carries
    error: str | None = None


def load_bytes(name: str, data: bytes, render: RenderSpec, binarize: bool = False) -> tuple[torch.Tensor, str | None]:
    """A file's bytes -> (tensor [1, H, W] with ink = 1, reference LaTeX or None); ValueError names
    the cause. InkML (by name) is drawn, anything else decoded as an image and fitted."""
    if name.lower().endswith(".inkml"):
        try:
            ink = read_inkml(data, name)
        except InkError as exc:
            raise ValueError(str(exc)) from None
        if ink.num_points == 0:
            raise ValueError("the ink has no points (an empty canvas)")
        reference = None
        for src in LABEL_READERS:
            try:
                reference = target_label(ink, src, name)[0]
                break
            except (InkError, ValueError):
                continue
        return torch.from_numpy(draw_ink(render, ink))[None], reference
    try:
        image, notes = fit_image_noted(render, data, binarize)
    except ImageError as exc:
        raise ValueError(str(exc)) from None
    for note in notes:
        print(f"{name}: note: {note}", file=sys.stderr)
    return torch.from_numpy(image)[None], None


def load_input(path: Path, render: RenderSpec, binarize: bool = False) -> tuple[torch.Tensor, str | None]:
    """One file -> (tensor [1, H, W] with ink = 1, reference LaTeX or None). ValueError names the cause.

    The file passes the converter's checks first: a regular file (no FIFO, no device) of at most its byte cap."""
    try:
        data = read_capped(path, MAX_BYTES)
    except FileRefused as exc:
        raise ValueError(str(exc)) from None
    return load_bytes(str(path), data, render, binarize)


def _decoded(name: str, data: bytes, render: RenderSpec, binarize: bool) -> Input:
    try:
        image, reference = load_bytes(name, data, render, binarize)
    except (ValueError, OSError) as exc:
        return Input(name, error=str(exc))
    return Input(name, image, reference)


def _file(path: Path, render: RenderSpec, binarize: bool) -> Input:
    try:
        image, reference = load_input(path, render, binarize)
    except (ValueError, OSError) as exc:
        return Input(str(path), error=str(exc))
    return Input(str(path), image, reference)


def _folder(root: Path, render: RenderSpec, binarize: bool) -> Iterator[Input]:
    for name, full, refused in walk_files(root):
        link = refused is not None and refused.kind in ("link-outside", "link-loop")  # may be a folder of inputs
        if not (name.lower().endswith(WANTED) or link):
            continue
        yield Input(full, error=str(refused)) if refused else _file(Path(full), render, binarize)


def _archive(path: Path, render: RenderSpec, binarize: bool) -> Iterator[Input]:
    for member in iter_members(path, MAX_BYTES, wanted=lambda n: n.lower().endswith(WANTED)):
        if isinstance(member, InkError):
            yield Input(member.path, error=f"{member.stage}: {member.message}")
        else:
            yield _decoded(f"{path}:{member.name}", member.data, render, binarize)


def _is_split(path: Path) -> bool:
    """One split folder of a shard root (`shards/x/test`: state.json beside its Arrow files)."""
    return path.is_dir() and (path / STATE_FILE).is_file() and not (path / DICT_FILE).is_file()


def _is_shards(path: Path) -> bool:
    """A shard root (dataset_dict.json) or one of its split folders: read as rows, not as files."""
    return path.is_dir() and ((path / DICT_FILE).is_file() or _is_split(path))


def _split_dirs(path: Path) -> list[tuple[str, Path]]:
    """(split name, folder) for a shard root (every split it lists) or for one split folder."""
    if _is_split(path):
        return [(path.name, path)]
    return [(split, path / split) for split in split_names(path)]


def _shards(root: Path, render: RenderSpec, binarize: bool) -> Iterator[Input]:
    """Every row of every split (or of the one split folder given); a row whose canvas differs from
    the model's is fitted like an image."""
    try:
        tables = [(split, load_split(folder)) for split, folder in _split_dirs(root)]
    except ShardError as exc:
        yield Input(str(root), error=str(exc))
        return
    for split, table in tables:
        cols = table.column_names
        ids = [f"{split}/{x}" for x in table.column("sample_id" if "sample_id" in cols else "path").to_pylist()] \
            if ("sample_id" in cols or "path" in cols) else [f"{split}/{i}" for i in range(table.num_rows)]
        latex = table.column("latex").to_pylist() if "latex" in cols else [None] * table.num_rows
        images = table.column("image")
        for i in range(table.num_rows):
            cell = images[i].as_py()  # one row at a time: a large split is never held decoded
            png = cell["bytes"] if isinstance(cell, dict) else cell
            try:
                image = image_to_tensor(png, render.size)
            except ValueError:  # another canvas (or undecodable): fit it as any image
                yield _decoded(str(ids[i]), png, render, binarize)
                continue
            yield Input(str(ids[i]), image, latex[i])


def iter_inputs(paths: list[Path], render: RenderSpec, binarize: bool = False) -> Iterator[Input]:
    """Every input of every PATH, in order."""
    for path in paths:
        if _is_shards(path):
            yield from _shards(path, render, binarize)
        elif path.is_dir():
            yield from _folder(path, render, binarize)
        elif is_archive(path):
            yield from _archive(path, render, binarize)
        else:
            yield _file(path, render, binarize)


def count_inputs(paths: list[Path]) -> int | None:
    """How many inputs there will be, where that is cheap to know (None with an archive: it would
    have to be read twice)."""
    total = 0
    for path in paths:
        if _is_shards(path):
            try:
                total += sum(load_split(folder).num_rows for _, folder in _split_dirs(path))
            except ShardError:
                total += 1
        elif path.is_dir():
            total += sum(1 for name, _, _ in walk_files(path) if name.lower().endswith(WANTED))
        elif is_archive(path):
            return None
        else:
            total += 1
    return total
