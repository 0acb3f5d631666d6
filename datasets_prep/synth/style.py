"""Handwriting-like variation: one `Style` per ink (the writer), jitter per glyph, timing per point.

Everything random comes from the caller's `numpy.random.Generator`, so an ink is a pure function of
(label, seed). The whole ink is transformed in a handful of vectorized numpy passes over one
concatenated point array (no per-point Python), which is what makes thousands of inks/s possible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import accumulate, chain
from operator import attrgetter

import numpy as np

from .layout import Box


@dataclass(frozen=True)
class Style:
    """How one writer writes one expression. Lengths in em unless noted; angles in radians."""

    font: str = "futural"          # Hershey face for letters: "futural" (print) or "scripts" (cursive)
    em: float = 110.0              # ink units per em (MathWriting human inks: ~100-200)
    slant: float = 0.1             # global shear: x += slant * height above baseline
    rotation: float = 0.0          # global rotation of the line
    gap: float = 0.14              # base horizontal gap between neighbouring symbols
    gap_jitter: float = 0.3        # relative spread of that gap
    glyph_scale: float = 0.06      # per-glyph relative size spread
    glyph_rotation: float = 0.05   # per-glyph rotation spread
    glyph_shear: float = 0.06      # per-glyph extra slant spread
    glyph_shift: float = 0.04      # per-glyph offset spread
    wobble: float = 0.012          # amplitude of the smooth per-glyph warp (tremor, imperfect curves)
    drift: float = 0.06            # amplitude of the baseline's slow wave
    drift_wavelength: float = 9.0  # wavelength of that wave
    drift_phase: float = 0.0
    dt_ms: float = 8.0             # time between digitizer samples
    pause_ms: float = 280.0        # mean pen-up time between symbols
    origin: tuple[float, float] = (0.0, 0.0)  # ink units of the baseline start
    reorder: float = 0.0           # chance that a multi-stroke glyph's strokes come in reverse order

    @classmethod
    def sample(cls, rng: np.random.Generator) -> "Style":
        """A random writer: print or cursive hand, size, slant, spacing, shakiness, speed."""
        u = rng.random(19).tolist()
        return cls(
            "scripts" if u[0] < 0.2 else "futural",  # font
            80.0 + 90.0 * u[1],                      # em
            -0.05 + 0.3 * u[2],                      # slant
            (u[3] - 0.5) * 0.06,                     # rotation
            0.06 + 0.2 * u[4],                       # gap
            0.15 + 0.35 * u[5],                      # gap_jitter
            0.03 + 0.07 * u[6],                      # glyph_scale
            0.02 + 0.06 * u[7],                      # glyph_rotation
            0.02 + 0.08 * u[8],                      # glyph_shear
            0.015 + 0.05 * u[9],                     # glyph_shift
            0.004 + 0.02 * u[10],                    # wobble
            0.1 * u[11],                             # drift
            5.0 + 10.0 * u[12],                      # drift_wavelength
            2 * np.pi * u[13],                       # drift_phase
            6.0 + 5.0 * u[14],                       # dt_ms
            120.0 + 300.0 * u[15],                   # pause_ms
            (round(400.0 * u[16], 2), round(100.0 + 300.0 * u[17], 2)),  # origin
            0.3 * u[18],                             # reorder: '=' bottom bar first, '+' across first ...
        )

    @classmethod
    def neat(cls, **overrides) -> "Style":
        """No jitter at all: the font as laid out (for tests and for seeing the layout itself)."""
        base = cls(slant=0.0, rotation=0.0, gap_jitter=0.0, glyph_scale=0.0, glyph_rotation=0.0,
                   glyph_shear=0.0, glyph_shift=0.0, wobble=0.0, drift=0.0, reorder=0.0)
        return replace(base, **overrides)


def _line_map(style: Style) -> tuple:
    """One ink's per-line numbers for _glyph_maps: the line map (rotation . slant), ink units x 100
    (so rounding is one rint), the origin, and the per-glyph jitter spreads."""
    c, s_ = math.cos(style.rotation), math.sin(style.rotation)
    sl = style.slant
    return (c, -c * sl - s_, s_, -s_ * sl + c, 100.0 * style.em, 100.0 * style.origin[0],
            100.0 * style.origin[1], style.glyph_scale, style.glyph_rotation, style.glyph_shear,
            style.glyph_shift, 3.0 * style.wobble)


def _glyph_maps(marks: list) -> np.ndarray:
    """(10, n_items) over all inks of a batch: per glyph, the quadratic warp (4 numbers) and the 2x2
    matrix + offset that map its centred template points to ink units x 100, with its jitter and the
    line's slant, rotation and scale folded in. Vectorized over every glyph of the batch; every
    operation is elementwise, so an ink's numbers do not depend on the batch it is in."""
    geo = np.array([g for m in marks for g in m.geo]).T                 # sx, sy, tx, ty (layout em)
    width, span, height = np.array([t.geom for m in marks for t in m.tpls]).T
    r = (marks[0].r if len(marks) == 1 else np.concatenate([m.r for m in marks])).reshape(-1, 9).T
    g11, g12, g21, g22, e, x0, y0, gs, gr, gh, gsh, w = np.repeat(
        np.array([m.line for m in marks]), [len(m.tpls) for m in marks], axis=0).T
    sx = np.maximum(geo[0], 1e-6)
    sy = np.maximum(geo[1], 1e-6)
    cx = 0.5 * width * sx + geo[2]                  # glyph centre (layout em)
    cy = 0.5 * span * sy + geo[3]
    ex = np.maximum(width * sx, 0.3)                # extents: long bars must not bend or tilt much
    ey = np.maximum(height * sy, 0.3)
    k = 1.0 + gs * r[0]                             # size
    th = gr * r[1] / np.maximum(ex, 1.0)            # rotation
    sh = gh * r[2]                                  # extra slant
    co, si = np.cos(th) * k, np.sin(th) * k
    a12, a22 = co * sh - si, co - si * sh
    shift = gsh * np.minimum(ex, ey)                # a bar or a dot moves less than a letter
    ox = cx + shift * r[3]
    oy = cy + shift * r[4]
    return np.stack([w * r[5] * sy / ey, w * r[6] * sy * sy / (sx * ey),   # warp (bends ~ wobble x extent)
                     w * r[7] * sx * sx / (sy * ex), w * r[8] * sx / ex,
                     (g11 * co + g12 * si) * sx * e, (g11 * a12 + g12 * a22) * sy * e,
                     (g21 * co + g22 * si) * sx * e, (g21 * a12 + g22 * a22) * sy * e,
                     (g11 * ox + g12 * oy) * e + x0, (g21 * ox + g22 * oy) * e + y0])


