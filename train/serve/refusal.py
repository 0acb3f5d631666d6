"""Answering a connection the server has no slot for: a 503, then a lingering close on one thread.

Closing a socket whose client is still sending makes the kernel reset the connection, and a reset can
reach the client before the 503 does (it then sees "broken pipe" instead of "busy"). So a refused
connection gets its answer, a half-close, and a short drain of what the client still sends before it is
closed. All refused connections share one daemon thread and a bounded list, so a flood of them costs
neither the accept loop's time nor a thread apiece.
"""
from __future__ import annotations

import selectors
import socket
import threading
import time

BODY = b'{"error": "the server is busy (too many connections); try again"}'
RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Retry-After: 1\r\nContent-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
LINGER_S = 1.0
"""How long a refused client may keep sending before its connection is closed."""
DRAIN_BYTES = 1 << 20
"""How much a refused client may send before its connection is closed regardless."""
MAX_LINGERING = 256
"""Refused connections drained at once; past this one is closed at once (a reset is then possible)."""


class Refuser:
    """Sends the 503 and closes refused connections politely, on one thread of its own."""

    def __init__(self) -> None:
        self._pending: dict[socket.socket, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def refuse(self, sock: socket.socket) -> None:
        """Answer 503 now (without blocking the caller) and hand the socket to the draining thread."""
        try:
            sock.setblocking(False)
            sock.send(RESPONSE)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            _close(sock)
            return
        with self._lock:
            if len(self._pending) >= MAX_LINGERING:
                _close(sock)
                return
            self._pending[sock] = (time.monotonic() + LINGER_S, 0)
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain, name="gryphone-refuser", daemon=True)
                self._thread.start()
        self._wake.set()

    def _drain(self) -> None:
        while True:
            with self._lock:
                socks = list(self._pending)
            if not socks:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            with selectors.DefaultSelector() as sel:  # epoll where there is one: no 1024-descriptor limit
                for sock in socks:
                    sel.register(sock, selectors.EVENT_READ)
                readable = {key.fileobj for key, _ in sel.select(0.05)}
            now = time.monotonic()
            with self._lock:
                for sock in socks:
                    deadline, seen = self._pending[sock]
                    done = now >= deadline
                    if sock in readable:
                        try:
                            data = sock.recv(65536)
                        except OSError:
                            data = b""
                        seen += len(data)
                        done = done or not data or seen >= DRAIN_BYTES
                    if done:
                        del self._pending[sock]
                        _close(sock)
                    else:
                        self._pending[sock] = (deadline, seen)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
