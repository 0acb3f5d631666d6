"""One unit of work: a chunk of input files -> one shard file (or a few, over the byte cap).

Runs in a worker process. Every input ends as a row or as a quarantine record; nothing raised by
one file can stop the others. The shard is written atomically, so a killed run leaves either the
whole shard or nothing, and the caller records completion only after the file is in place.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .ink import Ink
from .readers import MAX_BYTES, MAX_POINTS, MIN_POINTS, InkError, read_inkml, target_label
from .render import DEFAULT_ANTIALIAS, DEFAULT_MARGIN, DEFAULT_SIZE, DEFAULT_STROKE_WIDTH, png_bytes, rasterize
from .shards import MAX_SHARD_BYTES, schema, split_by_bytes, strokes_array, write_table
from .sources import Item


@dataclass(frozen=True)
class Options:
    """Everything that decides a shard's bytes (and so must match on --resume)."""

    src: str
    size: tuple[int, int] = DEFAULT_SIZE
    stroke_width: float = DEFAULT_STROKE_WIDTH
    margin: float = DEFAULT_MARGIN
    antialias: str = DEFAULT_ANTIALIAS
    keep_ink: bool = False
    drop_invalid: bool = False
    shard_size: int = 1000
    max_shard_bytes: int = MAX_SHARD_BYTES
    max_bytes: int = MAX_BYTES
    max_points: int = MAX_POINTS
    min_points: int = MIN_POINTS

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["size"] = list(self.size)
        return d


@dataclass
class ChunkResult:
    split: str
    index: int
    n_inputs: int
    first_path: str
    last_path: str
    files: list[str]
    shard_lengths: list[int]
    num_bytes: int
    quarantine: list[dict]
    invalid_labels: int
    error_counts: dict[str, int]

    def to_json(self) -> dict:
        return dict(self.__dict__)


def shard_stem(index: int) -> str:
    return f"data-{index:05d}"


def _glyph_ink(item: Item, opts: Options) -> Ink:
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


def _sample_id(item: Item, ink: Ink, src: str) -> str:
    if item.glyph is not None:
        return f"{item.id_prefix}{item.glyph['sourceSampleId']}-glyph{item.path.rsplit(':', 1)[-1]}"
    if src == "mathwriting" and ink.annotations.get("sampleId"):
        return item.id_prefix + ink.annotations["sampleId"].strip()
    name = item.path  # already carries id_prefix
    return name[:-6] if name.lower().endswith(".inkml") else name


def _load(item: Item, opts: Options) -> Ink:
    if item.glyph is not None:
        return _glyph_ink(item, opts)
    data = item.data
    if data is None:
        try:
            with open(item.file, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size > opts.max_bytes:
                    raise InkError(item.path, "read", f"file is {size} bytes, over the limit of {opts.max_bytes}",
                                   "too-large")
                data = f.read()
        except OSError as e:
            raise InkError(item.path, "read", f"cannot read: {e.strerror or e}", "unreadable") from None
    return read_inkml(data, item.path, max_bytes=opts.max_bytes, max_points=opts.max_points,
                      min_points=opts.min_points)


def convert_chunk(split: str, index: int, items: list[Item], split_dir: str, opts: Options) -> ChunkResult:
    """Convert items to rows, write the shard(s) for this chunk, return what happened."""
    from tokenizer import label_verdict  # imported here so a worker pays for it once, lazily

    cols: dict[str, list] = {k: [] for k in ("png", "latex", "latex_raw", "label_error", "sample_id", "path",
                                             "num_strokes", "num_points", "bbox", "scale", "offset",
                                             "annotations")}
    inks: list[list[np.ndarray]] = []
    quarantine: list[dict] = []
    errors: Counter = Counter()
    invalid = 0
    for item in items:
        try:
            ink = _load(item, opts)
            latex, raw = target_label(ink, opts.src, item.path)
            verdict = label_verdict(latex)
            if verdict is not None:
                invalid += 1
                if opts.drop_invalid:
                    raise InkError(item.path, "label", f"invalid label dropped (--drop-invalid): {verdict}",
                                   "invalid-label")
            try:
                r = rasterize(ink, opts.size, opts.stroke_width, opts.margin, opts.antialias)
            except ValueError as e:
                raise InkError(item.path, "render", str(e), "render") from None
            png = png_bytes(r.image)
        except InkError as e:
            quarantine.append(e.record())
            errors[f"{e.stage}:{e.kind}"] += 1
            continue
        except Exception as e:  # a bug, not bad input: record it and keep the rest of the chunk
            rec = {"path": item.path, "stage": "internal", "kind": type(e).__name__, "error": str(e)}
            quarantine.append(rec)
            errors[f"internal:{type(e).__name__}"] += 1
            continue
        cols["png"].append(png)
        cols["latex"].append(latex)
        cols["latex_raw"].append(raw)
        cols["label_error"].append(verdict)
        cols["sample_id"].append(_sample_id(item, ink, opts.src))
        cols["path"].append(item.path)
        cols["num_strokes"].append(ink.num_strokes)
        cols["num_points"].append(ink.num_points)
        cols["bbox"].append(list(r.bbox))
        cols["scale"].append(r.scale)
        cols["offset"].append(list(r.offset))
        cols["annotations"].append(json.dumps(ink.annotations, ensure_ascii=False, sort_keys=True))
        if opts.keep_ink:
            inks.append(ink.strokes)

    files, lengths, nbytes = [], [], 0
    n = len(cols["png"])
    if n:
        table = _table(cols, inks, split, opts)
        parts = split_by_bytes(table, opts.max_shard_bytes)
        for p_no, part in enumerate(parts):
            name = f"{shard_stem(index)}.arrow" if len(parts) == 1 else f"{shard_stem(index)}-{p_no:02d}.arrow"
            nbytes += write_table(part, Path(split_dir) / name)
            files.append(name)
            lengths.append(part.num_rows)
    return ChunkResult(split=split, index=index, n_inputs=len(items), first_path=items[0].path if items else "",
                       last_path=items[-1].path if items else "", files=files, shard_lengths=lengths,
                       num_bytes=nbytes, quarantine=quarantine, invalid_labels=invalid, error_counts=dict(errors))


def _table(cols: dict[str, list], inks: list, split: str, opts: Options) -> pa.Table:
    n = len(cols["png"])
    sch = schema(opts.keep_ink)
    image = pa.StructArray.from_arrays([pa.array(cols["png"], pa.binary()), pa.nulls(n, pa.string())],
                                       fields=list(sch.field("image").type))
    arrays = {
        "image": image,
        "latex": pa.array(cols["latex"], pa.string()),
        "latex_raw": pa.array(cols["latex_raw"], pa.string()),
        "label_error": pa.array(cols["label_error"], pa.string()),
        "sample_id": pa.array(cols["sample_id"], pa.string()),
        "source": pa.array([opts.src] * n, pa.string()),
        "split": pa.array([split] * n, pa.string()),
        "path": pa.array(cols["path"], pa.string()),
        "num_strokes": pa.array(cols["num_strokes"], pa.int32()),
        "num_points": pa.array(cols["num_points"], pa.int32()),
        "bbox": pa.array(cols["bbox"], pa.list_(pa.float64())),
        "scale": pa.array(cols["scale"], pa.float64()),
        "offset": pa.array(cols["offset"], pa.list_(pa.float64())),
        "annotations": pa.array(cols["annotations"], pa.string()),
    }
    if opts.keep_ink:
        arrays["strokes"] = strokes_array(inks)
    return pa.Table.from_arrays([arrays[f.name] for f in sch], schema=sch)
