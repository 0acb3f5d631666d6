"""Image datasets: pair image files with the label files that name them, in a folder or an archive.

Every image dataset is "some label files + some image files": CoMER's `<split>/caption.txt` and
`<split>/img/<name>.bmp`, HME100K's `train_labels.txt` and `train_images/<name>.jpg`, a Hugging Face
`metadata.jsonl` beside its images. A `Layout` says which files are label files (and of which split),
how to read one, and which split and name an image file has; `pair` does the rest, identically for
folders and archives: labels first (a first pass over an archive reads only its label files), then
images in a fixed order. Nothing vanishes: an image no label names, a label whose image is missing, a
name given twice, an unreadable label line: each is an InkError naming the file and the cause.
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..archive import is_archive, iter_members
from ..local_files import FileRefused, excerpt, read_capped
from ..readers import InkError
from .base import Context, Item, rel, walk

IMAGE_SUFFIXES = (".png", ".bmp", ".jpg", ".jpeg", ".tif", ".tiff", ".gif", ".webp")

LabelRecord = tuple[str, str, str]  # (name, label, where: file:line)


@dataclass(frozen=True)
class Layout:
    label_split: Callable[[str], str | None]     # relative path of a label file -> its split, or None
    read_labels: Callable[[bytes, str], Iterator[LabelRecord | InkError]]
    image_key: Callable[[str], tuple[str, str] | None]  # relative path of an image -> (split, name)
    describe: str = "a label file"                       # what a user should have given, for errors


def caption_lines(data: bytes, where: str, strip: bool = True, tab: bool = False) -> Iterator[LabelRecord | InkError]:
    """`name<whitespace>latex` per line, as WAP/BTTR/CoMER/TAMER captions and HME100K labels are
    written; the name may carry its image extension (`train_0.jpg`), which is dropped with `strip`.
    With `tab` (a `.tsv` file) the name ends at the first TAB only, so `a b.png<TAB>x` names `a b.png`."""
    from tokenizer.corpus import Skipped, read_corpus

    for rec in read_corpus(io.BytesIO(data), where, fmt="tsv" if tab else "caption"):
        if isinstance(rec, Skipped):
            yield InkError(f"{where}:{rec.lineno}", "label", f"label line skipped ({rec.reason}): {rec.detail}",
                           f"label-{rec.reason}")
        elif rec.name is not None:
            yield (strip_image_suffix(rec.name) if strip else rec.name), rec.latex, f"{where}:{rec.lineno}"


def jsonl_lines(data: bytes, where: str) -> Iterator[LabelRecord | InkError]:
    """Hugging Face `metadata.jsonl` (and plain JSONL): {"file_name": ..., "text"|"latex"|...: ...}."""
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        try:
            rec = json.loads(line.decode("utf-8"))
            name = next(rec[k] for k in ("file_name", "image", "filename", "name", "id") if k in rec)
            label = next(rec[k] for k in ("latex", "text", "label", "formula", "ground_truth") if k in rec)
            if not isinstance(name, str) or not isinstance(label, str):
                raise TypeError("the name and the label must be strings")
        except StopIteration:
            yield InkError(at, "label", "JSONL record has no file_name/image/name key or no "
                                        "latex/text/label key", "bad-label-line")
            continue
        except (UnicodeDecodeError, json.JSONDecodeError, TypeError, AttributeError) as e:
            yield InkError(at, "label", f"bad JSONL line: {e}", "bad-label-line")
            continue
        yield strip_image_suffix(PurePosixPath(name).as_posix()), label, at


def strip_image_suffix(name: str) -> str:
    low = name.lower()
    for s in IMAGE_SUFFIXES:
        if low.endswith(s):
            return name[: -len(s)]
    return name


def pair(path: Path, layout: Layout, ctx: Context) -> Iterator[Item | InkError]:
    """Items (image + label) for one input: a folder or an archive laid out as `layout` says."""
    broken = False
    if path.is_dir():
        base = path.parent
        files = list(walk(path, IMAGE_SUFFIXES + (".txt", ".tsv", ".jsonl")))
        listing = [(rel(p, base), p) for p in files if not isinstance(p, InkError)]
        errors = [p for p in files if isinstance(p, InkError)]
        label_sources = [(name, lambda p=p: _read_capped(p, ctx.max_bytes)) for name, p in listing
                         if layout.label_split(name)]
        images: Iterator = ((name, {"file": str(p)}) for name, p in listing)
    elif is_archive(path):
        errors = []
        first = list(iter_members(path, ctx.max_bytes, None, lambda n: layout.label_split(n) is not None))
        label_sources = [(m.name, lambda d=m.data: d) for m in first if not isinstance(m, InkError)]
        # errors are reported by the full pass below; a broken archive there says all there is to say
        broken = any(isinstance(m, InkError) and m.kind == "broken-archive" for m in first)
        images = _members(path, ctx)
    else:
        yield InkError(str(path), "read", "an image dataset input must be a folder or an archive", "not-a-dataset")
        return
    yield from errors
    labels: dict[tuple[str, str], tuple[str, str]] = {}
    for name, read in label_sources:
        split = ctx.split_override or layout.label_split(name)
        if not ctx.wants(split):
            continue
        try:
            data = read()
        except FileRefused as e:
            yield InkError(name, "read", f"label file not read: {e}", e.kind)
            continue
        for rec in layout.read_labels(data, name):
            if isinstance(rec, InkError):
                yield rec
                continue
            key, label, where = (split, rec[0]), rec[1], rec[2]
            if key in labels:
                yield InkError(where, "label", f"name '{excerpt(rec[0])}' already labelled at {labels[key][1]}",
                               "duplicate-name")
                continue
            labels[key] = (label, where)
    used: set[tuple[str, str]] = set()
    if not labels and not errors and not broken:
        yield InkError(str(path), "label", f"no label file found (expected: {layout.describe})", "no-labels")
    for name, where in images:
        if isinstance(where, InkError):
            yield where
            continue
        if not name.lower().endswith(IMAGE_SUFFIXES):
            continue
        got = layout.image_key(name)
        if got is None:  # an image where the layout has none: said, not dropped in silence
            yield InkError(name, "label", f"image outside the layout ({layout.describe}): no label can name it",
                           "unplaced-image")
            continue
        split = ctx.split_override or got[0]
        if not ctx.wants(split):
            continue
        key = (split, got[1])
        if key not in labels:
            yield InkError(name, "label", f"no label names this image ({got[1]!r} in split {split!r})", "no-label")
            continue
        if key in used:
            yield InkError(name, "label", f"another image already took the name {got[1]!r} in split {split!r}",
                           "duplicate-name")
            continue
        used.add(key)
        yield Item(split, name, label=labels[key][0], name=got[1], label_at=labels[key][1], **where)
    for key, (label, where) in labels.items():
        if key not in used:
            yield InkError(where, "read", f"the image for '{excerpt(key[1])}' (split {key[0]!r}) is missing", "missing-image")


def _read_capped(p: Path, max_bytes: int) -> bytes:
    return read_capped(p, max_bytes)


def _members(path: Path, ctx: Context) -> Iterator[tuple[str, dict | InkError]]:
    for m in iter_members(path, ctx.max_bytes, ctx.on_read):
        if isinstance(m, InkError):
            yield m.path, m
        else:
            yield m.name, {"data": m.data}
