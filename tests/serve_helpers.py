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
        cfg.data, cfg.out = str(data), str(root / f"run-{key}")
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
