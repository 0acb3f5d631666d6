"""CROHME (2011-2019 competition packages): InkML with a `truth` annotation.

Any folder or archive of any year; one input = one split, named after the folder/archive unless
--split says otherwise. The sample id is the path inside the input without `.inkml`.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..archive import archive_stem, is_archive, iter_members
from ..ink import Ink
from ..readers import InkError, read_inkml
from .base import Context, Item, Sample, read_bytes, rel, single_file, split_name, walk

KIND = "ink"


def fixture_inputs(root: Path) -> list[Path]:
    """The bundled fixtures are one folder per competition year: each is an input."""
    return [p for p in sorted(root.iterdir()) if p.is_dir()]


def label(ink: Ink, path: str = "") -> tuple[str, str]:
    """(latex, latex_raw): `truth` cleaned by `tokenizer.clean_crohme_truth` ($...$, entities,
    whitespace); raw = `truth` as read. A missing or empty truth raises InkError(stage="label")."""
    raw = ink.annotations.get("truth")
    if raw is None:
        raise InkError(path, "label", "no truth annotation", "no-label")
    from tokenizer import clean_crohme_truth

    target = clean_crohme_truth(raw)
    if not target.strip():
        raise InkError(path, "label", f"truth annotation is empty ({raw!r})", "no-label")
    return target, raw


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    if path.is_dir():
        split = ctx.split_override or split_name(path.name)
        if ctx.wants(split):
            for p in walk(path, (".inkml",)):
                yield p if isinstance(p, InkError) else Item(split, rel(p, path.parent), file=str(p))
        return
    if is_archive(path):
        split = ctx.split_override or split_name(archive_stem(path))
        if not ctx.wants(split):
            return
        for m in iter_members(path, ctx.max_bytes, ctx.on_read):
            if isinstance(m, InkError):
                yield m
            elif m.name.lower().endswith(".inkml"):
                yield Item(split, m.name, data=m.data)
        return
    yield from single_file(path, ctx)


def load(item: Item, opts) -> Sample:
    ink = read_inkml(read_bytes(item, opts.max_bytes), item.path, max_bytes=opts.max_bytes,
                     max_points=opts.max_points, min_points=opts.min_points)
    latex, raw = label(ink, item.path)
    return Sample(latex, raw, ink.annotations, ink=ink)


def sample_id(item: Item, sample: Sample) -> str:
    return item.path[:-6] if item.path.lower().endswith(".inkml") else item.path
