"""Read InkML files as MathWriting and CROHME really write them, safely, into `Ink` records.

Every quirk in docs/formats.md is handled here, once, so the converter, the demo and the predict CLI
see the same `Ink`. Parsing is lxml in recover mode (CROHME's `xml:id="=_1"` values make strict
parsers reject nearly every file) but with entities, DTDs and network access off and the libxml2
size limits on; a recovered error that could have lost content (truncation, a bad tag, an undefined
entity) is an error here, so a damaged file is reported instead of silently half-read.
Numbers are converted for a whole file in one vectorized step (Arrow's string-to-double cast, exact
like `float()` and about twice as fast as `np.fromstring`), which is what makes the reader fast; a
per-point slow path handles the rest of the InkML grammar (difference encoding with `'` and `"`,
`!`, `*`, signs without spaces, mixed value counts).
"""
from __future__ import annotations

import codecs
import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree

from .ink import Ink
from .local_files import MAX_BYTES  # the largest file read, defined where files are read

INKML_NS = "http://www.w3.org/2003/InkML"
MAX_POINTS = 200_000
"""Most points in one ink; real inks have at most a few thousand."""
MIN_POINTS = 2
"""Fewest points an ink needs to be worth a sample (a single tap carries no expression)."""

MAX_MESSAGE = 300
"""Longest error message a quarantine line keeps: a message may quote the file, the report must not copy it."""

# Non-fatal validity/namespace complaints (an undeclared prefix in MathML, ...) lose no content.
_HARMLESS_DOMAINS = {"DTD", "VALID", "NAMESPACE"}


class InkError(Exception):
    """A file that cannot become a sample. str() is "<path>: <stage>: <message>".

    stage says where it failed ("read", "parse", "traces", "label", "render", "archive", ...);
    kind is a short error class for summaries (defaults to the stage).
    """

    def __init__(self, path: str, stage: str, message: str, kind: str | None = None):
        super().__init__(path, stage, message)
        self.path = path
        self.stage = stage
        self.message = message
        self.kind = kind or stage

    def __str__(self) -> str:
        return f"{self.path}: {self.stage}: {self.message}"

    def record(self) -> dict[str, str]:
        """The quarantine.jsonl line for this error."""
        msg = self.message if len(self.message) <= MAX_MESSAGE else self.message[:MAX_MESSAGE] + "..."
        return {"path": self.path, "stage": self.stage, "kind": self.kind, "error": msg}


def _new_parser() -> etree.XMLParser:
    # collect_ids=False: CROHME's xml:id values are not NCNames, and the ID table only costs time and
    # floods the error log (20 errors a file); with it off, every logged error is a real one.
    return etree.XMLParser(recover=True, resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, collect_ids=False, remove_blank_text=True,
                           remove_comments=True, remove_pis=True)


_PARSER = _new_parser()
_LATIN1_FALLBACK = "gryphone-latin1-fallback"
codecs.register_error(_LATIN1_FALLBACK, lambda e: (e.object[e.start:e.end].decode("latin-1"), e.end))
_XML_DECL_ENCODING = re.compile(rb"^(<\?xml[^>]*?encoding\s*=\s*)(['\"])[^'\"]*\2")


def _parse_xml(data: bytes, path: str) -> etree._Element:
    root, errors = _parse_once(data)
    if any(e.type_name == "ERR_INVALID_ENCODING" for e in errors):
        # A few CROHME files (MfrDB) hold Latin-1 bytes (a `\xb7` middle dot) without declaring it;
        # libxml2 stops at the first one. Re-decode: valid UTF-8 stays as it is, each stray byte is
        # read as Latin-1 (which maps every byte), so the text is recovered and nothing else changes.
        text = data.decode("utf-8", errors=_LATIN1_FALLBACK)
        fixed = _XML_DECL_ENCODING.sub(rb"\1\2UTF-8\2", text.encode("utf-8"), count=1)
        root, errors = _parse_once(fixed)
    if b"<!DOCTYPE" in data and (root is None or _has_dtd(root)):
        raise InkError(path, "parse", "document type declaration (DTD/entities) refused: InkML needs none "
                       "and entity expansion is an attack vector", "dtd")
    fatal = [e for e in errors if e.level_name == "FATAL" or e.domain_name not in _HARMLESS_DOMAINS]
    if fatal:
        e = fatal[0]
        more = f" (+{len(fatal) - 1} more)" if len(fatal) > 1 else ""
        raise InkError(path, "parse", f"line {e.line}: {e.message.strip()}{more}", _parse_kind(e))
    if root is None:
        raise InkError(path, "parse", "not an XML document", "not-xml")
    return root


def _has_dtd(root: etree._Element) -> bool:
    docinfo = root.getroottree().docinfo
    return bool(docinfo.doctype) or docinfo.internalDTD is not None


