"""Shared by the server tests: tiny checkpoints (the `micro` preset on four synthetic inks, seconds to
train), a server running in a thread, and small HTTP helpers."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import torch

LABELS = ["x^{2}+1", "\\frac{a}{b}", "\\sqrt{y}-3", "z_{i}=0"]
_CACHE: dict[str, Path] = {}


def micro_data(root: Path) -> Path:
    """Shards of LABELS' synthetic inks (made once a session, under the first caller's root: the inks
    are at `micro_data(root).parent / "ink"`)."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate

    if "data" not in _CACHE:
        generate(0, root / "ink", labels=LABELS, seed=3, fmt="mathwriting", split="train")
        convert("mathwriting", inputs=[root / "ink"], out=root / "shards", size=(64, 64), workers=1, progress=False)
        _CACHE["data"] = root / "shards"
    return _CACHE["data"]


def micro_checkpoint(root: Path, kind: str = "diffusion", steps: int = 150) -> Path:
    """A micro-preset checkpoint trained `steps` steps on LABELS (cached for the session)."""
    from train.config import apply_overrides, preset
    from train.trainer import train

    key = f"{kind}-{steps}"
    if key not in _CACHE:
        data = micro_data(root)
        cfg = apply_overrides(preset("micro"), [f"max_steps={steps}", f"model.kind={kind}", "log_every=1000"])
        cfg.data.root, cfg.out = str(data), str(root / f"run-{key}")
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            _CACHE[key] = train(cfg)
        finally:
            torch.set_num_threads(threads)
    return _CACHE[key]


class Running:
    """A RecognitionServer serving in a daemon thread; `url` ends with '/'."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def request(url: str, data: bytes | None = None, headers: dict | None = None, method: str | None = None,
            timeout: float = 60) -> tuple[int, dict, bytes]:
    """(status, headers, body) for any status: 4xx/5xx answers are returned, not raised."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def post_json(url: str, doc) -> tuple[int, dict]:
    status, _, body = request(url + "api/recognize", json.dumps(doc).encode(), {"Content-Type": "application/json"})
    return status, json.loads(body)


# -- the browser (tests/test_serve_browser.py, benchmarks/bench_serve.py) -----------------------------

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install selenium, or run .ci/install-browser)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            return f"{path} not found (apt-get install chromium chromium-driver, or run .ci/install-browser)"
    return None


def start_chromium(profile: Path, width: int = 1100, height: int = 1400):
    """Headless Debian Chromium through the system chromedriver (no driver download), fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def draw_ink(driver, canvas, ink, kinds: tuple[str, ...] = ("mouse", "pen"), fill: float = 0.8) -> int:
    """Draw an Ink on the canvas with real pointer input (pointerdown/move/up), fitted to `fill` of the
    canvas; strokes alternate between the pointer `kinds` ("mouse", "pen", "touch"). Returns the stroke count."""
    import numpy as np
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    kind_of = {"mouse": interaction.POINTER_MOUSE, "pen": interaction.POINTER_PEN, "touch": interaction.POINTER_TOUCH}
    w, h = canvas.size["width"], canvas.size["height"]
    x0, y0, x1, y1 = ink.bbox()
    scale = fill * min(w / max(x1 - x0, 1e-6), h / max(y1 - y0, 1e-6))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    for i, stroke in enumerate(ink.strokes):
        pts = np.rint((stroke[:, :2] - (cx, cy)) * scale).astype(int)  # offsets from the canvas centre
        keep = [pts[0]]
        for p in pts[1:]:
            if abs(p - keep[-1]).max() >= 2:
                keep.append(p)
        kind = kinds[i % len(kinds)]
        builder = ActionBuilder(driver, mouse=PointerInput(kind_of[kind], f"{kind}{i}"), duration=0)
        builder.pointer_action.move_to(canvas, int(keep[0][0]), int(keep[0][1]))
        builder.pointer_action.pointer_down()
        for p in keep[1:]:
            builder.pointer_action.move_to(canvas, int(p[0]), int(p[1]))
        builder.pointer_action.pointer_up()
        builder.perform()
    return len(ink.strokes)


def wait_for_answer(driver, source: str, timeout: float = 60) -> str:
    """Wait until the page shows its answer to the request for `source` ("N" strokes or "image");
    returns the page state ("done" or "error")."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
        "const b = document.body; return b.dataset.read === arguments[0] && "
        "(b.dataset.state === 'done' || b.dataset.state === 'error');", source))
    return driver.execute_script("return document.body.dataset.state;")
