"""CoMER / PosFormer's `data.zip`: `data/<split>/caption.txt` + `data/<split>/img/<name>.bmp`; BTTR's
older layout without `img/` (`<split>/<name>.bmp`) too.

Inputs: the zip itself, the folder holding it (as `datasets_prep.export --to comer` writes it), the
extracted `data/` folder, or one split folder (`data/2014`). Each split
folder holding a `caption.txt` is a split (`train`, `2014`, `2016`, `2019`); a caption line is the
image name, whitespace, and the space-tokenized label (CoMER splits it on whitespace: the name is the
first field). The sample id is the image name.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..readers import InkError
from .base import Context, Item, split_name
from .pairing import Layout, caption_lines, pair, strip_image_suffix
from .raster import KIND, load, sample_id  # noqa: F401  (the source's interface)

CAPTION = "caption.txt"
ZIP = "data.zip"
IMAGE_DIR = "img"


def _label_split(name: str) -> str | None:
    p = PurePosixPath(name)
    return split_name(p.parent.name) if p.name == CAPTION and len(p.parts) >= 2 else None


def _image_key(name: str) -> tuple[str, str] | None:
    p = PurePosixPath(name)
    if len(p.parts) >= 3 and p.parent.name == IMAGE_DIR:
        return split_name(p.parent.parent.name), strip_image_suffix(p.name)
    if len(p.parts) >= 2:  # BTTR: images beside caption.txt
        return split_name(p.parent.name), strip_image_suffix(p.name)
    return None


LAYOUT = Layout(_label_split, caption_lines, _image_key, describe="<split>/caption.txt beside <split>/img/")


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    zipped = path / ZIP
    if path.is_dir() and zipped.is_file() and not zipped.is_symlink() and not (path / "data").exists() \
            and not (path / CAPTION).exists():
        return pair(zipped, LAYOUT, ctx)  # the folder `datasets_prep.export --to comer` writes
    return pair(path, LAYOUT, ctx)