def _reorder(tpls, offsets, starts, chance, rng):
    """Reverse the stroke order of randomly chosen multi-stroke glyphs: (starts, moves or None), a
    move being (point offset, the glyph's points in their new order) for render_batch to apply.

    Each glyph's strokes stay together under one sid, so only its points and stroke starts move."""
    flip = rng.random(len(tpls)) < chance
    chosen = [j for j in np.flatnonzero(flip).tolist() if len(tpls[j].starts) > 1]
    if not chosen:
        return starts, None
    first = list(accumulate(map(len, map(_STARTS, tpls)), initial=0))  # first stroke of each glyph
    moves = []
    for j in chosen:
        rev_starts, rev_points = tpls[j].rev_order
        off = offsets[j]
        starts[first[j]:first[j + 1]] = [off + s0 for s0 in rev_starts]
        moves.append((off, rev_points))
    return starts, moves


_STARTS = attrgetter("starts")


class Marks:
    """One ink, laid out and with all its random draws made, waiting for the numeric pass."""

    __slots__ = ("tpls", "counts", "geo", "r", "line", "starts", "sids", "order", "n", "uu", "style")

    def __init__(self, box: Box, style: Style, rng: np.random.Generator):
        items = box.items
        self.style = style
        self.tpls = tpls = [it[0] for it in items]
        self.counts = counts = [t.n for t in tpls]
        self.geo = [it[1:5] for it in items]  # sx, sy, tx, ty of each glyph, for _glyph_maps
        self.r = rng.standard_normal(9 * len(items))  # its jitter draws
        self.line = _line_map(style)
        offsets = list(accumulate(counts, initial=0))
        starts: list[int] = []
        sids: list[int] = []
        for it, t, off in zip(items, tpls, offsets):
            st = t.starts
            if len(st) == 1:
                starts.append(off)
                sids.append(it[5])
            else:
                starts.extend([off + s0 for s0 in st])
                sids.extend([it[5]] * len(st))
        self.n = offsets[-1]
        self.order = None
        if style.reorder > 0:  # some writers put some glyphs' strokes down in another order
            starts, self.order = _reorder(tpls, offsets, starts, style.reorder, rng)
        self.starts, self.sids = starts, sids
        self.uu = rng.random(self.n + len(starts))  # sampling jitter per point, pause per stroke


