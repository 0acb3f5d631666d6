"""TAMER / ICAL's layout: `<split>/images.pkl` (name -> uint8 array) + `<split>/caption.txt`.

Inputs: the extracted data folder (`data/crohme`, holding `train/`, `2014/`, ...) or one split
folder. The pickle is untrusted: it is read by datasets_prep/safe_pickle.py, which builds numpy arrays
and nothing else; a pickle that asks for anything more is refused with the reason, and the split's
captions are then accounted for as missing images. The sample id is the image name.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..readers import InkError
from ..local_files import FileRefused, excerpt, inside, read_capped
from ..safe_pickle import MAX_PICKLE_BYTES, PickleRefused, images_from, loads
from .base import Context, Item, rel, split_name
from .pairing import caption_lines, strip_image_suffix
from .raster import KIND, load, sample_id  # noqa: F401  (the source's interface)

PICKLE = "images.pkl"
COUNTABLE = False  # the images sit in one pickle: no files for the progress bar to count
CAPTION = "caption.txt"


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    if not path.is_dir():
        yield InkError(str(path), "read", "a TAMER input is a folder holding <split>/images.pkl and "
                                          "<split>/caption.txt (extract the archive first)", "not-a-dataset")
        return
    root = path
    has_caption = lambda d: (d / CAPTION).exists() or (d / CAPTION).is_symlink()  # noqa: E731
    split_dirs = [path] if has_caption(path) else []
    for d in [] if split_dirs else sorted(path.iterdir()):
        if d.is_symlink() and d.is_dir() and not inside(os.path.realpath(d), os.path.realpath(root)):
            # the folder-input link policy: followed inside the input, refused when it leaves it
            yield InkError(rel(d, path.parent), "read", "symbolic link leaves the input folder: not followed",
                           "link-outside")
        elif d.is_dir() and has_caption(d):
            split_dirs.append(d)
    if not split_dirs:
        yield InkError(str(path), "label", f"no {CAPTION} found in it or its sub-folders", "no-labels")
    for d in split_dirs:
        yield from _split(d, path.parent, root, ctx)


def _split(d: Path, base: Path, root: Path, ctx: Context) -> Iterator[Item | InkError]:
    split = ctx.split_override or split_name(d.name)
    if not ctx.wants(split):
        return
    where = rel(d / CAPTION, base)
    pkl = rel(d / PICKLE, base)
    why = ""
    try:
        images = images_from(loads(read_capped(d / PICKLE, MAX_PICKLE_BYTES, root)))
    except FileRefused as e:
        gone = not (d / PICKLE).exists() and not (d / PICKLE).is_symlink()
        images, why = {}, f"{PICKLE} not found" if gone else str(e)
    except PickleRefused as e:
        images, why = {}, str(e)
    if why:
        yield InkError(pkl, "read", why, "bad-pickle")
    seen: dict[str, str] = {}
    used: set[str] = set()
    try:
        captions = read_capped(d / CAPTION, ctx.max_bytes, root)
    except FileRefused as e:
        yield InkError(where, "read", f"not read: {e}", e.kind)
        return
    for rec in caption_lines(captions, where, strip=False):
        if isinstance(rec, InkError):
            yield rec
            continue
        name, label, at = rec
        if name in seen:
            yield InkError(at, "label", f"name '{excerpt(name)}' already labelled at {seen[name]}", "duplicate-name")
            continue
        seen[name] = at
        key = name if name in images else strip_image_suffix(name)  # HME100K's captions say `test_4.jpg`
        if key not in images:
            yield InkError(at, "read", f"no image '{excerpt(name)}' in {pkl}" + (f" ({why})" if why else ""), "missing-image")
            continue
        used.add(key)
        yield Item(split, f"{pkl}:{key}", label=label, name=strip_image_suffix(name), label_at=at, pixels=images[key])
    for name in images:
        if name not in used:
            yield InkError(f"{pkl}:{name}", "label", f"no caption names this image in {where}", "no-label")
