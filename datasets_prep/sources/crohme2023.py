"""CROHME 2023 (TC11 package): `INKML/`, `IMG/` and `SymLG/` trees, each with train/val/test.

Layouts seen: modality first (`TC11_CROHME23/{INKML,IMG,SymLG}/<split>/<subset>/<name>.ext`) and
split first (`<split>/INKML/<subset>/<name>.inkml`). A sample is keyed by its split and its path
below the modality folder without extension, so `INKML/test/CROHME2023_test/a.inkml`,
`IMG/test/CROHME2023_test/a.png` and `SymLG/test/CROHME2023_test/a.lg` are one sample.

A sample with InkML is converted from its ink (the `truth` annotation, as --src crohme); when it also
has a SymLG, the LaTeX derived from the graph (datasets_prep/symlg.py) is compared with the truth
after normalization and both are kept in the row's annotations (`symlg_latex`, `symlg_agrees`), which
is how the SymLG reading is checked on real data. A sample with only an image is converted from the
image with its SymLG-derived LaTeX; an image with no SymLG and no InkML is quarantined.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..archive import is_archive, iter_members
from ..local_files import FileRefused, read_capped
from ..readers import InkError, read_inkml
from ..symlg import SymLGError, to_latex
from .base import Context, Item, Sample, read_bytes, rel, split_name, walk
from .crohme import label as ink_label
from .pairing import IMAGE_SUFFIXES
from .raster import pixels

KIND = "mixed"  # inks and images: offered by both commands
MODALITIES = {"inkml": "inkml", "img": "image", "symlg": "lg", "lg": "lg"}
SPLITS = ("train", "val", "valid", "test")


def _key(name: str, default_split: str) -> tuple[str, str, str] | None:
    """(kind, split, sample key) of a file, or None for files that are not part of a sample."""
    p = PurePosixPath(name)
    low = p.name.lower()
    kind = "inkml" if low.endswith(".inkml") else "lg" if low.endswith(".lg") else (
        "image" if low.endswith(IMAGE_SUFFIXES) else None)
    if kind is None:
        return None
    parts = list(p.parts[:-1])
    split = next((s for s in parts if s.lower() in SPLITS), default_split)
    mod_at = next((i for i, s in enumerate(parts) if s.lower() in MODALITIES), None)
    below = parts[mod_at + 1:] if mod_at is not None else parts
    below = [s for s in below if s != split]
    return kind, split_name(split), "/".join(below + [p.stem])


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    default = split_name(path.stem if is_archive(path) else path.name)
    if path.is_dir():
        listing = [(p if isinstance(p, InkError) else (rel(p, path.parent), p))
                   for p in walk(path, (".inkml", ".lg") + IMAGE_SUFFIXES)]
        lgs = {}
        files = []
        for entry in listing:
            k = None if isinstance(entry, InkError) else _key(entry[0], default)
            if k and k[0] == "lg":
                try:  # the same type and size checks as every other file (--max-file-mb)
                    lgs[k[1:]] = (entry[0], read_capped(entry[1], ctx.max_bytes))
                except FileRefused as e:
                    files.append(InkError(entry[0], "read", str(e), e.kind))
                continue
            files.append(entry if isinstance(entry, InkError) else (entry[0], {"file": str(entry[1])}))
    elif is_archive(path):
        lgs = {}
        for m in iter_members(path, ctx.max_bytes, None, lambda name: name.lower().endswith(".lg")):
            if not isinstance(m, InkError):
                k = _key(m.name, default)
                if k:
                    lgs[k[1:]] = (m.name, m.data)
        files = ((m if isinstance(m, InkError) else (m.name, {"data": m.data}))
                 for m in iter_members(path, ctx.max_bytes, ctx.on_read))
    else:
        yield InkError(str(path), "read", "a CROHME 2023 input is the TC11 folder or its archive", "not-a-dataset")
        return
    inked: set[tuple[str, str]] = set()
    imaged: set[tuple[str, str]] = set()
    pending_images = []
    for entry in files:
        if isinstance(entry, InkError):
            yield entry
            continue
        name, where = entry
        k = _key(name, default)
        if k is None or k[0] == "lg":
            continue
        kind, split, key = k
        split = ctx.split_override or split
        if not ctx.wants(split):
            continue
        lg = lgs.get((k[1], key))
        if kind == "inkml":
            inked.add((split, key))
            yield Item(split, name, label=lg[1].decode("utf-8", "replace") if lg else None, name=key,
                       label_at=lg[0] if lg else None, **where)
        else:
            pending_images.append((split, key, name, where, lg))
    for split, key, name, where, lg in pending_images:  # images whose sample has no InkML
        if (split, key) in inked:
            continue
        if (split, key) in imaged:
            yield InkError(name, "label", f"another image already stands for sample {key!r}", "duplicate-name")
            continue
        imaged.add((split, key))
        if lg is None:
            yield InkError(name, "label", f"no InkML and no SymLG for sample {key!r}", "no-label")
            continue
        yield Item(split, name, label=lg[1].decode("utf-8", "replace"), name=key, label_at=lg[0], **where)
    for (split, key), (where, _) in lgs.items():  # a label graph with neither ink nor image
        split = ctx.split_override or split
        if ctx.wants(split) and (split, key) not in inked and (split, key) not in imaged:
            yield InkError(where, "read", f"no InkML and no image for sample {key!r}", "missing-image")


def load(item: Item, opts) -> Sample:
    if item.path.lower().endswith(".inkml"):
        ink = read_inkml(read_bytes(item, opts.max_bytes), item.path, max_bytes=opts.max_bytes,
                         max_points=opts.max_points, min_points=opts.min_points)
        latex, raw = ink_label(ink, item.path)
        ann = dict(ink.annotations)
        if item.label is not None:
            ann.update(_check(item.label, latex, item.label_at))
        return Sample(latex, raw, ann, ink=ink)
    where = item.label_at
    try:
        latex = to_latex(item.label, where)
    except SymLGError as e:
        raise InkError(where, "label", str(e), "bad-symlg") from None
    ann = {"name": item.name or "", "label_at": where}
    return Sample(latex, item.label, ann, pixels=pixels(item, opts, ann))


def _check(symlg_text: str, truth: str, where: str) -> dict:
    from tokenizer import LatexError, normalize

    try:
        derived = to_latex(symlg_text, where)
    except SymLGError as e:
        return {"symlg_error": str(e)}
    try:
        agrees = normalize(derived) == normalize(truth)
    except LatexError:
        agrees = False
    return {"symlg_latex": derived, "symlg_agrees": "true" if agrees else "false"}


def sample_id(item: Item, sample: Sample) -> str:
    return item.id_prefix + (item.name or item.path)
