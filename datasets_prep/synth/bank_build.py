"""Build a glyph bank (synth/bank.py) from segmented InkML: cut, key, normalize, count.

Every symbol of every readable file becomes a sample keyed by `segments.symbol_token` (CROHME's
`\\lt`, `COMMA` ... spelled as the tokenizer's tokens; a label that is not one token is counted as
unmapped). The writer is the file's `writer` annotation, or, where a dataset has none, the file name
without its item number (MathBrush's `2009210-947-0` -> `2009210-947`, a session); writers are
namespaced by the file's folder (`MfrDB/User001`), since two datasets' `writer 10` are not one person.
A file that cannot be read is skipped and counted with its reason; a test split stops the build.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath

import numpy as np

from ..readers import InkError
from .bank_store import Bank
from .segments import read_segmented, symbol_token
from .testsplit import TestSplitError, annotation_sign, input_sign, path_sign

MAX_PROBLEMS = 200  # problem lines kept in the report (all are counted)


class _Collector:
    """Samples as they are cut, then the bank's arrays."""

    def __init__(self):
        self.points: list[np.ndarray] = []
        self.stroke_lens: list[int] = []
        self.sample_nstrokes: list[int] = []
        self.rows: list[tuple[int, int, int, float, float, float]] = []  # symbol, writer, file, w, h, height ratio
        self.ids: dict[str, dict[str, int]] = {"symbols": {}, "writers": {}, "files": {}}

    def _id(self, kind: str, name: str) -> int:
        table = self.ids[kind]
        return table.setdefault(name, len(table))

    def add_ink(self, strokes_of_symbols: list[tuple[str, list[np.ndarray]]], writer: str, file: str) -> int:
        """Add one ink's symbols (token, strokes in ink units); returns how many were kept."""
        cut = []
        for token, strokes in strokes_of_symbols:
            strokes = [_dedup(s[:, :2]) for s in strokes if len(s)]
            if not strokes:
                continue
            xy = np.concatenate(strokes)
            lo, hi = xy.min(axis=0), xy.max(axis=0)
            w, h = hi - lo
            cut.append((token, strokes, lo, float(w), float(h)))
        if not cut:
            return 0
        heights = [h for *_, h in cut if h > 0]
        median_h = float(np.median(heights)) if heights else 0.0
        wid, fid = self._id("writers", writer), self._id("files", file)
        for token, strokes, lo, w, h in cut:
            side = max(w, h)
            scale = 1.0 / side if side > 0 else 1.0
            for s in strokes:
                self.points.append(((s - lo) * scale).astype(np.float16))
                self.stroke_lens.append(len(s))
            self.sample_nstrokes.append(len(strokes))
            ratio = h / median_h if median_h > 0 else float("nan")
            self.rows.append((self._id("symbols", token), wid, fid, w * scale, h * scale, ratio))
        return len(cut)

    def bank(self, meta: dict) -> Bank:
        rows = np.array(self.rows, dtype=np.float64).reshape(-1, 6)
        arrays = {
            "points": np.concatenate(self.points) if self.points else np.zeros((0, 2), np.float16),
            "stroke_starts": np.concatenate([[0], np.cumsum(self.stroke_lens, dtype=np.int64)]).astype(np.int64),
            "sample_strokes": np.concatenate([[0], np.cumsum(self.sample_nstrokes, dtype=np.int64)]).astype(np.int64),
            "sample_symbol": rows[:, 0].astype(np.int32), "sample_writer": rows[:, 1].astype(np.int32),
            "sample_file": rows[:, 2].astype(np.int32), "sample_size": rows[:, 3:5].astype(np.float32),
            "sample_height": rows[:, 5].astype(np.float32),
        }
        names = {k: list(v) for k, v in self.ids.items()}
        return Bank(names["symbols"], names["writers"], names["files"], arrays, meta)


def _dedup(s: np.ndarray) -> np.ndarray:
    """Drop repeated consecutive points (digitizers repeat the pen-down point many times)."""
    if len(s) < 2:
        return s
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = np.any(s[1:] != s[:-1], axis=1)
    return s[keep]


def writer_of(annotations: dict[str, str], path: str) -> str:
    """The writer of a file, namespaced by its folder (see the module docstring)."""
    p = PurePosixPath(path)
    folder = p.parent.name or "."
    w = (annotations.get("writer") or "").strip()
    if not w:
        stem = p.name[:-6] if p.name.lower().endswith(".inkml") else p.name
        w = re.sub(r"[-_]\d+$", "", stem) or stem
    return f"{folder}/{w}"


def _count_files(inputs: list[Path]) -> int | None:
    if not all(p.is_dir() for p in inputs):
        return None
    return sum(f.lower().endswith(".inkml") for p in inputs for _, _, fs in os.walk(p) for f in fs)


