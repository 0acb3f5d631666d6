"""Rasterize an `Ink` to a grayscale image (black ink on white, as the datasets ship), and PNG-encode it.

Cairo (through cairocffi, which cairosvg already brings) draws anti-aliased strokes with round caps
and joins onto an A8 (alpha-only) surface; the whole ink goes to cairo as one prebuilt path (a numpy
buffer in cairo's `cairo_path_data_t` layout), so the cost is one call per ink, not one per point.
The ink is scaled uniformly to fit (aspect ratio kept, as every HMER pipeline does) and centred;
a single-point stroke becomes a dot; an ink with no extent is a centred dot.

Defaults are for GryphOne's 224x224 input: a formula there is a ~60 px band (docs/formats.md), and
strokes of 1 px come out grey and broken while 1.5-2 px anti-aliased strokes read well, so the
default is 2.0 px, with an 8 px margin that keeps round caps off the border. The output is a pure
function of (ink, size, stroke_width, margin, max_glyph): identical input gives identical bytes.

Fitting alone makes glyph size depend on the expression's length: `26` fills the canvas height
while a long formula's symbols are a few pixels tall. `max_glyph` (px, 0 = off) caps the scale so
that the ink's median stroke extent (a stroke's larger bbox side: about one glyph) is at most that
many pixels, so short expressions keep handwriting's proportions instead of being blown up.
"""
from __future__ import annotations

import functools
import math
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from .ink import Ink
from .render_spec import DEFAULT_ANTIALIAS, DEFAULT_MARGIN, DEFAULT_SIZE, DEFAULT_STROKE_WIDTH

DEGENERATE_EXTENT = 1e-6
"""Extents below this share of the coordinates' magnitude are treated as zero (see fit)."""

_MOVE = 0 | (2 << 32)  # cairo_path_data_t header {type=MOVE_TO, length=2} read as one little-endian int64
_LINE = 1 | (2 << 32)
_LITTLE = np.little_endian
_TOLERANCE = 0.25  # curve flattening of round caps/joins, px (cairo's default 0.1 looks the same)
ANTIALIAS = {"fast": "CAIRO_ANTIALIAS_FAST", "best": "CAIRO_ANTIALIAS_DEFAULT", "none": "CAIRO_ANTIALIAS_NONE"}
"""DEFAULT_ANTIALIAS (render_spec.py): cairo's FAST anti-aliasing (4x4 supersampling, 17 coverage levels) costs ~40% less cairo time than
its default (256 levels); on CROHME renders at 2 px the two differ by 0.75/255 per pixel on average,
invisible even zoomed. "best" is there for whoever wants it; "none" gives binary images. Values name
cairo's constants, looked up when drawing."""


@functools.cache
def _cairo():
    """cairocffi's (lib, ffi), loaded at the first drawing. Why lazily: training, evaluation and
    prediction on shards already rendered import this module (sizes, margins) but never draw, so a
    machine without the cairo library (a bare GPU box) can still run them."""
    import cairocffi

    return cairocffi.cairo, cairocffi.ffi


@dataclass(frozen=True)
class Raster:
    """A rendered ink and the mapping used: pixel = ink_xy * scale + offset."""

    image: np.ndarray  # uint8 [H, W], 255 = background
    scale: float
    offset: tuple[float, float]
    bbox: tuple[float, float, float, float]


