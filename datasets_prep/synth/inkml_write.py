"""Serialize an `Ink` as InkML exactly the way MathWriting or CROHME files are written.

MathWriting: one `<ink>` with the default InkML namespace, no XML declaration, annotations first
(`label`, `splitTagOriginal`, `inkCreationMethod`, [`labelCreationMethod`], `sampleId`,
`normalizedLabel`), then `<traceFormat>` with X Y T and one `<trace>` per stroke as
`x y t,x y t` (2 decimals for X/Y, one for T).

CROHME (2014 style): `<traceFormat>` X Y first, `truth` as `$...$` with space-tokenized LaTeX, `UI`,
`writer`, integer `x y, x y` traces on their own lines, and the symbol segmentation as a top-level
`traceGroup` of per-symbol `traceGroup`s (truth + `traceView traceDataRef`).
"""
from __future__ import annotations

from xml.sax.saxutils import escape

import numpy as np

from ..ink import Ink

_NS = "http://www.w3.org/2003/InkML"


def _mw_trace(s: np.ndarray) -> str:
    if s.shape[1] < 3:  # a source without T: time 0, so the file still has the X Y T format
        s = np.column_stack([s[:, :2], np.zeros(len(s))])
    flat = s[:, :3].ravel().tolist()
    return ("%.2f %.2f %.1f," * len(s) % tuple(flat))[:-1]


def mathwriting_inkml(ink: Ink, *, sample_id: str, split: str, label: str, raw_label: str | None = None,
                      creation: str = "boundingBoxes", label_creation: str | None = None) -> str:
    """The text of a MathWriting-style `.inkml` file for `ink`.

    label goes to `normalizedLabel`, and to `label` too unless raw_label is given.
    """
    lab = escape(label)
    raw = lab if raw_label is None else escape(raw_label)
    parts = [f'<ink xmlns="{_NS}">\n',
             f'  <annotation type="label">{raw}</annotation>\n',
             f'  <annotation type="splitTagOriginal">{escape(split)}</annotation>\n',
             f'  <annotation type="inkCreationMethod">{creation}</annotation>\n']
    if label_creation:
        parts.append(f'  <annotation type="labelCreationMethod">{label_creation}</annotation>\n')
    parts += [f'  <annotation type="sampleId">{sample_id}</annotation>\n',
              f'  <annotation type="normalizedLabel">{lab}</annotation>\n',
              '  <traceFormat>\n',
              '    <channel name="X" type="decimal" />\n',
              '    <channel name="Y" type="decimal" />\n',
              '    <channel name="T" type="decimal" units="ms" />\n',
              '  </traceFormat>\n']
    for i, s in enumerate(ink.strokes):
        parts.append(f'  <trace id="{i}">{_mw_trace(s)}</trace>\n')
    parts.append("</ink>\n")
    return "".join(parts)


def _crohme_trace(s: np.ndarray) -> str:
    ints = np.rint(s[:, :2]).astype(np.int64).ravel().tolist()
    return ("%d %d, " * len(s) % tuple(ints))[:-2]


def crohme_inkml(ink: Ink, *, ui: str, truth_spaced: str, stroke_symbols: list[int],
                 symbol_labels: list[str], writer: str = "gryphone-synth") -> str:
    """The text of a CROHME-2014-style `.inkml` file, with the per-symbol segmentation."""
    parts = [f'<ink xmlns="{_NS}">\n',
             '<traceFormat>\n',
             '<channel name="X" type="decimal"/>\n',
             '<channel name="Y" type="decimal"/>\n',
             '</traceFormat>\n',
             f'<annotation type="truth">${escape(truth_spaced)}$</annotation>\n',
             f'<annotation type="UI">{escape(ui)}</annotation>\n',
             f'<annotation type="writer">{escape(writer)}</annotation>\n']
    for i, s in enumerate(ink.strokes):
        parts.append(f'<trace id="{i}">\n{_crohme_trace(s)}\n</trace>\n')
    n = len(ink.strokes)
    groups: dict[int, list[int]] = {}
    for stroke, sid in enumerate(stroke_symbols):
        groups.setdefault(sid, []).append(stroke)
    parts.append(f'<traceGroup xml:id="{n}">\n\t<annotation type="truth">Segmentation</annotation>\n')
    for k, sid in enumerate(sorted(groups)):
        parts.append(f'\t<traceGroup xml:id="{n + 1 + k}">\n'
                     f'\t\t<annotation type="truth">{escape(symbol_labels[sid])}</annotation>\n')
        for stroke in groups[sid]:
            parts.append(f'\t\t<traceView traceDataRef="{stroke}"/>\n')
        parts.append('\t</traceGroup>\n')
    parts.append('</traceGroup>\n</ink>\n')
    return "".join(parts)

