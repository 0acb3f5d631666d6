"""Recognize a formula in one line:

    from train.api import read
    read("formula.png").latex               # the shipped default model, its validated decoder
    read(strokes, ckpt="runs/me/ckpt.pt")   # strokes: [[(x, y), ...], ...], y down
    r = read(pil_image); r.latex, r.confidence, r.steps

The input is a path (image or InkML), image bytes, a PIL image, a NumPy array (H x W or H x W x C,
uint8 or float in [0, 1], dark ink on light paper) or strokes. It reaches the model exactly as on the
page and in `train.predict` (the same Backend: the checkpoint's RenderSpec for ink, the image intake
for pictures). The model is loaded once per (ckpt, device) and kept.
"""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from datasets_prep.local_files import MAX_BYTES, FileRefused, read_capped

from .predict_inputs import load_bytes
from .serve.backend import Backend

Strokes = Sequence[Sequence[Sequence[float]]]
Source = Union[str, Path, bytes, np.ndarray, Strokes, Any]  # Any: a PIL image (PIL is imported only when used)


@dataclass(frozen=True)
class Result:
    """latex: the reading (always parses; repaired when the decoder's own output did not).
    confidence: in [0, 1] (GryphOne: geometric mean of the last step's position confidences; the token
    recognizers: the sequence's). steps: the LaTeX after each refinement step (GryphOne), else one.
    step_confidence: each step's per-position confidences (GryphOne). model: which weights read it."""
    latex: str
    confidence: float | None
    steps: list[str]
    step_confidence: list[list[float | None]]
    repaired: bool
    model: str
    ms: float


@functools.lru_cache(maxsize=4)
def _backend(ckpt: str | None, device: str, use: str = "read") -> Backend:
    return Backend.load(ckpt, device, use=use)


def read(source: Source, ckpt: str | Path | None = None, *, sampler: str | None = None, T: int | None = None,
         device: str = "cpu", printed: bool = False) -> Result:
    """One formula -> Result. `ckpt`: a checkpoint, an ONNX export folder or a shipped model's name
    (default: the shipped default; with `printed=True`, the shipped printed-formula model). `sampler` / `T`: the decoder (default: the shipped model's own, else
    remask T=10 for GryphOne and greedy for the others). ValueError names what is wrong with the input;
    model.CheckpointError what is wrong with the checkpoint."""
    from train.serve.backend import BackendError
    from model import CheckpointError

    try:
        backend = _backend(None if ckpt is None else str(ckpt), device, "printed" if printed else "read")
    except BackendError as exc:
        raise CheckpointError(str(exc)) from None
    canvas = _canvas(backend, source)
    ship = backend.shipped
    reading = backend.recognize(canvas, T=T or (ship.T if ship else 10), sampler=sampler)
    return Result(reading.latex, reading.confidence, [s.latex for s in reading.steps],
                  [s.confidence for s in reading.steps], reading.repaired, backend.source, reading.ms)


def _canvas(backend: Backend, source: Source) -> np.ndarray:
    if isinstance(source, (str, Path, bytes)):  # as train.predict reads a file: InkML drawn, images fitted
        name = "<bytes>" if isinstance(source, bytes) else str(source)
        try:
            data = source if isinstance(source, bytes) else read_capped(Path(source), MAX_BYTES)
        except FileRefused as exc:
            raise ValueError(str(exc)) from None
        return load_bytes(name, data, backend.render)[0][0].numpy()
    if isinstance(source, np.ndarray):
        return backend.canvas_from_image(_png(_to_uint8(source)))
    if hasattr(source, "save") and hasattr(source, "mode"):  # a PIL image
        buf = io.BytesIO()
        source.save(buf, format="PNG")
        return backend.canvas_from_image(buf.getvalue())
    try:
        strokes = [np.asarray(s, dtype=np.float64) for s in source]
    except (TypeError, ValueError):
        raise ValueError(f"cannot read a {type(source).__name__}: give a path, image bytes, a PIL image, "
                         "an array or strokes") from None
    if not strokes or any(s.ndim != 2 or s.shape[1] < 2 or len(s) == 0 for s in strokes):
        raise ValueError("strokes must be a non-empty list of [n, 2] point lists")
    return backend.canvas_from_strokes([s[:, :2] for s in strokes])


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    if arr.ndim == 3:
        arr = arr[..., :3].mean(axis=2) if arr.shape[2] >= 3 else arr[..., 0]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"an image array must be H x W or H x W x C, not shape {arr.shape}")
    if arr.dtype != np.uint8:
        arr = np.asarray(arr, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise ValueError("the image array holds NaN or infinity")
        arr = np.clip(arr * 255.0 if arr.max() <= 1.0 else arr, 0, 255).round().astype(np.uint8)
    return arr


def _png(arr: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr, mode="L").save(buf, format="PNG")
    return buf.getvalue()
