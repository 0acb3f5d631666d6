"""MathWriting (Google, 2024): InkML with `normalizedLabel`, plus symbols.jsonl glyphs.

Inputs: the extracted tree (train valid test synthetic symbols), one of its split folders, the .tgz
itself, or single files. `symbols.jsonl` is resolved against train inks when `symbols/` is absent
(see docs/formats.md). The sample id is the file's `sampleId` annotation.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..archive import Member, is_archive, iter_members
from ..ink import Ink
from ..local_files import FileRefused, read_capped
from ..readers import MAX_BYTES, InkError, read_inkml
from .base import Context, Item, Sample, read_bytes, rel, single_file, split_name, walk

KIND = "ink"
SPLIT_OF_ONE_INPUT = True  # --split names the split of one input folder; with several it would be ambiguous
SPLITS = ("train", "valid", "test", "synthetic", "symbols")
SYMBOLS_JSONL = "symbols.jsonl"


def label(ink: Ink, path: str = "") -> tuple[str, str]:
    """(latex, latex_raw): `normalizedLabel` (the ground truth), or `label` where that is missing
    (symbols/); raw = `label`. A missing or empty label raises InkError(stage="label")."""
    ann = ink.annotations
    raw = ann.get("label")
    target = ann.get("normalizedLabel", raw)
    if target is None or not target.strip():
        raise InkError(path, "label", "no normalizedLabel or label annotation", "no-label")
    return target.strip(), (raw if raw is not None else target)


def items(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    if path.is_dir():
        return _tree(path, ctx)
    if is_archive(path):
        return _archive(path, ctx)
    return single_file(path, ctx)


def load(item: Item, opts) -> Sample:
    if item.glyph is not None:
        ink = _glyph_ink(item, opts)
    else:
        ink = read_inkml(read_bytes(item, opts.max_bytes), item.path, max_bytes=opts.max_bytes,
                         max_points=opts.max_points, min_points=opts.min_points)
    latex, raw = label(ink, item.path)
    return Sample(latex, raw, ink.annotations, ink=ink)


def sample_id(item: Item, sample: Sample) -> str:
    if item.glyph is not None:
        return f"{item.id_prefix}{item.glyph['sourceSampleId']}-glyph{item.path.rsplit(':', 1)[-1]}"
    sid = sample.annotations.get("sampleId", "").strip()
    if sid:
        return item.id_prefix + sid
    return item.path[:-6] if item.path.lower().endswith(".inkml") else item.path


# ---------------------------------------------------------------- enumeration

def _is_tree(root: Path) -> bool:
    return any((root / s).is_dir() for s in SPLITS) or (root / SYMBOLS_JSONL).is_file()


def _tree(root: Path, ctx: Context) -> Iterator[Item | InkError]:
    if not _is_tree(root):  # a single split folder, e.g. .../mathwriting-2024/valid
        split = ctx.split_override or split_name(root.name)
        if ctx.wants(split):
            for p in walk(root, (".inkml",)):
                yield p if isinstance(p, InkError) else Item(split, rel(p, root.parent), file=str(p))
        return
    for split in SPLITS:
        if not ctx.wants(split):
            continue
        d = root / split
        if d.is_dir():
            for p in walk(d, (".inkml",)):
                yield p if isinstance(p, InkError) else Item(ctx.split_override or split, rel(p, root), file=str(p))
        elif split == "symbols" and (root / SYMBOLS_JSONL).is_file():
            yield from _symbols_from_jsonl(root / SYMBOLS_JSONL, SYMBOLS_JSONL,
                                           lambda sid: _read_or_none(root / "train" / f"{sid}.inkml", root),
                                           ctx.split_override or "symbols")


def _read_or_none(p: Path, root: Path) -> bytes | None:
    try:
        return read_capped(p, MAX_BYTES, root)
    except FileRefused:
        return None


def symbols_record(rec) -> dict:
    """A symbols.jsonl record checked: {"sourceSampleId", "strokeIndices", "label"}, the id a plain
    id (it names a file); KeyError/TypeError/ValueError saying what is wrong otherwise."""
    sid, idx, lab = rec["sourceSampleId"], rec["strokeIndices"], rec["label"]
    if not (isinstance(sid, str) and isinstance(lab, str) and isinstance(idx, list)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in idx) and idx):
        raise TypeError("sourceSampleId/label must be strings, strokeIndices a non-empty int list")
    if not re.fullmatch(r"[0-9A-Za-z_-]+", sid):
        raise ValueError(f"sourceSampleId {sid!r} is not a plain id")
    return {"sourceSampleId": sid, "strokeIndices": idx, "label": lab}


def symbols_records(data: bytes, where: str) -> Iterator[tuple[int, dict] | InkError]:
    """(line number, record) per valid line of symbols.jsonl; InkError per bad line."""
    for lineno, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, symbols_record(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            yield InkError(f"{where}:{lineno}", "symbols", f"bad symbols.jsonl line: {e}", "bad-symbols-line")


def _symbols_from_jsonl(path: Path, where: str, ink_bytes, split: str) -> Iterator[Item | InkError]:
    try:
        data = read_capped(path, MAX_BYTES, path.parent)
    except FileRefused as e:
        yield InkError(where, "read", f"not read: {e}", e.kind)
        return
    for got in symbols_records(data, where):
        if isinstance(got, InkError):
            yield got
            continue
        lineno, rec = got
        src = ink_bytes(rec["sourceSampleId"])
        at = f"{where}:{lineno}"
        if src is None:
            yield InkError(at, "symbols", f"train ink {rec['sourceSampleId']}.inkml not found", "missing-source-ink")
            continue
        yield Item(split, at, data=src, glyph=rec)


def _split_of(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    return parts[-2] if len(parts) >= 2 and parts[-2] in SPLITS else None


def _archive(path: Path, ctx: Context) -> Iterator[Item | InkError]:
    jsonl: tuple[str, bytes] | None = None
    saw_symbols_dir = False
    for m in iter_members(path, ctx.max_bytes, ctx.on_read):
        if isinstance(m, InkError):
            yield m
            continue
        base = PurePosixPath(m.name).name
        if base == SYMBOLS_JSONL:
            jsonl = (m.name, m.data)
            continue
        if not base.lower().endswith(".inkml"):
            continue
        split = _split_of(m.name)
        if split == "symbols":
            saw_symbols_dir = True
        if split is None or not ctx.wants(split):
            continue
        yield Item(ctx.split_override or split, m.name, data=m.data)
    if jsonl is None or saw_symbols_dir or not ctx.wants("symbols"):
        return
    # symbols/ is absent: resolve glyphs against train inks with a second pass over the stream,
    # keeping only the inks the records name (bounded memory whatever the tar order).
    where, data = jsonl
    records = list(symbols_records(data, f"{path}:{where}"))
    wanted = {r[1]["sourceSampleId"] for r in records if not isinstance(r, InkError)}
    found: dict[str, bytes] = {}
    for m in iter_members(path, ctx.max_bytes):
        if isinstance(m, Member) and _split_of(m.name) == "train":
            sid = PurePosixPath(m.name).stem
            if sid in wanted:
                found[sid] = m.data
    for got in records:
        if isinstance(got, InkError):
            yield got
            continue
        lineno, rec = got
        at = f"{path}:{where}:{lineno}"
        src = found.get(rec["sourceSampleId"])
        if src is None:
            yield InkError(at, "symbols", f"train ink {rec['sourceSampleId']}.inkml not in the archive",
                           "missing-source-ink")
            continue
        yield Item(ctx.split_override or "symbols", f"{where}:{lineno}", data=src, glyph=rec)


def _glyph_ink(item: Item, opts) -> Ink:
    """A MathWriting symbol: the listed strokes of a train ink, labelled with the record's label."""
    g = item.glyph
    src = read_inkml(item.data, item.path, max_bytes=opts.max_bytes, max_points=opts.max_points, min_points=1)
    n = src.num_strokes
    bad = [i for i in g["strokeIndices"] if not 0 <= i < n]
    if bad:
        raise InkError(item.path, "symbols", f"stroke indices {bad} out of range for {g['sourceSampleId']} "
                       f"({n} strokes)", "bad-stroke-index")
    ann = {"label": g["label"], "sourceSampleId": g["sourceSampleId"],
           "strokeIndices": json.dumps(g["strokeIndices"]), "splitTagOriginal": "symbols"}
    ink = Ink(strokes=[src.strokes[i] for i in g["strokeIndices"]], annotations=ann)
    if ink.num_points < opts.min_points:  # the same rule as for files (--min-points 1 keeps one-tap dots)
        raise InkError(item.path, "traces", f"glyph has {ink.num_points} point(s), fewer than {opts.min_points}",
                       "too-few-points")
    return ink
