"""The recognition server without a browser: urllib and raw sockets against a server on a free port,
serving a micro checkpoint (seconds to train). Good strokes and images, every bad input -> a 4xx JSON
error (never a 500 or a traceback), concurrent requests, the bind policy, and that drawn strokes
reach the model exactly as the training shards' images do."""
from __future__ import annotations

import io
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from serve_helpers import Running, micro_checkpoint, micro_data, post_json, request

REPO = Path(__file__).resolve().parents[1]


def parses(latex: str) -> bool:
    from tokenizer import LatexError, tokenize, validate

    try:
        validate(tokenize(latex))
    except LatexError:
        return False
    return True


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def backend(root):
    from train.serve.backend import Backend

    return Backend.load(str(micro_checkpoint(root)))


@pytest.fixture(scope="module")
def server(backend):
    from train.serve.app import make_server

    running = Running(make_server(backend, "127.0.0.1", 0))
    yield running
    running.close()


@pytest.fixture(scope="module")
def inks(root):
    from datasets_prep.readers import read_inkml

    files = sorted((micro_data(root).parent / "ink" / "train").glob("*.inkml"))
    return [(f, read_inkml(f.read_bytes(), str(f))) for f in files]


def strokes_of(ink) -> list:
    return [s[:, :2].round(2).tolist() for s in ink.strokes]


def png_of(ink, size=(64, 64)) -> bytes:
    from datasets_prep.render import png_bytes, render_ink

    return png_bytes(render_ink(ink, size=size))


def assert_json_error(status: int, headers: dict, body: bytes, expected: int) -> str:
    assert status == expected, (status, body[:300])
    assert headers.get("Content-Type", "").startswith("application/json"), headers
    doc = json.loads(body)
    assert isinstance(doc.get("error"), str) and doc["error"], doc
    assert "Traceback" not in doc["error"]
    return doc["error"]


# -- good input --------------------------------------------------------------------------------------

def test_drawn_strokes_are_recognized_with_every_refinement_step(server, inks):
    status, doc = post_json(server.url, {"strokes": strokes_of(inks[0][1])})
    assert status == 200, doc
    assert doc["latex"] and parses(doc["latex"])
    assert doc["kind"] == "diffusion" and doc["T"] == 10 and len(doc["steps"]) == 10
    for step in doc["steps"]:
        assert len(step["tokens"]) == len(step["confidence"])
        assert all(0.0 <= c <= 1.0 for c in step["confidence"])
    assert 0.0 < doc["confidence"] <= 1.0 and doc["ms"] > 0
    assert doc["image"].startswith("data:image/png;base64,")
    status, doc3 = post_json(server.url, {"strokes": strokes_of(inks[0][1]), "T": 3})
    assert status == 200 and len(doc3["steps"]) == 3 and doc3["T"] == 3


