"""The source seam: one module per dataset, each turning the user's inputs into work items.

A source module has `KIND` ("ink", "image" or "mixed": offered by the InkML command, the image
command, or both), `items(path, ctx)` (Items and InkErrors for one
input, in a fixed order: folders by sorted relative path, archives by member order, never by
timing, so shards are the same whatever the worker count and a resumed run sees the same chunks),
`load(item, opts) -> Sample` (in a worker) and `sample_id(item, sample)`. Adding a dataset means
adding a module here and a line to SOURCES; the converter and the worker stay as they are.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from ..readers import InkError
from . import comer, crohme, crohme2023, folder, hme100k, im2latex, mathwriting, tamer
from .base import Context, Item, Sample, sort_splits, split_name

SOURCES: dict[str, ModuleType] = {
    "mathwriting": mathwriting, "crohme": crohme, "crohme2023": crohme2023,
    "comer": comer, "tamer": tamer, "hme100k": hme100k, "folder": folder, "im2latex": im2latex,
}
INK_SOURCES = tuple(k for k, m in SOURCES.items() if m.KIND in ("ink", "mixed"))
IMAGE_SOURCES = tuple(k for k, m in SOURCES.items() if m.KIND in ("image", "mixed"))
LABEL_READERS = tuple(k for k, m in SOURCES.items() if m.KIND == "ink" and hasattr(m, "label"))
"""The InkML sources that read a reference label out of an ink (tried in this order on a lone file)."""


def get(name: str) -> ModuleType:
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown source {name!r}; expected one of {', '.join(SOURCES)}") from None


def target_label(ink, src: str, path: str = "") -> tuple[str, str]:
    """(latex, latex_raw) of an ink from an InkML source: see `label` in mathwriting.py and crohme.py."""
    return get(src).label(ink, path)


def iter_items(src: str, inputs: list[Path], *, splits: set[str] | None = None, split_override: str | None = None,
               max_bytes: int, on_read=None) -> Iterator[Item | InkError]:
    """Items (and enumeration-time errors) for all inputs, in a deterministic order.

    Two inputs can hold the same relative path (`a/train/x.inkml`, `b/train/x.inkml`): the later one's
    recorded path, and so its sample id, is prefixed with its input's number (`input2/train/x.inkml`),
    so samples are never merged or given the same id. Image items are named by their label file, so
    a name already seen in the split gets the same treatment."""
    source = get(src)
    ctx = Context(splits=splits, split_override=split_override, max_bytes=max_bytes, on_read=on_read)
    seen: set[bytes] = set()  # 8-byte digests of (split, key): memory stays small at MathWriting's 630k items
    for k, path in enumerate(inputs, 1):
        for item in source.items(path, ctx):
            if isinstance(item, Item) and len(inputs) > 1:
                keys = _keys(item)
                if any(key in seen for key in keys):
                    item.id_prefix = f"input{k}/"
                    item.path = item.id_prefix + item.path
                    keys = _keys(item)
                seen.update(keys)
            yield item


def _keys(item: Item) -> list[bytes]:
    names = [f"{item.split}\0{item.path}"] + ([f"{item.split}\0name:{item.id_prefix}{item.name}"] if item.name else [])
    return [hashlib.blake2b(n.encode(), digest_size=8).digest() for n in names]


__all__ = ["SOURCES", "INK_SOURCES", "IMAGE_SOURCES", "Context", "Item", "Sample", "get", "iter_items",
           "sort_splits", "split_name"]
