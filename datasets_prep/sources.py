"""Turn the user's inputs (folders, archives, single files) into an ordered stream of work items.

The order is fixed by the inputs alone (folders: sorted relative paths; archives: member order),
never by timing, so shards cut from it are the same whatever the worker count, and a resumed run
sees the same chunks. MathWriting: the extracted tree (train valid test synthetic symbols), one of
its split folders, or the .tgz itself; `symbols.jsonl` is resolved against train inks when
`symbols/` is absent. CROHME: any folder or archive of any year; one input = one split, named
after the folder/archive unless --split says otherwise.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .archive import ARCHIVE_SUFFIXES, Member, archive_stem, is_archive, iter_members
from .readers import InkError

MATHWRITING_SPLITS = ("train", "valid", "test", "synthetic", "symbols")
SPLIT_ORDER = ("train", "valid", "val", "dev", "test", "synthetic", "symbols")
SYMBOLS_JSONL = "symbols.jsonl"


@dataclass
class Item:
    """One sample to convert. `path` is what the shards record (relative, POSIX); the bytes are in
    `data` (archives) or read by the worker from `file` (folders). A glyph from symbols.jsonl has
    `glyph` = {"strokeIndices": [...], "label": ..., "sourceSampleId": ...} and the source ink's bytes."""

    split: str
    path: str
    file: str | None = None
    data: bytes | None = None
    glyph: dict | None = None
    id_prefix: str = ""   # set when another input already gave this split the same path


def split_name(text: str) -> str:
    """A Hugging Face-safe split name (\\w+): 'CROHME2019-test' -> 'CROHME2019_test'."""
    name = re.sub(r"\W+", "_", text).strip("_")
    return name or "data"


def sort_splits(names) -> list[str]:
    """train*, valid*/val*/dev*, test*, synthetic, symbols, then the rest; by name within each."""
    def key(name: str):
        low = name.lower()
        rank = next((i for i, s in enumerate(SPLIT_ORDER) if low.startswith(s)), len(SPLIT_ORDER))
        return rank, name
    return sorted(set(names), key=key)


def _walk_inkml(root: Path) -> Iterator[Path | InkError]:
    """Every *.inkml under root (any case), sorted by relative path; symlinked folders not followed.

    Everything else that would otherwise vanish is accounted for as an InkError: a symbolic link to a
    file is not followed (archives refuse links too), and an archive inside a folder is not opened
    (give it as an input of its own)."""
    found = []
    base = len(str(root)) + 1
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for f in filenames:
            full = os.path.join(dirpath, f)
            rel = full[base:].replace(os.sep, "/")
            if f.lower().endswith((".inkml", *ARCHIVE_SUFFIXES)):
                found.append((rel, full))
    found.sort()
    for rel, full in found:
        if os.path.islink(full):
            yield InkError(full, "read", "symbolic link: links are not followed (as in archives)", "symlink")
        elif not rel.lower().endswith(".inkml"):
            yield InkError(full, "read", "an archive inside a folder input is not opened; pass it as an "
                                         "--input of its own", "nested-archive")
        else:
            yield Path(full)


def _rel(p: Path, base: Path) -> str:
    return p.relative_to(base).as_posix()


# ---------------------------------------------------------------- MathWriting

def _is_mathwriting_tree(root: Path) -> bool:
    return any((root / s).is_dir() for s in MATHWRITING_SPLITS) or (root / SYMBOLS_JSONL).is_file()


def _mathwriting_dir(root: Path, splits: set[str] | None, split_override: str | None) -> Iterator[Item | InkError]:
    if not _is_mathwriting_tree(root):  # a single split folder, e.g. .../mathwriting-2024/valid
        split = split_override or split_name(root.name)
        if splits is None or split in splits:
            for p in _walk_inkml(root):
                yield p if isinstance(p, InkError) else Item(split, _rel(p, root.parent), file=str(p))
        return
    for split in MATHWRITING_SPLITS:
        if splits is not None and split not in splits:
            continue
        d = root / split
        if d.is_dir():
            for p in _walk_inkml(d):
                yield p if isinstance(p, InkError) else Item(split_override or split, _rel(p, root), file=str(p))
        elif split == "symbols" and (root / SYMBOLS_JSONL).is_file():
            yield from _symbols_from_jsonl(root / SYMBOLS_JSONL, SYMBOLS_JSONL,
                                           lambda sid: _read_or_none(root / "train" / f"{sid}.inkml"),
                                           split_override or "symbols")


def _read_or_none(p: Path) -> bytes | None:
    try:
        return p.read_bytes()
    except OSError:
        return None


