"""One unit of work: a chunk of items -> one shard file (or a few, over the byte cap).

Runs in a worker process and never asks which dataset it converts: the source module
(datasets_prep/sources/) loads each item into a Sample, and the worker renders its ink or fits its
raster with the same canvas and margin, checks its label with the tokenizer and writes the row.
Every input ends as a row or as a quarantine record; nothing raised by one file can stop the others.
The shard is written atomically, so a killed run leaves either the whole shard or nothing, and the
caller records completion only after the file is in place.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from . import sources
from .image_intake import fit_image, ink_darkness
from .readers import MAX_BYTES, MAX_POINTS, MIN_POINTS, InkError
from .render import png_bytes, rasterize
from .render_spec import RenderSpec
from .shards import MAX_SHARD_BYTES, schema, split_by_bytes, strokes_array, write_table
from .sources import Item, Sample


@dataclass(frozen=True)
class Options:
    """Everything that decides a shard's bytes (and so must match on --resume)."""

    src: str
    render: RenderSpec = RenderSpec()  # how an ink is drawn or an image fitted (the part a model must know)
    keep_ink: bool = False
    drop_invalid: bool = False
    shard_size: int = 1000
    max_shard_bytes: int = MAX_SHARD_BYTES
    max_bytes: int = MAX_BYTES
    max_points: int = MAX_POINTS
    min_points: int = MIN_POINTS

    def to_json(self) -> dict:
        """Flat, the render spec's fields beside the rest (what --resume compares and summary.json holds)."""
        d = {k: v for k, v in self.__dict__.items() if k != "render"}
        return {**d, **self.render.to_dict()}


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
    source = sources.get(opts.src)
    for item in items:
        try:
            sample = source.load(item, opts)
            verdict = label_verdict(sample.latex)
            if verdict is not None:
                invalid += 1
                if opts.drop_invalid:
                    raise InkError(item.path, "label", f"invalid label dropped (--drop-invalid): {verdict}",
                                   "invalid-label")
            image, geometry = _raster(item, sample, opts)
            png = png_bytes(image)
        except InkError as e:
            quarantine.append(e.record())
            errors[f"{e.stage}:{e.kind}"] += 1
            continue
        except Exception as e:  # a bug, not bad input: record it and keep the rest of the chunk
            rec = {"path": item.path, "stage": "internal", "kind": type(e).__name__, "error": str(e)}
            quarantine.append(rec)
            errors[f"internal:{type(e).__name__}"] += 1
            continue
        ink = sample.ink
        cols["png"].append(png)
        cols["latex"].append(sample.latex)
        cols["latex_raw"].append(sample.latex_raw)
        cols["label_error"].append(verdict)
        cols["sample_id"].append(source.sample_id(item, sample))
        cols["path"].append(item.path)
        cols["num_strokes"].append(ink.num_strokes if ink is not None else None)
        cols["num_points"].append(ink.num_points if ink is not None else None)
        cols["bbox"].append(list(geometry[0]))
        cols["scale"].append(geometry[1])
        cols["offset"].append(list(geometry[2]))
        cols["annotations"].append(json.dumps(sample.annotations, ensure_ascii=False, sort_keys=True))
        if opts.keep_ink:
            inks.append(ink.strokes if ink is not None else [])

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


def _raster(item: Item, sample: Sample, opts: Options) -> tuple[np.ndarray, tuple]:
    """uint8 [H, W] black on white, and (bbox, scale, offset): an ink rendered, or a raster fitted."""
    try:
        if sample.ink is not None:
            spec = opts.render
            r = rasterize(sample.ink, spec.size, spec.stroke_width, spec.margin, spec.antialias, spec.max_glyph)
            return r.image, (r.bbox, r.scale, r.offset)
        f = fit_image(ink_darkness(sample.pixels, opts.render.binarize), opts.render.size, opts.render.margin)
    except ValueError as e:  # ImageError included: this input cannot be drawn
        stage, kind = ("render", "render") if sample.ink is not None else ("image", "no-ink")
        raise InkError(item.path, stage, str(e), kind) from None
    image = np.rint((1.0 - f.canvas) * 255.0).astype(np.uint8)
    return image, (f.bbox, f.scale, f.offset)


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
