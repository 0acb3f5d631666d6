"""Reading label corpora as users have them: one expression a line, or `name<TAB>latex`.

Robust to what real files contain: CRLF, a BOM, invalid UTF-8, binary junk, and TSV fields quoted
CSV-style over several physical lines (pandas writes a multi-line truth as `"...\\n"`). Nothing here
raises on content: a line that cannot be used is yielded as a Skipped record saying why.
"""
from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass
from itertools import chain, islice
from typing import BinaryIO, Iterator

FORMATS = ("auto", "plain", "tsv", "caption")
_DETECT_LINES = 50
_MAX_QUOTED_LINES = 50
_CONTROL = frozenset(chr(c) for c in range(32)) - {"\t", "\r"} | {"\x7f"}
_CONTROL_RE = re.compile("[" + "".join(sorted(_CONTROL)).replace("\\", "\\\\") + "]")
"""The first control character of a line, found at C speed (a per-character scan cost more than the check)."""


@dataclass
class Line:
    source: str
    lineno: int          # first physical line (1-based)
    name: str | None     # the TSV name column, None in plain mode
    latex: str
    continuation: int = 0  # physical lines joined after the first (a quoted multi-line field)


@dataclass
class Skipped:
    source: str
    lineno: int
    reason: str          # "encoding", "binary", "no-tab", "unclosed-quote"
    detail: str


def _decode(raw: bytes, source: str, lineno: int) -> str | Skipped:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(source, lineno, "encoding", f"invalid UTF-8 at byte {exc.start} ({exc.reason})")
    bad = _CONTROL_RE.search(text)
    if bad is not None:
        return Skipped(source, lineno, "binary", f"control character {bad.group()!r} in the line")
    return text


def _physical(stream: BinaryIO, source: str) -> Iterator[tuple[int, str | Skipped]]:
    for lineno, raw in enumerate(stream, 1):
        yield lineno, _decode(raw, source, lineno)


def detect_format(texts: list[str]) -> str:
    """'tsv' when at least half the non-blank lines have a tab, else 'plain'."""
    lines = [t for t in texts if t.strip()]
    if not lines:
        return "plain"
    with_tab = sum("\t" in t for t in lines)
    return "tsv" if with_tab >= 0.5 * len(lines) else "plain"


def read_corpus(stream: BinaryIO, source: str, fmt: str = "auto") -> Iterator[Line | Skipped]:
    """Yield one Line per expression (or a Skipped record) from a binary stream."""
    phys = _physical(stream, source)
    if fmt == "auto":
        head = list(islice(phys, _DETECT_LINES))
        fmt = detect_format([t for _, t in head if isinstance(t, str)])
        phys = chain(head, phys)
    if fmt == "plain":
        for lineno, text in phys:
            yield text if isinstance(text, Skipped) else Line(source, lineno, None, text)
        return
    if fmt == "caption":  # WAP/CoMER/TAMER captions: the name, then whitespace (tab or space), then the label
        for lineno, text in phys:
            if isinstance(text, Skipped) or not text.strip():
                yield text if isinstance(text, Skipped) else Line(source, lineno, None, "")
                continue
            name, *rest = text.strip().split(None, 1)
            yield Line(source, lineno, name, rest[0] if rest else "")
        return
    yield from _read_tsv(phys, source)


def _read_tsv(phys: Iterator[tuple[int, str | Skipped]], source: str) -> Iterator[Line | Skipped]:
    open_field: Line | None = None  # a quoted field still waiting for its closing quote
    parts: list[str] = []
    for lineno, text in phys:
        if isinstance(text, Skipped):
            yield text
            continue
        if open_field is not None:
            if "\t" not in text and open_field.continuation < _MAX_QUOTED_LINES:
                parts.append(text)
                open_field.continuation += 1
                if text.endswith('"'):
                    open_field.latex = _unquote("\n".join(parts))
                    yield open_field
                    open_field = None
                continue
            yield Skipped(source, open_field.lineno, "unclosed-quote",
                          f"quoted field opened on line {open_field.lineno} is not closed; read as-is")
            open_field.latex = "\n".join(parts)
            yield open_field
            open_field = None
        name, tab, latex = text.partition("\t")
        if not tab:
            if text.strip():
                yield Skipped(source, lineno, "no-tab", "no tab in a name<TAB>latex file")
            else:
                yield Line(source, lineno, None, "")
            continue
        if latex.startswith('"') and (len(latex) == 1 or not latex.endswith('"')):
            open_field = Line(source, lineno, name, latex)
            parts = [latex]
            continue
        yield Line(source, lineno, name, latex)
    if open_field is not None:
        yield Skipped(source, open_field.lineno, "unclosed-quote",
                      f"quoted field opened on line {open_field.lineno} is not closed at the end of the file")
        open_field.latex = "\n".join(parts)
        yield open_field


def _unquote(field: str) -> str:
    """CSV-style: drop the outer quotes, `""` -> `"`."""
    return field[1:-1].replace('""', '"')


BINARY_NAMES = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image",
                b"%PDF": "a PDF", b"PK\x03\x04": "a zip archive", b"\x1f\x8b": "a gzip file", b"BM": "a BMP image",
                b"II*\x00": "a TIFF image", b"MM\x00*": "a TIFF image", b"\xfd7zXZ\x00": "an xz file",
                b"\x7fELF": "an executable"}
"""Names for the message only: whether a file is text is decided by its content (refuse_binary)."""
MAX_INVALID = 0.3
"""Share of the head that may be invalid UTF-8 in a text corpus (a Latin-1 file has a few accents;
an image's pixel bytes are nearly all invalid)."""


class NotACorpus(ValueError):
    """A file that is binary (an image, an archive, ...) rather than lines of LaTeX."""


def refuse_binary(stream: BinaryIO, display: str) -> None:
    """Raise NotACorpus if the first 4 KB are not text, judged by content, whatever format it is:
    NUL bytes (more than a stray one), control bytes over 10%, or invalid UTF-8 over MAX_INVALID."""
    head = stream.peek(4096)[:4096] if hasattr(stream, "peek") else b""
    if not head:
        return
    nul = head.count(0)
    control = sum(head.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13))
    # a multi-byte character cut at the end of the head is not an error
    invalid = head.decode("utf-8", "replace").count("\ufffd") - head.decode("utf-8", "ignore").count("\ufffd")
    end = head[-3:].decode("utf-8", "replace").count("\ufffd")
    invalid = max(0, invalid - (end if len(head) == 4096 else 0))
    why = (f"{nul} NUL bytes" if nul > 1 and nul >= 0.005 * len(head) else
           f"{control} control bytes" if control > 0.1 * len(head) else
           f"{invalid} bytes of invalid UTF-8" if invalid > MAX_INVALID * len(head) else None)
    if why is None:
        return
    what = next((name for magic, name in BINARY_NAMES.items() if head.startswith(magic)), None)
    raise NotACorpus(f"{display}: binary data ({why} in the first {len(head)}"
                     + (f"; it starts like {what}" if what else "") + "), not a corpus of LaTeX lines")


def open_source(name: str) -> tuple[BinaryIO, str]:
    """(binary stream, display name); '-' is standard input. Raises OSError for a missing file, and
    for a FIFO or a device (tokenizer.files.open_regular: they would hang or never end)."""
    from .files import open_regular

    if name == "-":
        return (sys.stdin.buffer if hasattr(sys.stdin, "buffer") else io.BytesIO(sys.stdin.read().encode())), "<stdin>"
    return open_regular(name), name
