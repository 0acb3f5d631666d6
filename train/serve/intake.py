"""Turn a request into what the recognizer takes, or a RequestError with the status and reason to send.

Every limit lives here, so the HTTP layer never hands the backend anything unbounded: the body size
(checked against Content-Length before a byte is read), the number of strokes and points, finite
coordinates of a sane magnitude, and T. Three body kinds are accepted:
  application/json        {"strokes": [[[x, y], ...], ...], "T": 10}   (points may carry a third value, ignored)
  multipart/form-data     a file part (an upload form); an optional "T" field
  image/* or application/octet-stream   the image bytes themselves; T in the query string (?T=10)
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP

import numpy as np

MAX_BODY_BYTES = 8 * 1024 * 1024
"""Far above a drawn formula (~20 kB of JSON) or a phone photo, small enough that a thread never holds much."""
MAX_STROKES = 1_000
MAX_POINTS = 50_000
"""A page stroke at 60 events/s for 10 minutes of drawing; a formula is a few thousand."""
MAX_COORD = 1e6
MAX_T = 100
MAX_LATEX_CHARS = 2_000
MAX_PARTS = 8
"""An upload form has a file and a T field; the email parser's cost grows with the parts, so a body of
100,000 empty parts is refused from a count of its boundaries before it is parsed."""


class RequestError(Exception):
    """A request that cannot be served: `status` (4xx) and a reason for the `{"error": ...}` body."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class Request:
    """A validated recognition request: exactly one of strokes / image is set."""

    strokes: list[np.ndarray] | None
    image: bytes | None
    T: int | None


def check_length(header: str | None) -> int:
    """The body size from Content-Length, refused before reading when missing, malformed or too large."""
    if header is None:
        raise RequestError(411, "a Content-Length header is required (chunked bodies are not accepted)")
    try:
        n = int(header)
    except ValueError:
        raise RequestError(400, f"bad Content-Length {header[:40]!r}") from None
    if n < 0:
        raise RequestError(400, "bad Content-Length (negative)")
    if n > MAX_BODY_BYTES:
        raise RequestError(413, f"body of {n} bytes is over the {MAX_BODY_BYTES >> 20} MB limit")
    return n


def parse_T(value: object) -> int | None:
    """None (the server's default) or an int 1..MAX_T; "10" from a form or query string is accepted."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise RequestError(400, f"T must be an integer from 1 to {MAX_T}") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_T:
        raise RequestError(400, f"T must be an integer from 1 to {MAX_T}")
    return value


def parse_strokes(value: object) -> list[np.ndarray]:
    """[[[x, y], ...], ...] -> float64 arrays [n, 2]; empty strokes are dropped; no ink at all is refused."""
    if not isinstance(value, list):
        raise RequestError(400, '"strokes" must be a list of strokes, each a list of [x, y] points')
    if len(value) > MAX_STROKES:
        raise RequestError(413, f"{len(value)} strokes is over the limit of {MAX_STROKES}")
    total, out = 0, []
    for i, stroke in enumerate(value):
        if not isinstance(stroke, list):
            raise RequestError(400, f"stroke {i} is not a list of [x, y] points")
        total += len(stroke)
        if total > MAX_POINTS:
            raise RequestError(413, f"more than {MAX_POINTS} points in all")
        if not stroke:
            continue
        pts = []
        for j, p in enumerate(stroke):
            if not (isinstance(p, list) and 2 <= len(p) <= 3
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in p)):
                raise RequestError(400, f"stroke {i} point {j} is not [x, y] (two numbers)")
            x, y = float(p[0]), float(p[1])
            if not (math.isfinite(x) and math.isfinite(y) and abs(x) <= MAX_COORD and abs(y) <= MAX_COORD):
                raise RequestError(400, f"stroke {i} point {j} has a coordinate that is not finite or over "
                                        f"{MAX_COORD:g} in size")
            pts.append((x, y))
        out.append(np.asarray(pts, dtype=np.float64))
    if not out:
        raise RequestError(422, "no ink: the strokes hold no points (an empty canvas)")
    return out


def _json_request(body: bytes) -> Request:
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "strokes" not in doc:
        raise RequestError(400, 'expected a JSON object {"strokes": [[[x, y], ...], ...]} (optional "T")')
    unknown = sorted(set(doc) - {"strokes", "T"})
    if unknown:
        raise RequestError(400, f"unknown field(s) {', '.join(map(repr, unknown))}; expected strokes, T")
    return Request(parse_strokes(doc["strokes"]), None, parse_T(doc.get("T")))


def _multipart_request(content_type: str, body: bytes) -> Request:
    header = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n")
    boundary = header.get_boundary()
    if not boundary:
        raise RequestError(400, "a multipart body that does not parse (missing or wrong boundary)")
    parts = body.count(b"--" + boundary.encode("latin-1", "replace")) - 1
    if parts > MAX_PARTS:
        raise RequestError(413, f"the multipart body has {parts} parts, over the limit of {MAX_PARTS}")
    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        raise RequestError(400, "a multipart body that does not parse (missing or wrong boundary)")
    image, T = None, None
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if part.get_filename() is not None or name in ("image", "file"):
            if image is not None:
                raise RequestError(400, "one image per request")
            image = part.get_payload(decode=True) or b""
        elif name == "T":
            T = parse_T((part.get_payload(decode=True) or b"").decode("ascii", "replace"))
    if image is None:
        raise RequestError(400, 'the multipart body has no file part (send the image as a file, field "image")')
    if not image:
        raise RequestError(422, "the uploaded file is empty")
    return Request(None, image, T)


def parse_request(content_type: str | None, body: bytes, query_T: str | None = None) -> Request:
    """A POST /api/recognize body -> Request; RequestError (400, 413, 415, 422) says what is wrong."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind == "application/json":
        return _json_request(body)
    if kind == "multipart/form-data":
        return _multipart_request(content_type or "", body)
    if kind.startswith("image/") or kind == "application/octet-stream":
        if not body:
            raise RequestError(422, "the image body is empty")
        return Request(None, body, parse_T(query_T))
    raise RequestError(415, f"unsupported Content-Type {kind or '(none)'!r}: send application/json strokes, "
                            "an image (image/png, ...) or a multipart upload")


def parse_latex(value: str | None) -> str:
    """The `latex` query parameter of /api/render: present, not blank, bounded."""
    if value is None or not value.strip():
        raise RequestError(400, "give the formula as ?latex=...")
    if len(value) > MAX_LATEX_CHARS:
        raise RequestError(413, f"latex longer than {MAX_LATEX_CHARS} characters")
    return value