def parse_size(text: str) -> tuple[int, int]:
    """'224x224' or '112x448' (HxW) -> (H, W)."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size must be HxW like 224x224, got {text!r}") from None
    if not (8 <= h <= 8192 and 8 <= w <= 8192):
        raise ValueError(f"size {text!r} out of range (8..8192 per side)")
    return h, w


def fit(bbox: tuple[float, float, float, float], size: tuple[int, int], stroke_width: float,
        margin: float, max_scale: float = math.inf) -> tuple[float, tuple[float, float]]:
    """Uniform scale and offset putting the bbox in the centre of an HxW canvas, ink edges `margin`
    pixels from the border, the scale at most `max_scale`. A zero-extent (or rounding-level) axis does
    not constrain the scale; an ink with no extent on either axis is drawn at scale 1, a dot."""
    h, w = size
    avail_w = w - 2 * margin - stroke_width
    avail_h = h - 2 * margin - stroke_width
    if avail_w <= 0 or avail_h <= 0:
        raise ValueError(f"margin {margin} and stroke width {stroke_width} leave no room in {h}x{w}")
    x0, y0, x1, y1 = bbox
    ext_w, ext_h = x1 - x0, y1 - y0
    # an extent at the rounding level of its coordinates is no extent: a dot with 1e-9 jitter stays a
    # dot (and a line with jitter across it a line) instead of being stretched over the canvas
    tiny = DEGENERATE_EXTENT * max(1.0, abs(x0), abs(x1), abs(y0), abs(y1))
    scales = [a / e for a, e in ((avail_w, ext_w), (avail_h, ext_h)) if e > tiny]
    scale = min(scales) if scales else 1.0
    if scales and 0 < max_scale < scale:
        scale = max_scale
    if not math.isfinite(scale) or scale <= 0:
        scale = 1.0
    ox = w / 2 - scale * (x0 + x1) / 2
    oy = h / 2 - scale * (y0 + y1) / 2
    return scale, (ox, oy)


def _path_buffer(xy: np.ndarray, counts: np.ndarray, scale: float, offset: tuple[float, float]) -> np.ndarray:
    """The whole ink as cairo path data: per point a header element then a point element, 16 bytes
    each. A stroke of one point becomes a move_to and a line_to to the same place, which cairo
    draws as a dot with round caps."""
    rep = np.ones(len(xy), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rep[starts[counts == 1]] = 2
    counts = np.maximum(counts, 2)
    if (rep == 2).any():
        xy = np.repeat(xy, rep, axis=0)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    buf = np.zeros((len(xy), 4), dtype=np.float64)
    buf[:, 2] = xy[:, 0] * scale + offset[0]
    buf[:, 3] = xy[:, 1] * scale + offset[1]
    header = buf[:, 0].view(np.int64)
    header[:] = _LINE
    header[starts] = _MOVE
    if not _LITTLE:  # the int32 pair {type, length} packs the other way round on big-endian hosts
        header[:] = ((header & 0xFFFFFFFF) << 32) | (header >> 32)
    return buf


def glyph_extent(strokes: list[np.ndarray]) -> float:
    """The median over strokes of a stroke's larger bbox side, in ink units: about one glyph's size
    (a `1`, a `-`, one stroke of `x` alike), robust to a long fraction bar or a cursive run."""
    sides = [float(np.ptp(s[:, :2], axis=0).max()) for s in strokes]
    return float(np.median(sides)) if sides else 0.0


def rasterize(ink: Ink, size: tuple[int, int] = DEFAULT_SIZE, stroke_width: float = DEFAULT_STROKE_WIDTH,
              margin: float = DEFAULT_MARGIN, antialias: str = DEFAULT_ANTIALIAS, max_glyph: float = 0.0) -> Raster:
    """Render `ink` and return the image with the scale/offset used (stored beside it in the shards).

    max_glyph > 0: glyphs (see glyph_extent) are drawn at most this many pixels large."""
    h, w = int(size[0]), int(size[1])
    try:
        aa = ANTIALIAS[antialias]
    except KeyError:
        raise ValueError(f"antialias must be one of {sorted(ANTIALIAS)}, got {antialias!r}") from None
    strokes = [s for s in ink.strokes if len(s)]
    if not strokes:
        raise ValueError("ink has no points")
    xy = np.concatenate([s[:, :2] for s in strokes]) if len(strokes) > 1 else strokes[0][:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    bbox = (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))
    extent = glyph_extent(strokes) if max_glyph > 0 else 0.0
    max_scale = max_glyph / extent if extent > 0 else math.inf
    scale, offset = fit(bbox, (h, w), stroke_width, margin, max_scale)
    image = _draw(_path_buffer(xy, np.array([len(s) for s in strokes]), scale, offset), h, w, stroke_width, aa)
    return Raster(image=image, scale=float(scale), offset=(float(offset[0]), float(offset[1])),
                  bbox=bbox)


def rasterize_at(ink: Ink, scale: float, stroke_width: float = DEFAULT_STROKE_WIDTH, margin: float = DEFAULT_MARGIN,
                 antialias: str = DEFAULT_ANTIALIAS) -> Raster:
    """Render `ink` at a fixed scale (pixels per ink unit) on a canvas cut to it: `margin` px around the
    ink's outer edge. For printed formulas, whose glyphs must have one size whatever the formula's
    length (`rasterize` fits every ink to a given canvas instead)."""
    try:
        aa = ANTIALIAS[antialias]
    except KeyError:
        raise ValueError(f"antialias must be one of {sorted(ANTIALIAS)}, got {antialias!r}") from None
    if not (scale > 0 and math.isfinite(scale)) or margin < 0 or stroke_width <= 0:
        raise ValueError("scale and stroke_width must be > 0 and margin >= 0")
    strokes = [s for s in ink.strokes if len(s)]
    if not strokes:
        raise ValueError("ink has no points")
    xy = np.concatenate([s[:, :2] for s in strokes]) if len(strokes) > 1 else strokes[0][:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    pad = margin + stroke_width / 2
    w = int(math.ceil((hi[0] - lo[0]) * scale + 2 * pad))
    h = int(math.ceil((hi[1] - lo[1]) * scale + 2 * pad))
    if w * h > 40_000_000:
        raise ValueError(f"a {h}x{w} canvas is too large (scale {scale:g})")
    offset = (pad - float(lo[0]) * scale, pad - float(lo[1]) * scale)
    image = _draw(_path_buffer(xy, np.array([len(s) for s in strokes]), scale, offset), h, w, stroke_width, aa)
    return Raster(image=image, scale=float(scale), offset=offset,
                  bbox=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])))


def _draw(buf: np.ndarray, h: int, w: int, stroke_width: float, aa: str) -> np.ndarray:
    """Stroke a prebuilt path buffer onto an HxW A8 surface: uint8 [H, W], 255 = background. `aa` names
    cairo's anti-aliasing constant (an ANTIALIAS value)."""
    _lib, _ffi = _cairo()
    aa = getattr(_lib, aa)
    surface = _lib.cairo_image_surface_create(_lib.CAIRO_FORMAT_A8, w, h)
    ctx = _lib.cairo_create(surface)
    try:
        _lib.cairo_set_line_width(ctx, float(stroke_width))
        _lib.cairo_set_line_cap(ctx, _lib.CAIRO_LINE_CAP_ROUND)
        _lib.cairo_set_line_join(ctx, _lib.CAIRO_LINE_JOIN_ROUND)
        _lib.cairo_set_source_rgba(ctx, 0.0, 0.0, 0.0, 1.0)
        _lib.cairo_set_tolerance(ctx, _TOLERANCE)
        _lib.cairo_set_antialias(ctx, aa)
        path = _ffi.new("cairo_path_t *")
        path.status = _lib.CAIRO_STATUS_SUCCESS
        path.data = _ffi.cast("cairo_path_data_t *", _ffi.from_buffer(buf))
        path.num_data = buf.shape[0] * 2
        _lib.cairo_append_path(ctx, path)
        _lib.cairo_stroke(ctx)
        _lib.cairo_surface_flush(surface)
        status = _lib.cairo_status(ctx)
        if status != _lib.CAIRO_STATUS_SUCCESS:
            raise RuntimeError(f"cairo error {_ffi.string(_lib.cairo_status_to_string(status)).decode()}")
        stride = _lib.cairo_image_surface_get_stride(surface)
        data = _ffi.buffer(_lib.cairo_image_surface_get_data(surface), stride * h)
        alpha = np.frombuffer(data, dtype=np.uint8).reshape(h, stride)[:, :w]
        image = 255 - alpha  # copies out of cairo's memory before it is freed
    finally:
        _lib.cairo_destroy(ctx)
        _lib.cairo_surface_destroy(surface)
    return image


