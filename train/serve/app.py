"""The HTTP side: routes, JSON errors, the bind policy. Standard library only (ThreadingHTTPServer).

Routes:
  GET  /                the drawing page (static/page.html, page.css, page.js; nothing from elsewhere)
  GET  /api/info        the checkpoint's kind, canvas, default T, the printed-formula model (if any), the limits
  GET  /api/render?latex=...   the formula as SVG (formula.formula_svg)
  POST /api/recognize   strokes (JSON), an image (raw body) or an upload (multipart) -> LaTeX + steps;
                        `?model=printed` reads an image with the printed-formula model

Every failure is a JSON `{"error": reason}` with a 4xx status; an unexpected exception is logged here
and answered with a 500 that carries no traceback. Bound to a loopback address the server also
refuses requests whose Host header names another machine (a web page cannot reach it by DNS
rebinding) and cross-site POSTs (an Origin that is not a loopback one; "null", which a sandboxed frame sends,
included).
"""
from __future__ import annotations

import http.client
import ipaddress
import json
import select
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from .backend import Backend, Busy, Gone, InputError
from .formula import FormulaError, formula_svg
from .intake import MAX_BODY_BYTES, MAX_POINTS, MAX_STROKES, MAX_T, RequestError, check_length, parse_latex, \
    parse_request
from .refusal import Refuser

STATIC = Path(__file__).with_name("static")
PAGES = {"/": ("page.html", "text/html; charset=utf-8"), "/page.css": ("page.css", "text/css; charset=utf-8"),
         "/page.js": ("page.js", "text/javascript; charset=utf-8")}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
