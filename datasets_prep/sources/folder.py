"""Any folder (or archive) of images with a label file: the catch-all image source.

Label files, anywhere in the input: `*.tsv` (`name<TAB>latex`: the name may hold spaces) or `*.txt`
(`name<TAB or space>latex`; README/LICENSE files are not labels) and `*.jsonl` (Hugging Face imagefolder's `metadata.jsonl`: {"file_name": ...,
"text" or "latex": ...}). A label names an image by its path relative to the label file's folder, with
or without its extension. A label file called labels/metadata/caption(s)/gt belongs to the split named
after its folder (the input's name at the top); any other label file names its split (`test.tsv`).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..archive import archive_stem, is_archive
from ..readers import InkError
from .base import Context, Item, split_name
from .pairing import Layout, caption_lines, jsonl_lines, pair, strip_image_suffix
from .raster import KIND, load, sample_id  # noqa: F401  (the source's interface)

LABEL_SUFFIXES = (".tsv", ".txt", ".jsonl")
NOT_LABELS = {"readme", "license", "licence", "requirements", "notice", "authors"}
GENERIC = {"labels", "label", "metadata", "caption", "captions", "gt", "ground_truth", "annotations"}


def _read(data: bytes, where: str):
    low = where.lower()
    return jsonl_lines(data, where) if low.endswith(".jsonl") else caption_lines(data, where, tab=low.endswith(".tsv"))


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    top = split_name(archive_stem(path) if is_archive(path) else path.name)
    label_dirs: dict[str, str] = {}  # folder holding a label file -> its split

    def label_split(name: str) -> str | None:
        p = PurePosixPath(name)
        stem = p.name.rsplit(".", 1)[0]
        if not p.name.lower().endswith(LABEL_SUFFIXES) or stem.lower() in NOT_LABELS:
            return None
        split = split_name(p.parent.name or top) if stem.lower() in GENERIC else split_name(stem)
        label_dirs.setdefault(p.parent.as_posix(), split)
        return split

    def image_key(name: str) -> tuple[str, str] | None:
        p = PurePosixPath(name)
        for parent in [p.parent, *p.parent.parents]:  # the nearest folder with a label file
            d = parent.as_posix()
            if d in label_dirs:
                return label_dirs[d], strip_image_suffix(p.relative_to(parent).as_posix())
        return None

    return pair(path, Layout(label_split, _read, image_key,
                             describe="a labels.tsv (name<TAB>latex) or metadata.jsonl"), ctx)