def render_ink(ink: Ink, size: tuple[int, int] = DEFAULT_SIZE, stroke_width: float = DEFAULT_STROKE_WIDTH,
               margin: float = DEFAULT_MARGIN, antialias: str = DEFAULT_ANTIALIAS, max_glyph: float = 0.0) -> np.ndarray:
    """uint8 [H, W] grayscale image, 255 = background, ink dark, aspect kept, centred."""
    return rasterize(ink, size, stroke_width, margin, antialias, max_glyph).image


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_bytes(arr: np.ndarray, level: int = 1) -> bytes:
    """Encode a uint8 [H, W] array as an 8-bit grayscale PNG. Deterministic: same array, same bytes.

    zlib level 1 with the run-length strategy over "Up"-filtered rows (blank rows become zero runs):
    measured on CROHME renders it is faster than level-1 LZ77 and the files come out smaller
    (~2.9 kB at 224x224). Splicing precompressed blank-row blocks was tried and was slower."""
    a = np.ascontiguousarray(arr, dtype=np.uint8)
    if a.ndim != 2:
        raise ValueError(f"png_bytes wants a 2-D uint8 array, got shape {a.shape}")
    h, w = a.shape
    rows = np.empty((h, w + 1), dtype=np.uint8)
    rows[:, 0] = 2  # filter type Up
    rows[0, 0] = 0  # the first row has nothing above it
    rows[0, 1:] = a[0]
    np.subtract(a[1:], a[:-1], out=rows[1:, 1:])  # uint8 wraps mod 256, as PNG specifies
    packer = zlib.compressobj(level, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    idat = packer.compress(rows.tobytes()) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
