"""HME100K (the camera-photo benchmark: 74,502 train / 24,607 test): `<split>_labels.txt` +
`<split>_images/<name>.jpg`.

Inputs: the extracted folder or an archive of it, at any depth (`HME100K/train/train_images/...`).
A label line is the image name (with or without `.jpg`), a tab, and the space-tokenized label;
Chinese characters in labels are kept. These are photos: --binarize usually helps. TAMER's pickled
copy of HME100K is read by --src tamer. The sample id is the image name.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..readers import InkError
from .base import Context, Item, split_name
from .pairing import Layout, caption_lines, pair, strip_image_suffix
from .raster import KIND, load, sample_id  # noqa: F401  (the source's interface)

_LABELS = re.compile(r"(?i)(?P<split>[a-z0-9]+)_labels?\.(txt|tsv)$")
_IMAGES = re.compile(r"(?i)(?P<split>[a-z0-9]+)_images?$")


def _label_split(name: str) -> str | None:
    m = _LABELS.fullmatch(PurePosixPath(name).name)
    return split_name(m["split"].lower()) if m else None


def _image_key(name: str) -> tuple[str, str] | None:
    p = PurePosixPath(name)
    m = _IMAGES.fullmatch(p.parent.name)
    return (split_name(m["split"].lower()), strip_image_suffix(p.name)) if m else None


LAYOUT = Layout(_label_split, caption_lines, _image_key, describe="<split>_labels.txt beside <split>_images/")


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    return pair(path, LAYOUT, ctx)
