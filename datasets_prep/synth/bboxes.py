"""Rebuild synthetic inks the official MathWriting way: real glyphs placed into LaTeX-compiler boxes.

Inputs (from the MathWriting release, see docs/formats.md):
  symbols.jsonl          {"sourceSampleId", "strokeIndices": [...], "label"}: a glyph is those
                         strokes of train/<sourceSampleId>.inkml
  synthetic-bboxes.jsonl {"label", "normalizedLabel", "bboxes": [{"token", "xMin", "yMin", "xMax",
                         "yMax"}]}: where each visible token of an expression goes
For every expression, each box gets a random real glyph of its token, scaled into the box (aspect
kept, centred; stretched only for bars and other degenerate boxes) with the glyph's original
timestamps kept, as the official synthetic inks have them (so T is not monotonic across strokes).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tokenizer.normalize import SYNONYMS

from ..ink import Ink
from .errors import SynthError

# Tokens whose box is drawn with a glyph of another label when none of their own exists: bars, and
# the other spellings of a symbol (tokenizer.normalize.SYNONYMS, the project's one synonym table,
# read both ways: a `\to` box takes a `\rightarrow` glyph and the other way round).
ALIASES: dict[str, list[str]] = {"\\frac": ["-"], "\\overline": ["-"], "\\bar": ["-"], "\\underline": ["-"]}
for _a, _b in SYNONYMS.items():
    ALIASES.setdefault(_a, []).append(_b)
    ALIASES.setdefault(_b, []).append(_a)


class BBoxInputError(ValueError):
    """A bad or missing input file of the official rebuild, naming the file and the cause."""


@dataclass
class GlyphBank:
    """Real glyphs by label: label -> list of glyphs, a glyph being a list of (n, 2|3) strokes."""

    glyphs: dict[str, list[list[np.ndarray]]] = field(default_factory=dict)
    problems: list[dict] = field(default_factory=list)  # symbols.jsonl lines that gave no glyph

    @classmethod
    def load(cls, symbols_jsonl: Path, inks_dir: Path) -> "GlyphBank":
        from ..readers import InkError, read_inkml
        from ..sources.mathwriting import symbols_record

        bank = cls()
        cache: dict[str, Ink | None] = {}
        for no, rec in _jsonl(symbols_jsonl):  # JSON objects; each checked as the converter checks it
            try:
                rec = symbols_record(rec)
            except (KeyError, TypeError, ValueError) as e:
                bank.problems.append({"file": str(symbols_jsonl), "line": no,
                                      "error": f"bad symbols.jsonl line: {e}"})
                continue
            sid, idx, label = rec["sourceSampleId"], rec["strokeIndices"], rec["label"]
            if sid not in cache:
                path = Path(inks_dir) / f"{sid}.inkml"
                try:
                    cache[sid] = read_inkml(path.read_bytes(), str(path))
                except OSError as e:
                    cache[sid] = None
                    bank.problems.append({"file": str(path), "line": no, "error": f"cannot read: {e.strerror}"})
                except InkError as e:
                    cache[sid] = None
                    bank.problems.append({"file": str(path), "line": no, "error": str(e)})
            ink = cache[sid]
            if ink is None:
                continue
            if any(i < 0 or i >= ink.num_strokes for i in idx):
                bank.problems.append({"file": str(symbols_jsonl), "line": no,
                                      "error": f"stroke index out of range for {sid} ({ink.num_strokes} strokes)"})
                continue
            bank.glyphs.setdefault(label, []).append([ink.strokes[i] for i in idx])
        return bank

    def pick(self, token: str, rng: np.random.Generator) -> list[np.ndarray] | None:
        options = self.glyphs.get(token)
        for alias in ALIASES.get(token, ()) if not options else ():
            options = self.glyphs.get(alias)
            if options:
                break
        if not options:
            return None
        return options[int(rng.integers(len(options)))]


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        f = Path(path).open(encoding="utf-8")
    except OSError as e:
        raise BBoxInputError(f"{path}: cannot read ({e.strerror})") from None
    with f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise BBoxInputError(f"{path}:{no}: not JSON ({e.msg})") from None
            if not isinstance(rec, dict):
                raise BBoxInputError(f"{path}:{no}: expected a JSON object")
            yield no, rec


def place_glyph(strokes: list[np.ndarray], box: tuple[float, float, float, float]) -> list[np.ndarray]:
    """Scale and move a glyph into (xMin, yMin, xMax, yMax): aspect kept and centred, except that a
    degenerate glyph or box (a bar, a dot) is stretched along the box instead."""
    x0, y0, x1, y1 = box
    xy = np.concatenate([s[:, :2] for s in strokes])
    gx0, gy0 = xy.min(axis=0)
    gx1, gy1 = xy.max(axis=0)
    gw, gh = gx1 - gx0, gy1 - gy0
    bw, bh = x1 - x0, y1 - y0
    eps = 1e-6
    if gw < eps and gh < eps:
        kx = ky = 0.0
    elif gw < eps or gh < eps or bw < eps or bh < eps:
        kx = bw / gw if gw >= eps else 0.0
        ky = bh / gh if gh >= eps else 0.0
        if gw >= eps and gh >= eps:  # a real glyph into a flat box: keep its shape, fill the long side
            k = bw / gw if bw >= bh else bh / gh
            kx = ky = k
    else:
        kx = ky = min(bw / gw, bh / gh)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    gcx, gcy = (gx0 + gx1) / 2, (gy0 + gy1) / 2
    out = []
    for s in strokes:
        t = s.copy()
        t[:, 0] = (s[:, 0] - gcx) * kx + cx
        t[:, 1] = (s[:, 1] - gcy) * ky + cy
        out.append(t)
    return out


def rebuild(record: dict, bank: GlyphBank, rng: np.random.Generator) -> Ink:
    """One synthetic ink from one synthetic-bboxes.jsonl record; raises SynthError on a gap."""
    label = record.get("normalizedLabel") or record.get("label")
    if not isinstance(label, str):
        raise SynthError(repr(record)[:80], "record has no label")
    boxes = record.get("bboxes")
    if not isinstance(boxes, list) or not boxes:
        raise SynthError(label, "record has no bboxes")
    strokes: list[np.ndarray] = []
    for b in boxes:
        try:
            token = b["token"]
            box = (float(b["xMin"]), float(b["yMin"]), float(b["xMax"]), float(b["yMax"]))
        except (KeyError, TypeError, ValueError) as e:
            raise SynthError(label, f"bad bbox entry {b!r}: {e}") from None
        if not all(np.isfinite(box)) or box[2] < box[0] or box[3] < box[1]:
            raise SynthError(label, f"bad box for {token!r}: {box}")
        glyph = bank.pick(token, rng)
        if glyph is None:
            raise SynthError(label, f"no glyph for token {token!r} in symbols.jsonl")
        strokes.extend(place_glyph(glyph, box))
    ann = {"label": record.get("label", label), "normalizedLabel": label}
    return Ink(strokes=strokes, annotations=ann)


def rebuild_all(root: Path, out: Path, *, seed: int = 0, split: str = "synthetic", count: int | None = None,
                progress: bool = False) -> dict:
    """Rebuild every record of root/synthetic-bboxes.jsonl (or the first `count`) into out/<split>/.

    root holds symbols.jsonl, synthetic-bboxes.jsonl and train/ (the source inks of the glyphs).
    """
    from .batch import sample_id, write_inkml
    from .inkml_write import mathwriting_inkml

    root = Path(root)
    for name in ("symbols.jsonl", "synthetic-bboxes.jsonl"):
        if not (root / name).is_file():
            raise BBoxInputError(f"{root / name}: not found (the official rebuild needs it)")
    bank = GlyphBank.load(root / "symbols.jsonl", root / "train")
    folder = Path(out) / split
    folder.mkdir(parents=True, exist_ok=True)
    written, skipped, nbytes = 0, [], 0
    records = _jsonl(root / "synthetic-bboxes.jsonl")
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(unit="ink", desc="rebuild synthetic", total=count)
    for i, (no, rec) in enumerate(records):
        if count is not None and i >= count:
            break
        rng = np.random.default_rng([seed, i, 7])
        try:
            ink = rebuild(rec, bank, rng)
        except SynthError as e:
            skipped.append({"index": i, "line": no, "label": e.label, "reason": e.reason})
        else:
            sid = sample_id(seed, split, "bboxes", i)
            ann = ink.annotations
            text = mathwriting_inkml(ink, sample_id=sid, split=split, label=ann["normalizedLabel"],
                                     raw_label=ann["label"], label_creation=None)
            write_inkml(folder / f"{sid}.inkml", text)
            written += 1
            nbytes += len(text)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if skipped:
        with (folder / "synth_skipped.jsonl").open("w", encoding="utf-8") as f:
            for rec in skipped:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return {"written": written, "skipped": skipped, "out": str(folder), "split": split, "format": "mathwriting",
            "seed": seed, "bytes": nbytes, "glyph_labels": len(bank.glyphs), "glyph_problems": bank.problems}