def build_bank(src: str, inputs: list[Path], *, allow_test: bool = False, limit: int | None = None,
               progress: bool = False, skip_writers: frozenset[str] = frozenset()) -> tuple[Bank, dict]:
    """Cut every segmented symbol of the inputs into a Bank; returns (bank, coverage report).

    Files of `skip_writers` (names as `writer_of` gives them) are left out and counted, so a
    validation split held out by writer (datasets_prep/holdout.py) shares no hand with the bank.

    Raises TestSplitError when an input looks like a test split (see synth/testsplit.py) and
    allow_test is False: before anything from that file is kept."""
    import time

    from tqdm import tqdm

    t0 = time.perf_counter()
    inputs = [Path(p) for p in inputs]
    for p in inputs:
        sign = input_sign(p.resolve().name)
        if sign and not allow_test:
            raise TestSplitError(f"{p}: looks like a test split ({sign}); the bank must hold no test "
                                 "writer's symbol (pass --allow-test only for a bank you never train on)")
    col = _Collector()
    rep = {"src": src, "inputs": [str(p) for p in inputs], "files_read": 0, "files_used": 0, "files_skipped": 0,
           "files_skipped_by_kind": Counter(), "files_without_segmentation": 0, "files_held_out": 0, "symbols_dropped": 0,
           "unmapped": Counter(), "problems": []}

    def problem(line: str) -> None:
        if len(rep["problems"]) < MAX_PROBLEMS:
            rep["problems"].append(line)

    bar = tqdm(total=_count_files(inputs) if progress else None, unit="files", desc="glyph bank",
               disable=not progress, dynamic_ncols=True)
    files = _crohme_files(inputs) if src == "crohme" else _mathwriting_files(inputs)
    for got in files:
        if limit is not None and rep["files_read"] >= limit:
            break
        bar.update(1)
        rep["files_read"] += 1
        if isinstance(got, InkError):
            rep["files_skipped"] += 1
            rep["files_skipped_by_kind"][got.kind] += 1
            problem(str(got))
            continue
        path, ann, symbols, problems, writer = got
        sign = annotation_sign(ann) or path_sign(path)
        if sign and not allow_test:
            bar.close()
            raise TestSplitError(f"{path}: a CROHME test file ({sign}); the bank must hold no test writer's "
                                 "symbol (pass --allow-test only for a bank you never train on)")
        who = writer or writer_of(ann, path)
        if who in skip_writers:
            rep["files_held_out"] += 1
            continue
        rep["symbols_dropped"] += len(problems)
        for line in problems:
            problem(line)
        if not symbols and not problems:
            rep["files_without_segmentation"] += 1
            continue
        kept = []
        for label, strokes in symbols:
            token = symbol_token(label)
            if token is None:
                rep["unmapped"][label] += 1
                continue
            kept.append((token, strokes))
        if col.add_ink(kept, who, path):
            rep["files_used"] += 1
    bar.close()
    bank = col.bank({"src": src, "inputs": rep["inputs"]})
    rep.update(_coverage_extras(bank))
    rep["files_skipped_by_kind"] = dict(rep["files_skipped_by_kind"].most_common())
    rep["unmapped"] = dict(rep["unmapped"].most_common())
    rep["seconds"] = round(time.perf_counter() - t0, 2)
    return bank, rep


def _coverage_extras(bank: Bank) -> dict:
    from .glyphs import BIG_OPERATORS, FUNCTIONS, known_symbols
    from .labels import CROHME_SYMBOLS

    cov = bank.coverage()
    drawable = known_symbols() | FUNCTIONS | BIG_OPERATORS | {"\\sqrt"}  # the radical is laid out, not a glyph
    have = set(cov["per_symbol"])
    cov["not_drawable"] = sorted(have - drawable)
    cov["crohme_symbols_missing"] = sorted(CROHME_SYMBOLS - {"\\frac", "\\limits"} - have)
    return cov


def _crohme_files(inputs: list[Path]):
    """(path, annotations, [(label, strokes)], problems, None) per InkML file, or an InkError."""
    from ..sources.base import Context, read_bytes
    from ..sources.crohme import items

    ctx = Context()
    for p in inputs:
        for item in items(p, ctx):
            if isinstance(item, InkError):
                yield item
                continue
            try:
                seg = read_segmented(read_bytes(item, ctx.max_bytes), item.path)
            except InkError as e:
                yield e
                continue
            strokes = [(lab, [seg.ink.strokes[i] for i in idx]) for lab, idx in seg.symbols]
            yield item.path, seg.ink.annotations, strokes, seg.problems, None


def _mathwriting_files(inputs: list[Path]):
    """MathWriting's symbols.jsonl: one glyph per line, the strokes of a train ink. MathWriting has no
    writer ids, so each source ink counts as its own writer (`mathwriting/<sourceSampleId>`)."""
    from ..readers import read_inkml
    from ..sources.mathwriting import SYMBOLS_JSONL, symbols_records

    for root in inputs:
        jsonl = root / SYMBOLS_JSONL if root.is_dir() else root
        base = jsonl.parent
        try:
            data = jsonl.read_bytes()
        except OSError as e:
            yield InkError(str(jsonl), "read", f"cannot read: {e.strerror or e}", "unreadable")
            continue
        cache: dict[str, object] = {}
        for got in symbols_records(data, str(jsonl)):
            if isinstance(got, InkError):
                yield got
                continue
            lineno, rec = got
            sid = rec["sourceSampleId"]
            rel = f"train/{sid}.inkml"
            if sid not in cache:
                try:
                    cache[sid] = read_inkml((base / rel).read_bytes(), str(base / rel))
                except OSError as e:
                    cache[sid] = InkError(str(base / rel), "read", f"cannot read: {e.strerror or e}", "unreadable")
                except InkError as e:
                    cache[sid] = e
            ink = cache[sid]
            if isinstance(ink, InkError):
                yield InkError(f"{jsonl}:{lineno}", ink.stage, f"{ink.path}: {ink.message}", ink.kind)
                continue
            idx = rec["strokeIndices"]
            if any(i < 0 or i >= ink.num_strokes for i in idx):
                yield InkError(f"{jsonl}:{lineno}", "symbols", f"stroke index out of range for {sid} "
                               f"({ink.num_strokes} strokes)", "bad-symbols-line")
                continue
            yield rel, {}, [(rec["label"], [ink.strokes[i] for i in idx])], [], f"mathwriting/{sid}"