def test_an_image_is_recognized_raw_and_as_an_upload(server, inks):
    png = png_of(inks[1][1])
    status, _, body = request(server.url + "api/recognize?T=4", png, {"Content-Type": "image/png"})
    raw = json.loads(body)
    assert status == 200 and parses(raw["latex"]) and len(raw["steps"]) == 4
    boundary = "gryphone-test-boundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"T\"\r\n\r\n4\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"f.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png + f"\r\n--{boundary}--\r\n".encode()
    status, _, body = request(server.url + "api/recognize", form,
                              {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    upload = json.loads(body)
    assert status == 200 and upload["latex"] == raw["latex"] and upload["steps"] == raw["steps"]


def test_strokes_reach_the_model_exactly_as_the_training_shards_draw_them(backend, root, inks):
    """The page's strokes -> the backend's canvas must equal train.predict's tensor for the InkML file
    and the shard's own image, bit for bit (same renderer, same stored settings)."""
    from train.data import ShardDataset, load_split_data
    from model import load
    from train.predict import load_input

    loaded = load(micro_checkpoint(root))
    rec = loaded.recognizer
    data = load_split_data(micro_data(root) / "train", rec.targets, rec.cfg.max_len, labels=rec.labels, keep_all=True)
    dataset = ShardDataset(data, loaded.render.size)
    by_path = {p: i for i, p in enumerate(data.table.column("path").to_pylist())}
    for path, ink in inks:
        canvas = torch.from_numpy(backend.canvas_from_strokes([s[:, :2] for s in ink.strokes]))[None]
        expected, _ = load_input(path, loaded.render)
        assert torch.equal(canvas, expected), path
        row = next(i for p, i in by_path.items() if p.endswith(path.name))
        assert torch.equal(canvas, dataset[int(np.flatnonzero(data.rows == row)[0])]["image"]), path
        png = png_of(ink)
        image_path = root / f"{path.stem}.png"
        image_path.write_bytes(png)
        assert torch.equal(torch.from_numpy(backend.canvas_from_image(png))[None],
                           load_input(image_path, loaded.render)[0])


def test_the_same_strokes_read_the_same_under_concurrent_requests(server, inks):
    jobs = [(ink, t) for _, ink in inks for t in (2, 5)] * 2
    results: list = [None] * len(jobs)

    def go(i: int) -> None:
        ink, t = jobs[i]
        results[i] = post_json(server.url, {"strokes": strokes_of(ink), "T": t})

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert all(r is not None and r[0] == 200 for r in results), results
    half = len(jobs) // 2
    for a, b in zip(results[:half], results[half:]):
        assert a[1]["latex"] == b[1]["latex"] and a[1]["steps"] == b[1]["steps"]
        assert len(a[1]["steps"]) == jobs[results.index(a)][1]


def test_the_page_and_its_files_are_served_with_nothing_from_elsewhere(server):
    status, headers, body = request(server.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"] and b'id="pad"' in body
    for name in ("page.js", "page.css"):
        status, _, text = request(server.url + name)
        assert status == 200 and text
    static = (REPO / "train" / "serve" / "static")
    for f in static.iterdir():
        assert "://" not in f.read_text(), f"{f.name} refers to another site"
    info = json.loads(request(server.url + "api/info")[2])
    assert info["kind"] == "diffusion" and info["image_size"] == [64, 64] and info["limits"]["T"] == [1, 100]


def test_render_draws_latex_as_svg_polylines(server):
    status, headers, body = request(server.url + "api/render?latex=%5Cfrac%7Bx%5E%7B2%7D%7D%7By%7D")
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml")
    assert body.startswith(b"<svg") and body.count(b"<polyline") >= 4 and b"<script" not in body


# -- bad input ---------------------------------------------------------------------------------------

def _png_claiming(w: int, h: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    chunk = lambda k, p: struct.pack(">I", len(p)) + k + p + struct.pack(">I", zlib.crc32(k + p))  # noqa: E731
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _blank_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (200, 80), 255).save(buf, "PNG")
    return buf.getvalue()


JSON = {"Content-Type": "application/json"}
BAD_POSTS = {
    "not json": (b"{nope", JSON, 400),
    "json not an object": (b"[1, 2]", JSON, 400),
    "no strokes key": (b"{}", JSON, 400),
    "unknown field": (b'{"strokes": [[[1, 2]]], "pen": 1}', JSON, 400),
    "strokes not a list": (b'{"strokes": "x"}', JSON, 400),
    "stroke not a list": (b'{"strokes": [5]}', JSON, 400),
    "point not numbers": (b'{"strokes": [[["a", "b"]]]}', JSON, 400),
    "point of one number": (b'{"strokes": [[[1]]]}', JSON, 400),
    "boolean coordinate": (b'{"strokes": [[[true, 1]]]}', JSON, 400),
    "NaN coordinate": (b'{"strokes": [[[NaN, 1]]]}', JSON, 400),
    "huge coordinate": (b'{"strokes": [[[1e300, 1]]]}', JSON, 400),
    "no strokes": (b'{"strokes": []}', JSON, 422),
    "only empty strokes": (b'{"strokes": [[], []]}', JSON, 422),
    "too many points": (json.dumps({"strokes": [[[i % 97, i % 89] for i in range(50_001)]]}).encode(), JSON, 413),
    "too many strokes": (json.dumps({"strokes": [[[1, 2]]] * 1001}).encode(), JSON, 413),
    "T zero": (b'{"strokes": [[[1, 2], [3, 4]]], "T": 0}', JSON, 400),
    "T too large": (b'{"strokes": [[[1, 2], [3, 4]]], "T": 101}', JSON, 400),
    "T fractional": (b'{"strokes": [[[1, 2], [3, 4]]], "T": 1.5}', JSON, 400),
    "T boolean": (b'{"strokes": [[[1, 2], [3, 4]]], "T": true}', JSON, 400),
    "T a word": (b'{"strokes": [[[1, 2], [3, 4]]], "T": "ten"}', JSON, 400),
    "not an image": (b"\x00not an image at all", {"Content-Type": "image/png"}, 422),
    "empty image": (b"", {"Content-Type": "image/png"}, 422),
    "truncated png": (None, {"Content-Type": "image/png"}, 422),
    "blank image": (_blank_png(), {"Content-Type": "image/png"}, 422),
    "decompression bomb": (_png_claiming(20000, 20000), {"Content-Type": "image/png"}, 422),
    "text body": (b"hello", {"Content-Type": "text/plain"}, 415),
    "no content type": (b"hello", {"Content-Type": ""}, 415),
    "multipart without a file": (b"--b\r\nContent-Disposition: form-data; name=\"T\"\r\n\r\n3\r\n--b--\r\n",
                                 {"Content-Type": "multipart/form-data; boundary=b"}, 400),
    "multipart with bad T": (b"--b\r\nContent-Disposition: form-data; name=\"T\"\r\n\r\n0\r\n--b--\r\n",
                             {"Content-Type": "multipart/form-data; boundary=b"}, 400),
}


@pytest.mark.parametrize("case", sorted(BAD_POSTS))
def test_bad_recognize_requests_get_a_4xx_json_reason(server, inks, case):
    body, headers, expected = BAD_POSTS[case]
    if case == "truncated png":
        full = png_of(inks[0][1])
        body = full[: len(full) // 2]
    status, got_headers, answer = request(server.url + "api/recognize", body, headers, method="POST")
    assert_json_error(status, got_headers, answer, expected)


def test_T_out_of_range_in_the_query_string_is_refused(server, inks):
    png = png_of(inks[0][1])
    for q in ("0", "101", "x"):
        status, headers, body = request(server.url + f"api/recognize?T={q}", png, {"Content-Type": "image/png"})
        assert_json_error(status, headers, body, 400)


@pytest.mark.parametrize("path,method,expected", [
    ("api/recognize", "GET", 405), ("api/info", "POST", 405), ("", "DELETE", 405), ("nope", "GET", 404),
    ("api/nope", "POST", 404), ("api/render", "GET", 400), ("api/render?latex=%5Cfrac%7B", "GET", 422),
    ("api/render?latex=" + "x" * 2001, "GET", 413),
])
def test_wrong_routes_and_methods_get_json_errors(server, path, method, expected):
    data = b"{}" if method == "POST" else None
    status, headers, body = request(server.url + path, data, {"Content-Type": "application/json"}, method=method)
    assert_json_error(status, headers, body, expected)


def _raw(server, payload: bytes) -> tuple[int, dict, bytes]:
    """Send bytes as they are (what urllib will not send: lying lengths, chunked bodies, junk)."""
    host, port = server.server.server_address[:2]
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(payload)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers, body


def test_an_oversized_or_unsized_body_is_refused_before_it_is_read(server):
    too_big = (b"POST /api/recognize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\n"
               b"Content-Length: 9000000\r\n\r\n" + b"\x89PNG")
    t0 = time.time()
    assert_json_error(*_raw(server, too_big), 413)
    assert time.time() - t0 < 10  # answered at once, not after waiting for 9 MB
    chunked = (b"POST /api/recognize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    assert_json_error(*_raw(server, chunked), 411)
    assert_json_error(*_raw(server, b"POST /api/recognize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n"
                                    b"Content-Type: application/json\r\n\r\n"), 400)
    assert_json_error(*_raw(server, b"BLAH\r\n\r\n"), 400)


def test_other_sites_and_rebinding_host_names_are_refused(server, inks):
    body = json.dumps({"strokes": strokes_of(inks[0][1])}).encode()
    status, headers, answer = request(server.url + "api/recognize", body,
                                      {**JSON, "Origin": "https://evil.example"})
    assert "cross-site" in assert_json_error(status, headers, answer, 403)
    status, headers, answer = request(server.url + "api/recognize", body, {**JSON, "Origin": "null"})
    assert_json_error(status, headers, answer, 403)
    status, headers, answer = request(server.url + "api/info", headers={"Host": "evil.example:8000"})
    assert_json_error(status, headers, answer, 403)
    port = server.server.server_address[1]
    status, _, _ = request(server.url + "api/recognize", body, {**JSON, "Origin": f"http://localhost:{port}",
                                                                 "Host": f"localhost:{port}"})
    assert status == 200


def test_the_ar_baseline_is_served_with_one_final_step(root, inks):
    from train.serve.app import make_server
    from train.serve.backend import Backend

    running = Running(make_server(Backend.load(str(micro_checkpoint(root, "ar"))), "127.0.0.1", 0))
    try:
        status, doc = post_json(running.url, {"strokes": strokes_of(inks[0][1]), "T": 7})
        assert status == 200 and parses(doc["latex"]) and doc["kind"] == "ar" and doc["T"] is None
        assert len(doc["steps"]) == 1 and 0.0 < doc["confidence"] <= 1.0   # the output's, not per token
        assert doc["steps"][0]["latex"] == doc["latex"] and all(c is None for c in doc["steps"][0]["confidence"])
        info = json.loads(request(running.url + "api/info")[2])
        assert info["steps"] is False and info["title"] == "the AR baseline"  # the page names it by its title
    finally:
        running.close()


# -- binding and the command line -----------------------------------------------------------------

def _outward_address() -> str | None:
    """This machine's address on its default route (no packet is sent), or None without one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def _start_cli(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "train.serve", "--quiet", "--threads", "1", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"on (http://\S+/)", line)
    if not match:
        proc.kill()
        raise AssertionError(f"no URL printed: {line!r} {proc.stderr.read()[-2000:]}")
    return proc, match.group(1)


def test_make_server_refuses_a_non_loopback_address_unless_asked(backend):
    from train.serve.app import make_server

    with pytest.raises(ValueError, match="not a loopback address"):
        make_server(backend, "0.0.0.0", 0)
    make_server(backend, "0.0.0.0", 0, allow_remote=True).server_close()


def test_the_cli_binds_localhost_only_unless_host_is_given(root):
    outward = _outward_address()
    if outward is None:
        pytest.skip("this machine has no non-loopback address to try")
    ckpt = str(micro_checkpoint(root))
    proc, url = _start_cli("--ckpt", ckpt, "--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert request(url + "api/info")[0] == 200
        with pytest.raises(OSError):
            socket.create_connection((outward, port), timeout=5).close()
    finally:
        proc.terminate()
        proc.wait(30)
    proc, url = _start_cli("--ckpt", ckpt, "--port", "0", "--host", "0.0.0.0")
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        status, _, body = request(f"http://{outward}:{port}/api/info")
        assert status == 200 and json.loads(body)["kind"] == "diffusion"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "reachable from other machines" in err


def test_the_cli_exit_codes(root, tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "train.serve", *a], cwd=REPO, capture_output=True,  # noqa: E731
                                    text=True, timeout=120)
    assert run("--help").returncode == 0
    for args in (["--ckpt", "x.pt", "--T", "0"], ["--ckpt", "x.pt", "--port", "70000"]):
        proc = run(*args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, args
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"not a checkpoint")
    proc = run("--ckpt", str(bad))
    assert proc.returncode == 1 and "broken.pt" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("--ckpt", str(micro_checkpoint(root)), "--device", "nonsense")
    assert proc.returncode == 1 and "nonsense" in proc.stderr and "Traceback" not in proc.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = run("--ckpt", str(micro_checkpoint(root)), "--port", str(taken.getsockname()[1]))
    assert proc.returncode == 1 and "cannot listen" in proc.stderr and "Traceback" not in proc.stderr


def test_a_multipart_body_of_many_parts_is_refused_before_it_is_parsed():
    from train.serve.intake import MAX_PARTS, RequestError, parse_request

    boundary = "xyz"
    part = b"--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\r\n"
    body = part * 20000 + b"--xyz--\r\n"
    with pytest.raises(RequestError) as err:
        parse_request(f"multipart/form-data; boundary={boundary}", body)
    assert err.value.status == 413 and str(MAX_PARTS) in err.value.reason


def test_connections_past_the_limit_are_answered_busy_at_once(backend):
    import socket

    from train.serve.app import make_server

    running = Running(make_server(backend, "127.0.0.1", 0))
    running.server.max_connections = 2
    import threading
    running.server._slots = threading.BoundedSemaphore(2)
    host, port = running.server.server_address[:2]
    held = [socket.create_connection((host, port)) for _ in range(2)]  # two idle connections hold both slots
    try:
        deadline = time.time() + 20
        while running.server._slots._value > 0 and time.time() < deadline:  # both idle ones accepted
            time.sleep(0.02)
        for points in (2, 20000):  # a small body and one still being sent when the 503 goes out
            stroke = [[i % 50, i % 40] for i in range(points)]
            for _ in range(5):
                status, doc = post_json(running.url + "api/recognize", {"strokes": [stroke]})
                assert status == 503 and "busy" in doc["error"]
    finally:
        for s in held:
            s.close()
        running.close()
    assert threading.active_count() < 50


def test_a_request_that_waits_too_long_for_the_model_is_answered_busy(backend, monkeypatch):
    from train.serve.backend import Busy
    monkeypatch.setattr(backend, "wait_s", 0.05)
    canvas = np.zeros(backend.image_size, np.float32)
    canvas[10:20, 10:40] = 1
    backend._lock.acquire()
    try:
        with pytest.raises(Busy):
            backend.recognize(canvas)
    finally:
        backend._lock.release()
    assert backend.recognize(canvas).latex


def test_a_duplicate_content_length_is_refused(server):
    host, port = server.server.server_address[:2]
    body = b'{"strokes": [[[0, 0], [5, 5]]]}'
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(b"POST /api/recognize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(body) + body)
        answer = s.recv(65536).decode("latin-1")
    assert answer.startswith("HTTP/1.1 400") and "Content-Length" in answer


def test_a_request_whose_client_left_while_it_waited_is_not_computed(backend, monkeypatch):
    from train.serve.app import make_server

    lines: list[str] = []
    running = Running(make_server(backend, "127.0.0.1", 0, log=lines.append))
    calls = []
    real = backend._model.recognize
    monkeypatch.setattr(backend._model, "recognize", lambda *a, **k: calls.append(1) or real(*a, **k))
    host, port = running.server.server_address[:2]
    body = json.dumps({"strokes": [[[0, 0], [10, 10], [20, 0]]]}).encode()
    backend._lock.acquire()
    try:
        s = socket.create_connection((host, port))
        s.sendall(b"POST /api/recognize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        time.sleep(0.5)
        s.close()
        time.sleep(0.2)
    finally:
        backend._lock.release()
    deadline = time.time() + 10
    while not any("nothing computed" in ln for ln in lines) and time.time() < deadline:
        time.sleep(0.05)
    running.close()
    assert any("nothing computed" in ln for ln in lines) and not calls


def test_an_http09_request_is_answered_at_once_not_held(server):
    host, port = server.server.server_address[:2]
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"GET /\r\n")
        answer = b""
        while chunk := s.recv(65536):  # the server closes after its answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"HTTP/0.9" in answer


def test_a_client_that_resets_its_connection_is_one_log_line_not_a_traceback(backend, capfd):
    from train.serve.app import make_server

    lines: list[str] = []
    running = Running(make_server(backend, "127.0.0.1", 0, log=lines.append))
    host, port = running.server.server_address[:2]
    s = socket.create_connection((host, port))
    s.sendall(b"GET /api/in")  # half a request line: the reset reaches http.server's own readline
    time.sleep(0.2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    s.close()
    time.sleep(0.5)
    running.close()
    assert "Traceback" not in capfd.readouterr().err


def test_two_hundred_concurrent_requests_are_answered_or_refused_and_gone_clients_cost_nothing(backend, monkeypatch):
    """The load the server is built for: 200 clients at once, half of which hang up right after
    sending. Every client that waits gets a 200 or a 503 (none is left without an answer), the
    server holds a bounded number of threads, and the model runs for no more requests than there
    were clients still waiting."""
    from train.serve.app import make_server

    running = Running(make_server(backend, "127.0.0.1", 0, log=lambda line: None))
    calls = []
    real = backend._model.recognize

    def slow(*a, **k):
        calls.append(1)
        time.sleep(0.01)
        return real(*a, **k)

    monkeypatch.setattr(backend._model, "recognize", slow)
    host, port = running.server.server_address[:2]
    body = json.dumps({"strokes": [[[0, 0], [10, 10], [20, 0]]]}).encode()
    head = (b"POST /api/recognize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    answers: dict[int, str] = {}

    def client(i: int) -> None:
        try:
            with socket.create_connection((host, port), timeout=60) as s:
                s.sendall(head + body)
                if i % 2:  # gone at once
                    return
                answers[i] = s.recv(64).decode("latin-1")
        except OSError as e:
            answers[i] = f"error {e}"

    server_threads, done = [0], threading.Event()

    def sample() -> None:  # the server's threads (everything but this test's clients), at their most
        while not done.is_set():
            server_threads[0] = max(server_threads[0], sum(not t.name.startswith("client") for t in threading.enumerate()))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, name="client-sampler")
    sampler.start()
    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    done.set()
    sampler.join()
    running.close()
    waited = [answers.get(i, "no answer") for i in range(0, 200, 2)]
    assert all(a.startswith(("HTTP/1.1 200", "HTTP/1.1 503")) for a in waited), waited
    assert len(calls) <= 100 + 5  # at most the clients still waiting (a few hang-ups may land mid-computation)
    assert server_threads[0] <= running.server.max_connections + 8, server_threads  # slots + the server's own


def test_a_printed_model_reads_images_sent_with_model_printed(backend, root, inks):
    """The page's 'printed formula' box: an image sent with ?model=printed goes to the printed model;
    strokes never do; a server without one says so."""
    from train.serve.app import make_server
    from train.serve.backend import Backend

    printed = Backend.load(str(micro_checkpoint(root, "ar")))
    running = Running(make_server(backend, "127.0.0.1", 0, printed=printed))
    bare = Running(make_server(backend, "127.0.0.1", 0))
    png = png_of(inks[0][1])
    try:
        info = json.loads(request(running.url + "api/info")[2])
        assert info["printed"]["kind"] == "ar" and json.loads(request(bare.url + "api/info")[2])["printed"] is None
        status, _, body = request(running.url + "api/recognize?model=printed", png, {"Content-Type": "image/png"})
        assert status == 200 and json.loads(body)["kind"] == "ar" and json.loads(body)["T"] is None
        status, _, body = request(running.url + "api/recognize", png, {"Content-Type": "image/png"})
        assert status == 200 and json.loads(body)["kind"] == backend.kind
        status, _, body = request(running.url + "api/recognize?model=printed",
                                  json.dumps({"strokes": strokes_of(inks[0][1])}).encode(),
                                  {"Content-Type": "application/json"})
        assert status == 422 and "strokes" in json.loads(body)["error"]
        status, _, body = request(running.url + "api/recognize?model=other", png, {"Content-Type": "image/png"})
        assert status == 400 and "handwriting or printed" in json.loads(body)["error"]
        status, _, body = request(bare.url + "api/recognize?model=printed", png, {"Content-Type": "image/png"})
        assert status == 422 and "no printed-formula model" in json.loads(body)["error"]
    finally:
        running.close()
        bare.close()