def _parse_once(data: bytes):
    global _PARSER
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError:  # lxml raises even in recover mode on e.g. an empty document
        root = None
    except Exception:  # a parser left in a bad state must not poison the next file
        _PARSER = _new_parser()
        raise
    return root, list(_PARSER.error_log)


def _parse_kind(err) -> str:
    t = err.type_name
    if t in ("ERR_TAG_NOT_FINISHED", "ERR_DOCUMENT_END", "ERR_LTSLASH_REQUIRED", "ERR_GT_REQUIRED"):
        return "truncated-or-malformed"
    if t in ("ERR_DOCUMENT_EMPTY", "ERR_DOCUMENT_START"):
        return "not-xml"
    if "ENTITY" in t:
        return "entity"
    if "HUGE" in t or "resource" in err.message.lower() or "huge" in err.message.lower():
        return "too-large"
    return "malformed-xml"


# ---------------------------------------------------------------- traces

def _channel_names(root: etree._Element, ns: str) -> list[str]:
    tf = root.find(f"{ns}traceFormat")
    if tf is None:
        tf = next(root.iter(f"{ns}traceFormat"), None)  # e.g. inside <definitions><context>
    if tf is None:
        return []
    return [(ch.get("name") or "").strip().upper() for ch in tf.iter(f"{ns}channel")]


def _trace_text(trace: etree._Element) -> str:
    if len(trace):  # comments are removed; anything else nested is unusual, take all its text
        return "".join(trace.itertext())
    return trace.text or ""


def _fast_values(texts: Sequence[str]) -> np.ndarray | None:
    """All numbers of all traces in one conversion, or None when the slow path is needed."""
    joined = " ".join(texts).replace(",", " ")
    try:
        values = pc.ascii_split_whitespace(pa.scalar(joined)).values.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return values.to_numpy(zero_copy_only=False)


_NUMBER = re.compile(r"""\s*([!'"]?)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)|\*|\?)""",
                     re.IGNORECASE)


def _slow_points(text: str, trace_no: int, path: str) -> list[list[float]]:
    """One trace under the full InkML point grammar: explicit (!), first (') and second (")
    differences per channel, `*` = repeat, `?` = unknown (becomes NaN and is rejected later)."""
    points: list[list[float]] = []
    mode: list[int] = []
    prev: list[float] = []
    prev2: list[float] = []
    for p_no, group in enumerate(text.split(",")):
        if not group.strip():  # "1 2,,3 4": an empty point holds nothing to keep
            continue
        pos, vals, end = 0, [], len(group.rstrip())
        while pos < end:
            m = _NUMBER.match(group, pos)
            if not m or m.end() == pos:
                bad = group[pos:pos + 20].strip()
                raise InkError(path, "traces", f"trace {trace_no} point {p_no}: unreadable value {bad!r}",
                               "bad-number")
            pos = m.end()
            c = len(vals)
            if c >= len(mode):
                mode.append(0)
                prev.append(0.0)
                prev2.append(0.0)
            prefix, tok = m.group(1), m.group(2)
            if prefix:
                mode[c] = {"!": 0, "'": 1, '"': 2}[prefix]
            if tok == "*":
                v = prev[c]
            elif tok == "?":
                v = float("nan")
            else:
                x = float(tok)
                v = x if mode[c] == 0 else prev[c] + x if mode[c] == 1 else 2 * prev[c] - prev2[c] + x
            prev2[c], prev[c] = prev[c], v
            vals.append(v)
        points.append(vals)
    return points


def _read_traces(root: etree._Element, ns: str, path: str, max_points: int,
                 ids: list | None = None) -> tuple[list[np.ndarray], int]:
    """Strokes as (n, 2) or (n, 3) float64 arrays (X Y [T]) and the number of values per point seen.
    `ids`, when given, is filled with the `id` attribute of each kept stroke's <trace> (or None)."""
    texts, tids = [], []
    for trace in root.iter(f"{ns}trace"):
        t = _trace_text(trace).strip().strip(",").strip()
        if t:  # an empty <trace/> has no stroke to keep
            texts.append(t)
            tids.append(trace.get("id"))
    if not texts:
        raise InkError(path, "traces", "no <trace> with points", "no-traces")
    counts = [t.count(",") + 1 for t in texts]
    total = sum(counts)
    if total > max_points:
        raise InkError(path, "traces", f"{total} points, over the limit of {max_points}", "too-many-points")

    channels = _channel_names(root, ns)
    values = _fast_values(texts)
    if values is not None:
        width = len(texts[0].split(",", 1)[0].split())
        if width >= 2 and values.size == width * total:
            pts = _select_channels(values.reshape(total, width), channels, width, path)
            if ids is not None:
                ids[:] = tids
            return _cut(pts, counts), width
    strokes, widths, kept = [], [], []
    for i, t in enumerate(texts):
        pts_list = _slow_points(t, i, path)
        if not pts_list:
            continue
        kept.append(tids[i])
        w = min(len(p) for p in pts_list)
        if w < 2:
            raise InkError(path, "traces", f"trace {i}: a point has {w} value(s), X and Y needed", "bad-number")
        strokes.append(np.array([p[:w] for p in pts_list], dtype=np.float64))
        widths.append(w)
    if not strokes:
        raise InkError(path, "traces", "no <trace> with points", "no-traces")
    width = min(widths)
    counts = [len(s) for s in strokes]
    pts = _select_channels(np.concatenate([s[:, :width] for s in strokes]), channels, width, path)
    if ids is not None:
        ids[:] = kept
    return _cut(pts, counts), width


