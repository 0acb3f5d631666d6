"""The symbol segmentation of an InkML file: which strokes make which symbol, and what it is.

CROHME files (every year) hold it as a top-level `traceGroup` of per-symbol `traceGroup`s, each with
an `annotation type="truth"` (the symbol, spelled CROHME's way: `\\lt`, `COMMA`, `\\sin`) and
`traceView traceDataRef=...` references to the `id`s of its traces. The real files have references to
missing traces, empty groups and strokes in two symbols (docs/datasets.md); each such symbol is
dropped and named in `problems`, never guessed, and the rest of the file is kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tokenizer import LatexError, normalize, tokenize

from ..ink import Ink
from ..readers import INKML_NS, read_inkml_tree

# CROHME symbol labels that are not LaTeX the tokenizer reads as the symbol drawn.
CROHME_NAMES = {"COMMA": ",", "comma": ",", "COMMAT": ",", "\\frac": "-", "\\over": "-", "\\dots": "\\ldots",
                "\\lbrace": "\\{", "\\rbrace": "\\}", "\\lt": "<", "\\gt": ">", "\\gtr": ">", "\\less": "<"}


@dataclass
class Segmented:
    """An ink and its symbols: (label as written, stroke indices into ink.strokes) per symbol."""

    ink: Ink
    symbols: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per dropped symbol


def symbol_token(label: str) -> str | None:
    """The tokenizer's token for a segmented symbol's label (`\\lt` -> `<`, `COMMA` -> `,`, `\\le` ->
    `\\leq`), or None when the label is not exactly one symbol token (counted by the bank as unmapped)."""
    text = label.strip()
    if len(text) > 2 and text[0] == "$" and text[-1] == "$":
        text = text[1:-1].strip()
    text = CROHME_NAMES.get(text, text)
    if not text:
        return None
    try:
        toks = tokenize(normalize(text))
    except (LatexError, RecursionError):
        return None
    if len(toks) != 1 or toks[0] in ("{", "}", "^", "_", "&", "\\\\"):
        return None
    return toks[0]


def read_segmented(data: bytes, path: str) -> Segmented:
    """Parse one InkML file with its symbol segmentation (raises readers.InkError as read_inkml does).

    A file without any symbol traceGroup gives an empty `symbols` list."""
    ink, root, ids = read_inkml_tree(data, path)
    ns = f"{{{INKML_NS}}}" if root.tag == f"{{{INKML_NS}}}ink" else ""
    where = {tid: i for i, tid in enumerate(ids) if tid is not None}
    out = Segmented(ink)
    used: dict[int, str] = {}
    for top in root.iterchildren(f"{ns}traceGroup"):
        for group in top.iter(f"{ns}traceGroup"):
            views = list(group.iterchildren(f"{ns}traceView"))
            if group is top and not views:
                continue
            label = _truth(group, ns)
            if label is None:
                out.problems.append(f"{path}: a symbol traceGroup without a truth annotation")
                continue
            if not views:
                out.problems.append(f"{path}: symbol {label!r} has no traceView")
                continue
            refs = [(v.get("traceDataRef") or "").strip().lstrip("#") for v in views]
            missing = [r for r in refs if r not in where]
            if missing:
                out.problems.append(f"{path}: symbol {label!r} refers to missing trace(s) {', '.join(missing[:3])}")
                continue
            strokes = tuple(dict.fromkeys(where[r] for r in refs))
            shared = [s for s in strokes if s in used]
            if shared:
                out.problems.append(f"{path}: symbol {label!r} shares stroke {ids[shared[0]]} with "
                                    f"{used[shared[0]]!r}")
                continue
            for s in strokes:
                used[s] = label
            out.symbols.append((label, strokes))
    return out


def _truth(group, ns: str) -> str | None:
    for a in group.iterchildren(f"{ns}annotation"):
        kind = a.get("type")
        if kind is None and a.attrib:
            kind = next(iter(a.attrib.values()))
        if (kind or "").strip() == "truth":
            text = "".join(a.itertext()).strip()
            return text or None
    return None