LOCAL_NAMES = {"localhost", "127.0.0.1", "::1"}
DEFAULT_T = 10


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name part of a Host header: 'localhost:8000' -> 'localhost', '[::1]:8000' -> '::1'."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class RecognitionServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that holds the backend and the serving options for its handlers."""

    daemon_threads = True
    request_queue_size = 64
    max_connections = 32
    """Connections served at once; one more is answered 503 at once instead of getting a thread (200
    concurrent clients once made 269 threads that kept decoding for clients long gone)."""

    def __init__(self, address: tuple[str, int], backend: Backend, default_T: int = DEFAULT_T,
                 log: Callable[[str], None] | None = None, printed: Backend | None = None):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, Handler)
        self.backend, self.default_T, self.log = backend, default_T, log
        self.printed = printed  # the printed-formula model for images sent with ?model=printed (None: none)
        self.local_only = is_loopback(address[0])
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._refuser = Refuser()

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuser.refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up or stalls is routine: one log line, no traceback (the handler turns
        everything else into a 500 with the traceback logged)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            if self.log:
                self.log(f"{client_address[0]} - connection closed by the client ({type(exc).__name__})")
            return
        super().handle_error(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def make_server(backend: Backend, host: str = "127.0.0.1", port: int = 8000, *, allow_remote: bool = False,
                default_T: int = DEFAULT_T, log: Callable[[str], None] | None = None,
                printed: Backend | None = None) -> RecognitionServer:
    """Bind (OSError if the port is taken). A non-loopback host is refused unless allow_remote: the
    server runs a model on whatever it is sent and has no authentication, so reaching it from another
    machine has to be asked for (the CLI asks when --host is given)."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"refusing to bind {host!r}: not a loopback address (pass --host explicitly to serve "
                         "other machines)")
    if not 1 <= default_T <= MAX_T:
        raise ValueError(f"default T must be from 1 to {MAX_T}")
    return RecognitionServer((host, port), backend, default_T, log, printed)


class Handler(BaseHTTPRequestHandler):
    server: RecognitionServer
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.0"  # so a malformed request line is answered with a status line and JSON
    server_version = "gryphone-serve"
    timeout = 30  # a client that stops sending mid-request frees its thread after this many seconds
    disable_nagle_algorithm = True  # headers and body go out as two writes: without this, a kept-alive
    # connection waits for the client's delayed ACK (~40 ms a request on Linux) before the body leaves

    # -- plumbing ------------------------------------------------------------------------------------
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        if self.server.log:
            self.server.log(f"{self.address_string()} {format % args}")

    def _send(self, status: int, body: bytes, content_type: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: dict) -> None:
        self._send(status, json.dumps(doc, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _error(self, status: int, reason: str) -> None:
        self._json(status, {"error": reason})

    def _guarded(self, route: Callable[[], None]) -> None:
        """Run a route; RequestError -> its 4xx, anything unexpected -> a logged 500 without traceback."""
        try:
            if not self._host_allowed():
                raise RequestError(403, "this server answers to localhost only (start it with --host to serve "
                                        "other names)")
            route()
        except RequestError as exc:
            self._error(exc.status, exc.reason)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        except Exception:  # a bug, not bad input: the client gets a reason, the log gets the traceback
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            try:
                self._error(500, "internal error (logged by the server)")
            except OSError:
                pass

    def _client_waiting(self) -> bool:
        """False when the client has closed its end (readable, and a peek reads end-of-stream); a request
        whose client left while it queued for the model is then dropped instead of decoded."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
        except (OSError, ValueError):
            return False

    def _host_allowed(self) -> bool:
        if not self.server.local_only:
            return True
        host = self.headers.get("Host")
        return host is None or _host_name(host) in LOCAL_NAMES or is_loopback(_host_name(host))

    def _query(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query, keep_blank_values=True).items()}

    # -- methods -------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._guarded(self._get)

    def do_HEAD(self) -> None:  # noqa: N802
        self._guarded(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._guarded(self._post)

    def _refuse_method(self, allowed: str) -> None:
        self.close_connection = True  # a body may follow that we will not read
        self._send(405, json.dumps({"error": f"method {self.command} not allowed here (use {allowed})"}).encode(),
                   "application/json; charset=utf-8", {"Allow": allowed})

    def _other_method(self) -> None:
        self._guarded(lambda: self._refuse_method("POST" if urlsplit(self.path).path == "/api/recognize" else "GET"))

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other_method

    def parse_request(self) -> bool:
        """http.server reads headers after an HTTP/0.9 request line ("GET /") that has none, holding the
        connection until its timeout; such a request is answered 400 at once."""
        words = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n").split()
        if len(words) == 2:
            self.command, self.path, self.request_version = words[0], words[1], "HTTP/1.0"
            self.requestline = " ".join(words)
            self.headers = http.client.HTTPMessage()
            self.send_error(400, "HTTP/0.9 requests are not served; send HTTP/1.0 or 1.1")
            return False
        return super().parse_request()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long) as JSON too."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self._error(code, message or phrase)

    def _get(self) -> None:
        if self.headers.get("Content-Length", "0").strip() not in ("", "0"):
            self.close_connection = True  # a body we do not read must not be taken for the next request
        path = urlsplit(self.path).path
        if path in PAGES:
            name, ctype = PAGES[path]
            self._send(200, (STATIC / name).read_bytes(), ctype, {"Content-Security-Policy": CSP,
                                                                  "Referrer-Policy": "no-referrer"})
        elif path == "/api/info":
            b, p = self.server.backend, self.server.printed
            self._json(200, {"kind": b.kind, "title": b.title, "steps": b.has_steps, "image_size": list(b.image_size),
                             "checkpoint_step": b.step, "T": self.server.default_T,
                             "printed": None if p is None else {"kind": p.kind, "title": p.title, "image_size": list(p.image_size),
                                                                "checkpoint_step": p.step},
                             "limits": {"T": [1, MAX_T], "body_bytes": MAX_BODY_BYTES, "strokes": MAX_STROKES,
                                        "points": MAX_POINTS}})
        elif path == "/api/render":
            try:
                svg = formula_svg(parse_latex(self._query().get("latex")))
            except FormulaError as exc:
                raise RequestError(422, str(exc)) from None
            self._send(200, svg.encode("utf-8"), "image/svg+xml; charset=utf-8")
        elif path == "/api/recognize":
            self._refuse_method("POST")
        else:
            raise RequestError(404, f"no such page {path[:100]!r}")

    def _backend_for(self, req) -> Backend:
        """?model=printed sends an image to the printed-formula model; strokes are always handwriting."""
        model = self._query().get("model") or "handwriting"
        if model == "handwriting":
            return self.server.backend
        if model != "printed":
            raise RequestError(400, f"model={model[:40]!r}: choose handwriting or printed")
        if self.server.printed is None:
            raise RequestError(422, "this server has no printed-formula model (start it with --printed-ckpt)")
        if req.strokes is not None:
            raise RequestError(422, "strokes are handwriting: model=printed reads images")
        return self.server.printed

    def _post(self) -> None:
        path = urlsplit(self.path).path
        if path != "/api/recognize":
            self.close_connection = True
            if path in PAGES or path in ("/api/info", "/api/render"):
                return self._refuse_method("GET")
            raise RequestError(404, f"no such endpoint {path[:100]!r}")
        origin = self.headers.get("Origin")
        if self.server.local_only and origin is not None and not is_loopback(_host_name(urlsplit(origin).netloc)):
            self.close_connection = True
            raise RequestError(403, f"cross-site request from {origin[:100]!r} refused")
        try:
            if len(self.headers.get_all("Content-Length") or []) > 1:  # which one would a proxy have used?
                raise RequestError(400, "more than one Content-Length header")
            length = check_length(self.headers.get("Content-Length"))
        except RequestError:
            self.close_connection = True  # the body (if any) stays unread
            raise
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            raise RequestError(400, f"the body ended after {len(body)} of {length} bytes")
        req = parse_request(self.headers.get("Content-Type"), body, self._query().get("T"))
        t0 = time.perf_counter()
        backend = self._backend_for(req)
        try:
            canvas = backend.canvas_from_strokes(req.strokes) if req.strokes is not None \
                else backend.canvas_from_image(req.image or b"")
        except InputError as exc:
            raise RequestError(422, str(exc)) from None
        try:
            reading = backend.recognize(canvas, req.T or self.server.default_T, wanted=self._client_waiting)
        except Busy as exc:
            raise RequestError(503, str(exc)) from None
        except Gone:
            self.close_connection = True
            if self.server.log:
                self.server.log(f"{self.client_address[0]} - left before the model was free; nothing computed")
            return
        self._json(200, {
            "latex": reading.latex,
            "confidence": reading.confidence,
            "repaired": reading.repaired,
            "kind": backend.kind,
            "T": (req.T or self.server.default_T) if backend.has_steps else None,
            "steps": [{"tokens": s.tokens, "confidence": s.confidence, "latex": s.latex} for s in reading.steps],
            "image": reading.image_data_url(),
            "ms": round((time.perf_counter() - t0) * 1000.0, 1),
            "model_ms": round(reading.ms, 1),
        })