def _symbols_records(data: bytes, where: str) -> Iterator[tuple[int, dict] | InkError]:
    """(line number, record) per valid line of symbols.jsonl; InkError per bad line."""
    for lineno, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        try:
            rec = json.loads(line)
            sid, idx, label = rec["sourceSampleId"], rec["strokeIndices"], rec["label"]
            if not (isinstance(sid, str) and isinstance(label, str) and isinstance(idx, list)
                    and all(isinstance(i, int) and not isinstance(i, bool) for i in idx) and idx):
                raise TypeError("sourceSampleId/label must be strings, strokeIndices a non-empty int list")
            if not re.fullmatch(r"[0-9A-Za-z_-]+", sid):
                raise ValueError(f"sourceSampleId {sid!r} is not a plain id")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            yield InkError(at, "symbols", f"bad symbols.jsonl line: {e}", "bad-symbols-line")
            continue
        yield lineno, {"sourceSampleId": sid, "strokeIndices": idx, "label": label}


def _symbols_from_jsonl(path: Path, where: str, ink_bytes, split: str) -> Iterator[Item | InkError]:
    try:
        data = path.read_bytes()
    except OSError as e:
        yield InkError(where, "read", f"cannot read: {e}", "unreadable")
        return
    for got in _symbols_records(data, where):
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


def _mathwriting_split_of(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    return parts[-2] if len(parts) >= 2 and parts[-2] in MATHWRITING_SPLITS else None


def _mathwriting_archive(path: Path, splits: set[str] | None, split_override: str | None, max_bytes: int,
                         on_read) -> Iterator[Item | InkError]:
    jsonl: tuple[str, bytes] | None = None
    saw_symbols_dir = False
    for m in iter_members(path, max_bytes, on_read):
        if isinstance(m, InkError):
            yield m
            continue
        base = PurePosixPath(m.name).name
        if base == SYMBOLS_JSONL:
            jsonl = (m.name, m.data)
            continue
        if not base.lower().endswith(".inkml"):
            continue
        split = _mathwriting_split_of(m.name)
        if split == "symbols":
            saw_symbols_dir = True
        if split is None or (splits is not None and split not in splits):
            continue
        yield Item(split_override or split, m.name, data=m.data)
    if jsonl is None or saw_symbols_dir or (splits is not None and "symbols" not in splits):
        return
    # symbols/ is absent: resolve glyphs against train inks with a second pass over the stream,
    # keeping only the inks the records name (bounded memory whatever the tar order).
    where, data = jsonl
    records = list(_symbols_records(data, f"{path}:{where}"))
    wanted = {r[1]["sourceSampleId"] for r in records if not isinstance(r, InkError)}
    found: dict[str, bytes] = {}
    for m in iter_members(path, max_bytes):
        if isinstance(m, Member) and _mathwriting_split_of(m.name) == "train":
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
        yield Item(split_override or "symbols", f"{where}:{lineno}", data=src, glyph=rec)


# ---------------------------------------------------------------- CROHME

def _crohme_input(path: Path, splits: set[str] | None, split_override: str | None, max_bytes: int,
                  on_read) -> Iterator[Item | InkError]:
    if path.is_dir():
        split = split_override or split_name(path.name)
        if splits is None or split in splits:
            for p in _walk_inkml(path):
                yield p if isinstance(p, InkError) else Item(split, _rel(p, path.parent), file=str(p))
        return
    if is_archive(path):
        split = split_override or split_name(archive_stem(path))
        if splits is not None and split not in splits:
            return
        for m in iter_members(path, max_bytes, on_read):
            if isinstance(m, InkError):
                yield m
            elif m.name.lower().endswith(".inkml"):
                yield Item(split, m.name, data=m.data)
        return
    yield from _single_file(path, split_override, splits)


def _single_file(path: Path, split_override: str | None, splits: set[str] | None) -> Iterator[Item]:
    split = split_override or split_name(path.parent.name)
    if splits is None or split in splits:
        yield Item(split, path.name, file=str(path))


# ---------------------------------------------------------------- entry point

def iter_items(src: str, inputs: list[Path], *, splits: set[str] | None = None, split_override: str | None = None,
               max_bytes: int, on_read=None) -> Iterator[Item | InkError]:
    """Items (and enumeration-time errors) for all inputs, in a deterministic order.

    Two inputs can hold the same relative path (`a/train/x.inkml`, `b/train/x.inkml`): the later one's
    recorded path, and so its sample id, is prefixed with its input's number (`input2/train/x.inkml`),
    so samples are never merged or given the same id."""
    seen: set[tuple[str, str]] = set()
    for k, path in enumerate(inputs, 1):
        if src == "mathwriting":
            if path.is_dir():
                items = _mathwriting_dir(path, splits, split_override)
            elif is_archive(path):
                items = _mathwriting_archive(path, splits, split_override, max_bytes, on_read)
            else:
                items = _single_file(path, split_override, splits)
        elif src == "crohme":
            items = _crohme_input(path, splits, split_override, max_bytes, on_read)
        else:
            raise ValueError(f"unknown source {src!r}")
        for item in items:
            if isinstance(item, Item):
                if (item.split, item.path) in seen:
                    item.id_prefix = f"input{k}/"
                    item.path = item.id_prefix + item.path
                seen.add((item.split, item.path))
            yield item
