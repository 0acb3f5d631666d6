"""Handwriting-like variation: one `Style` per ink (the writer), jitter per glyph, timing per point.

Everything random comes from the caller's `numpy.random.Generator`, so an ink is a pure function of
(label, seed). The whole ink is transformed in a handful of vectorized numpy passes over one
concatenated point array (no per-point Python), which is what makes thousands of inks/s possible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import accumulate

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


def _glyph_maps(items: list, style: Style, rng: np.random.Generator) -> np.ndarray:
    """(10, n_items): per glyph, the quadratic warp (4 numbers) and the 2x2 matrix + offset that map
    its centred template points to ink units x 100, with its jitter and the line's slant, rotation
    and scale folded in. Plain Python: for ~20 glyphs it is 3x faster than numpy on tiny arrays."""
    n = len(items)
    r = rng.standard_normal(9 * n).tolist()
    c, s_ = math.cos(style.rotation), math.sin(style.rotation)
    sl = style.slant
    g11, g12, g21, g22 = c, -c * sl - s_, s_, -s_ * sl + c   # the line map: rotation . slant
    e = 100.0 * style.em                                      # ink units, x100 so rounding is one rint
    x0, y0 = 100.0 * style.origin[0], 100.0 * style.origin[1]
    gs, gr, gh, gsh = style.glyph_scale, style.glyph_rotation, style.glyph_shear, style.glyph_shift
    w = 3.0 * style.wobble
    cos, sin = math.cos, math.sin
    out = []
    for j, it in enumerate(items):
        t = it.tpl
        sx = it.sx if it.sx > 1e-6 else 1e-6
        sy = it.sy if it.sy > 1e-6 else 1e-6
        cx = 0.5 * t.width * sx + it.tx          # glyph centre (layout em)
        cy = 0.5 * t.span * sy + it.ty
        ex = max(t.width * sx, 0.3)              # extents: long bars must not bend or tilt much
        ey = max((t.bottom - t.top) * sy, 0.3)
        b = 9 * j
        k = 1.0 + gs * r[b]                      # size
        th = gr * r[b + 1] / max(ex, 1.0)        # rotation
        sh = gh * r[b + 2]                       # extra slant
        co, si = cos(th) * k, sin(th) * k
        a12, a22 = co * sh - si, co - si * sh
        shift = gsh * min(ex, ey)                # a bar or a dot moves less than a letter
        ox = cx + shift * r[b + 3]
        oy = cy + shift * r[b + 4]
        out.append((w * r[b + 5] * sy / ey, w * r[b + 6] * sy * sy / (sx * ey),   # warp (bends ~ wobble x extent)
                    w * r[b + 7] * sx * sx / (sy * ex), w * r[b + 8] * sx / ex,
                    (g11 * co + g12 * si) * sx * e, (g11 * a12 + g12 * a22) * sy * e,
                    (g21 * co + g22 * si) * sx * e, (g21 * a12 + g22 * a22) * sy * e,
                    (g11 * ox + g12 * oy) * e + x0, (g21 * ox + g22 * oy) * e + y0))
    return np.array(out).T


def _reorder(items, counts, starts, sids, chance, rng):
    """Reverse the stroke order of randomly chosen multi-stroke glyphs: (starts, sids, point order)."""
    flip = rng.random(len(items)) < chance
    chosen = [j for j in np.flatnonzero(flip).tolist() if len(items[j].tpl.starts) > 1]
    if not chosen:
        return starts, sids, None
    n = sum(counts)
    bounds = list(zip(starts, starts[1:] + [n], sids))
    first = list(accumulate((len(it.tpl.starts) for it in items), initial=0))  # first stroke of each item
    for j in chosen:
        a, b = first[j], first[j + 1]
        bounds[a:b] = bounds[a:b][::-1]
    lengths = [b - a for a, b, _ in bounds]
    new_starts = list(accumulate(lengths[:-1], initial=0))
    # point j of new stroke k is old point a_k + (j - new_start_k)
    shift = np.repeat([a - s0 for (a, _, _), s0 in zip(bounds, new_starts)], lengths)
    return new_starts, [sid for _, _, sid in bounds], np.arange(n) + shift


class Marks:
    """One ink, laid out and with all its random draws made, waiting for the numeric pass."""

    __slots__ = ("tpls", "counts", "maps", "starts", "sids", "order", "n", "uu", "style")

    def __init__(self, box: Box, style: Style, rng: np.random.Generator):
        items = box.items
        self.style = style
        self.tpls = [it.tpl for it in items]
        self.counts = counts = [t.n for t in self.tpls]
        self.maps = _glyph_maps(items, style, rng)  # (10, n_items)
        starts: list[int] = []
        sids: list[int] = []
        off = 0
        for it, cnt in zip(items, counts):
            st = it.tpl.starts
            if len(st) == 1:
                starts.append(off)
                sids.append(it.sid)
            else:
                starts.extend(off + s0 for s0 in st)
                sids.extend([it.sid] * len(st))
            off += cnt
        self.n = off
        self.order = None
        if style.reorder > 0:  # some writers put some glyphs' strokes down in another order
            starts, sids, self.order = _reorder(items, counts, starts, sids, style.reorder, rng)
        self.starts, self.sids = starts, sids
        self.uu = rng.random(off + len(starts))  # sampling jitter per point, pause per stroke


def render_batch(marks: list[Marks]) -> list[tuple[list[np.ndarray], list[int]]]:
    """The numeric pass for many inks at once: (strokes, sid of each stroke) per ink.

    Each ink's numbers come only from its own Marks, and every operation is elementwise, so an ink
    is bit-identical whether it is rendered alone or in a batch; batching only amortizes numpy's
    per-call overhead (the cost of a ~300-point ink is mostly that overhead).
    """
    tpls = [t for m in marks for t in m.tpls]
    counts = [c for m in marks for c in m.counts]
    cp = np.concatenate([t.centred for t in tpls], axis=1)  # (2, N) points relative to their glyph's centre
    maps = marks[0].maps if len(marks) == 1 else np.concatenate([m.maps for m in marks], axis=1)
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
    if any(m.order is not None for m in marks):
        order = np.concatenate([m.order + off if m.order is not None else np.arange(off, off + m.n)
                                for m, off in zip(marks, offsets)])
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
    starts, pauses = [], []
    for m, off in zip(marks, offsets):
        sids = m.sids
        long_, short = m.style.pause_ms, 0.3 * m.style.pause_ms
        pauses.append(np.multiply([long_ if k == 0 or sids[k] != sids[k - 1] else short
                                   for k in range(len(sids))], 0.5 + m.uu[m.n:]))
        starts.extend(off + s for s in m.starts)
    dt[starts] = np.concatenate(pauses) if len(pauses) > 1 else pauses[0]
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