def _cut(pts: np.ndarray, counts: list[int]) -> list[np.ndarray]:
    out, start = [], 0
    for n in counts:
        out.append(pts[start:start + n])
        start += n
    return out


def _select_channels(pts: np.ndarray, channels: list[str], width: int, path: str) -> np.ndarray:
    """Keep X, Y and T (ms) by channel name, for all points at once; `X Y F` files whose points
    hold two values still work (the names are matched to the values there are)."""
    names = channels[:width] if len(channels) >= width else channels + [""] * (width - len(channels))
    ix = names.index("X") if "X" in names else 0
    iy = names.index("Y") if "Y" in names else 1
    cols = [ix, iy] + ([names.index("T")] if "T" in names else [])
    if cols != list(range(width)):
        pts = np.ascontiguousarray(pts[:, cols])
    if not np.isfinite(pts).all() and not np.isfinite(pts[:, :2]).all():  # (a NaN time is harmless)
        bad = int(np.flatnonzero(~np.isfinite(pts[:, :2]).all(axis=1))[0])
        raise InkError(path, "traces", f"non-finite coordinate (NaN or inf) at point {bad}", "non-finite")
    return pts


# ---------------------------------------------------------------- annotations

def _annotations(root: etree._Element, ns: str) -> dict[str, str]:
    """Top-level `<annotation type=...>` values (first wins). An annotation whose `type` attribute is
    misspelt (CROHME has `typx="truth"`) is keyed by the value of its first attribute."""
    out: dict[str, str] = {}
    for a in root.iterchildren(f"{ns}annotation"):
        key = a.get("type")
        if key is None and a.attrib:
            key = next(iter(a.attrib.values()))
        if key is None:
            continue
        out.setdefault(key.strip(), "".join(a.itertext()))
    return out


# ---------------------------------------------------------------- public API

def read_inkml(data: bytes, path: str, *, max_bytes: int = MAX_BYTES, max_points: int = MAX_POINTS,
               min_points: int = MIN_POINTS) -> Ink:
    """Parse one InkML file (its bytes) into an `Ink`; raise `InkError` naming `path` and the cause.

    Strokes keep X, Y and, when the file has it, T; coordinates are as in the file (y down).
    """
    return read_inkml_tree(data, path, max_bytes=max_bytes, max_points=max_points, min_points=min_points)[0]


def read_inkml_tree(data: bytes, path: str, *, max_bytes: int = MAX_BYTES, max_points: int = MAX_POINTS,
                    min_points: int = MIN_POINTS) -> tuple[Ink, etree._Element, list[str | None]]:
    """`read_inkml`, plus what a reader of the symbol segmentation needs: the parsed root element and
    the `id` of each stroke's <trace> (None where it has none), aligned with `ink.strokes`
    (traceGroup/traceView refer to traces by id, and empty traces are not strokes)."""
    if not data:
        raise InkError(path, "read", "file is empty (0 bytes)", "empty-file")
    if len(data) > max_bytes:
        raise InkError(path, "read", f"file is {len(data)} bytes, over the limit of {max_bytes}", "too-large")
    root = _parse_xml(data, path)
    tag = root.tag if isinstance(root.tag, str) else ""
    if tag == f"{{{INKML_NS}}}ink":
        ns = f"{{{INKML_NS}}}"
    elif tag == "ink":  # un-namespaced InkML, as some exporters write it
        ns = ""
    else:
        raise InkError(path, "parse", f"root element is {tag or root!r}, not InkML's {{{INKML_NS}}}ink",
                       "wrong-root")
    ids: list[str | None] = []
    strokes, _ = _read_traces(root, ns, path, max_points, ids)
    ink = Ink(strokes=strokes, annotations=_annotations(root, ns))
    if ink.num_points < min_points:
        raise InkError(path, "traces", f"ink has {ink.num_points} point(s), fewer than {min_points}",
                       "too-few-points")
    return ink, root, ids