def render_batch(marks: list[Marks]) -> list[tuple[list[np.ndarray], list[int]]]:
    """The numeric pass for many inks at once: (strokes, sid of each stroke) per ink.

    Each ink's numbers come only from its own Marks, and every operation is elementwise, so an ink
    is bit-identical whether it is rendered alone or in a batch; batching only amortizes numpy's
    per-call overhead (the cost of a ~300-point ink is mostly that overhead).
    """
    tpls = [t for m in marks for t in m.tpls]
    counts = [c for m in marks for c in m.counts]
    cp = np.concatenate([t.centred for t in tpls], axis=1)  # (2, N) points relative to their glyph's centre
    maps = _glyph_maps(marks)
    P = np.repeat(maps, counts, axis=1)  # per-glyph maps, per point
    u, v = cp[0], cp[1]
    uv = u * v
    p = u + P[0] * uv + P[1] * (v * v)
    q = v + P[2] * (u * u) + P[3] * uv
    sizes = [m.n for m in marks]
    n = sum(sizes)
    rows = np.empty((3, n))  # X, Y, T rows (contiguous), transposed into (n, 3) at the end
    X, Y, T = rows[0], rows[1], rows[2]
    np.multiply(P[4], p, out=X)
    X += P[5] * q
    X += P[8]
    np.multiply(P[6], p, out=Y)
    Y += P[7] * q
    Y += P[9]
    # the baseline's slow wave, per point so long bars follow it like the letters
    amp = [100.0 * m.style.em * m.style.drift for m in marks]
    if any(amp):
        freq = [2 * np.pi / (100.0 * m.style.em * m.style.drift_wavelength) for m in marks]
        phase = [m.style.drift_phase for m in marks]
        if len(marks) == 1:
            Y += amp[0] * np.sin(X * freq[0] + phase[0])
        else:
            Y += np.repeat(amp, sizes) * np.sin(X * np.repeat(freq, sizes) + np.repeat(phase, sizes))
    xy = rows[:2]
    np.rint(xy, out=xy)
    xy /= 100.0  # 2 decimals, as MathWriting writes them (division: exact like float("12.34"))
    xy += 0.0  # no negative zeros (a file would say "-0.00")
    offsets = list(accumulate(sizes, initial=0))
    if any(m.order is not None for m in marks):  # reordered strokes (style.reorder)
        order = np.arange(n)
        for m, off in zip(marks, offsets):
            if m.order is not None:
                for o, rev in m.order:
                    order[off + o:off + o + len(rev)] = rev + (off + o)
        rows[:2] = rows[:2, order]

    # timing: steady sampling inside a stroke, a pen-up pause before each stroke (longer between symbols)
    dt = np.concatenate([m.uu[:m.n] for m in marks]) if len(marks) > 1 else marks[0].uu[:n].copy()
    if len(marks) == 1:
        dt *= 0.3 * marks[0].style.dt_ms
        dt += 0.85 * marks[0].style.dt_ms
    else:
        dms = np.repeat([m.style.dt_ms for m in marks], sizes)
        dt *= 0.3 * dms
        dt += 0.85 * dms
    nst = [len(m.sids) for m in marks]
    sid = np.fromiter(chain.from_iterable(m.sids for m in marks), np.int64, sum(nst))
    new_symbol = np.empty(len(sid), dtype=bool)  # a stroke that starts a symbol (or an ink) waits longer
    np.not_equal(sid[1:], sid[:-1], out=new_symbol[1:])
    new_symbol[list(accumulate(nst[:-1], initial=0))] = True
    long_ = np.repeat([m.style.pause_ms for m in marks], nst)
    tail = marks[0].uu[marks[0].n:] if len(marks) == 1 else np.concatenate([m.uu[m.n:] for m in marks])
    starts = np.fromiter(chain.from_iterable(m.starts for m in marks), np.int64, len(sid))
    starts += np.repeat(offsets[:-1], nst)
    dt[starts] = np.where(new_symbol, long_, 0.3 * long_) * (0.5 + tail)
    out = []
    for a, b in zip(offsets, offsets[1:]):
        dt[a] = 0.0
        np.cumsum(dt[a:b], out=T[a:b])
    np.rint(T, out=T)  # whole milliseconds
    arr = rows.T.copy()
    for m, off in zip(marks, offsets):
        ends = m.starts[1:] + [m.n]
        out.append(([arr[off + a:off + b] for a, b in zip(m.starts, ends)], m.sids))
    return out


def render_strokes(box: Box, style: Style, rng: np.random.Generator) -> tuple[list[np.ndarray], list[int]]:
    """Turn laid-out items into ink strokes (n, 3) = X Y T; returns (strokes, sid of each stroke).

    Per glyph: a random affine jitter about its centre and a random quadratic warp (bent strokes,
    uneven curves); per line: baseline drift, slant, rotation; then ink units and pen timing. All the
    per-glyph and per-line maps are folded into 10 numbers per glyph, so each point costs ~20 flops.
    """
    return render_batch([Marks(box, style, rng)])[0]
