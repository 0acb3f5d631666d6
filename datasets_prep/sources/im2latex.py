"""IM2LATEX-100K as im2markup publishes it (printed arXiv formulas): one formula file, three lists.

Input: the folder holding
- `im2latex_formulas.norm.lst`: one im2markup-normalized, space-tokenized formula per line; a
  formula's index is its line number, 0-based. Lines are split on `\\n` only: the raw formula file of
  the same release has carriage returns inside formulas, which universal-newline reading would cut;
- `im2latex_{train,validate,test}_filter.lst`: `image_name formula_index` per line;
- `formula_images_processed/<image_name>` (the cropped PNGs; extract the image archive here).
Splits: train -> `train`, validate -> `valid` (the project's name for a tuning split, as MathWriting's
and the trainer's default eval split), test -> `test`. A missing list is a split that is not there.

Labels: `latex` is the formula with whitespace collapsed; `latex_raw` the line as written. The
normalized token spacing (`\\mathrm { d }`, `\\left(`, `~`, `\\;`) lexes as it is. One im2markup
artefact is repaired: a control space (`\\ `) at the end of a formula lost its space when the lines were
stripped, leaving a lone `\\` that no lexer can read; it is invisible, so it is dropped (annotation
`dropped: trailing control space`). A formula that still cannot be lexed is quarantined with the
lexer's reason (`label:unreadable-label`); one that lexes but does not validate becomes a row with
`label_error` like every source's (`--drop-invalid` quarantines those).
Nothing vanishes: a list line that is not `name index` (`label:bad-list-line`), an index outside the
formula file (`label:bad-formula-index`), an empty formula (`label:no-label`), a name listed twice
in a split (`label:duplicate-name`), a listed image that is missing (`read:missing-image`); without
--splits, each image that no list names (`label:unlisted-image`: im2markup's filter left it out).
The sample id is the image name without `.png`.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..readers import InkError
from .base import Context, Item, Sample, split_name
from .pairing import IMAGE_SUFFIXES, strip_image_suffix
from .raster import KIND, pixels, sample_id  # noqa: F401  (the source's interface)

FORMULAS = "im2latex_formulas.norm.lst"
IMAGE_DIR = "formula_images_processed"
LISTS = {"train": "im2latex_train_filter.lst", "valid": "im2latex_validate_filter.lst",
         "test": "im2latex_test_filter.lst"}
_TRAILING_CONTROL_SPACE = re.compile(r"(?:^|(?<=\s))(?<!\\)\\$")  # a lone '\' after a space, at the end


def im2latex_label(raw: str) -> tuple[str, str | None]:
    """(latex, what was dropped or None): whitespace collapsed, a trailing stripped control space removed."""
    latex = " ".join(raw.split())
    if _TRAILING_CONTROL_SPACE.search(latex):
        return latex[:-1].rstrip(), "trailing control space"
    return latex, None


def _lines(path: Path) -> list[str]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [ln.decode("utf-8", errors="replace").rstrip("\r") for ln in lines]


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    if not path.is_dir():
        yield InkError(str(path), "read", f"an im2latex input is the folder holding {FORMULAS}, the "
                                          f"im2latex_*_filter.lst files and {IMAGE_DIR}/", "not-a-dataset")
        return
    try:
        formulas = _lines(path / FORMULAS)
    except OSError as e:
        yield InkError(str(path / FORMULAS), "label", f"cannot read the formula file: {e.strerror or e}",
                       "no-labels")
        return
    lists = {split: path / name for split, name in LISTS.items() if (path / name).is_file()}
    if not lists:
        yield InkError(str(path), "label", f"no list file found (expected {', '.join(LISTS.values())})",
                       "no-labels")
        return
    image_dir = path / IMAGE_DIR
    listed: set[str] = set()
    for split, lst in lists.items():
        name = lst.name
        try:
            lines = _lines(lst)
        except OSError as e:
            yield InkError(name, "read", f"cannot read: {e.strerror or e}", "unreadable")
            continue
        out_split = ctx.split_override or split_name(split)
        wanted = ctx.wants(out_split)
        seen: dict[str, int] = {}
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            at = f"{name}:{lineno}"
            fields = line.split()
            if len(fields) != 2 or not fields[1].isdigit():
                listed.add(fields[0])  # reported here, not again as an unlisted image
                if wanted:
                    yield InkError(at, "label", f"expected 'image_name formula_index', got {line.strip()[:80]!r}",
                                   "bad-list-line")
                continue
            image, index = fields[0], int(fields[1])
            listed.add(image)
            if not wanted:
                continue
            if index >= len(formulas):
                yield InkError(at, "label", f"formula index {index} is outside {FORMULAS} "
                                            f"({len(formulas)} formulas, 0-based)", "bad-formula-index")
                continue
            if image in seen:
                yield InkError(at, "label", f"image {image!r} already listed at {name}:{seen[image]}",
                               "duplicate-name")
                continue
            seen[image] = lineno
            file = image_dir / (image if image.lower().endswith(IMAGE_SUFFIXES) else image + ".png")
            rel = f"{IMAGE_DIR}/{file.name}"
            if not file.is_file() or file.is_symlink():
                why = "a symbolic link (not followed)" if file.is_symlink() else "not found"
                yield InkError(rel, "read", f"image listed at {at} is {why}", "missing-image")
                continue
            yield Item(out_split, rel, file=str(file), label=formulas[index], name=strip_image_suffix(file.name),
                       label_at=f"{FORMULAS}:{index + 1}")
    if ctx.splits is None and image_dir.is_dir():
        names = set(listed) | {n + ".png" for n in listed}
        for entry in sorted(os.listdir(image_dir)):
            if entry.lower().endswith(IMAGE_SUFFIXES) and entry not in names:
                yield InkError(f"{IMAGE_DIR}/{entry}", "label", "no im2latex_*_filter.lst names this image "
                                                                "(im2markup's filter left it out)", "unlisted-image")


def load(item: Item, opts) -> Sample:
    from tokenizer import LatexError, tokenize

    if item.label is None or not item.label.strip():
        raise InkError(item.path, "label", f"empty formula at {item.label_at}", "no-label")
    latex, dropped = im2latex_label(item.label)
    try:
        tokenize(latex)
    except LatexError as e:
        raise InkError(item.path, "label", f"the tokenizer cannot read the formula at {item.label_at}: "
                                           f"{e.verdict()}", "unreadable-label") from None
    ann = {"name": item.name or "", "label_at": item.label_at or ""}
    if dropped:
        ann["dropped"] = dropped
    return Sample(latex, item.label, ann, pixels=pixels(item, opts))
