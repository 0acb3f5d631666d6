"""The server's one link to the recognizer: load a checkpoint, draw input as training data was drawn,
decode with the refinement history.

Everything else in train.serve talks to `Backend` only, so when inference moves (train.inference ->
a `model.load(ckpt)` API) this is the one module to re-point. What it calls today:
  train.inference.load_model(path, device) -> (model, vocab, model config, checkpoint dict)
  train.inference.recognize(model, vocab, images, DecoderSpec, history=list) -> [latex]
  datasets_prep.render.render_ink(Ink, size, **checkpoint["render"])   (as train.predict draws InkML)
  datasets_prep.image_intake.image_to_canvas(bytes, size, ...)          (as train.predict reads images)
"""
from __future__ import annotations

import base64
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

RENDER_KEYS = ("stroke_width", "margin", "antialias", "max_glyph")


class BackendError(Exception):
    """The checkpoint cannot be served (missing, corrupt, refused, or from another model version)."""


class InputError(ValueError):
    """Input the recognizer cannot use (an image the intake refuses, ink that cannot be drawn)."""


@dataclass(frozen=True)
class Step:
    """One sampler step: the SAT positions as text (modifiers around their symbol), each position's
    confidence p(symbol) x p(modifier) (None where the decoder gives none), and the step's LaTeX."""

    tokens: list[str]
    confidence: list[float | None]
    latex: str


@dataclass(frozen=True)
class Reading:
    """What the recognizer made of one input. confidence: geometric mean of the last step's position
    confidences (None for the AR baseline). repaired: the last step did not parse and was repaired."""

    latex: str
    confidence: float | None
    steps: list[Step]
    repaired: bool
    image_png: bytes = field(repr=False)
    ms: float

    def image_data_url(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.image_png).decode("ascii")


class Backend:
    """A loaded checkpoint behind a lock (one decode at a time; drawing and decoding inputs run outside it)."""

    def __init__(self, model, vocab, mcfg, state: dict, device: str = "cpu"):
        self._model, self._vocab, self._state = model, vocab, state
        self._lock = threading.Lock()
        self.device = device
        self.kind: str = mcfg.kind
        self.image_size: tuple[int, int] = (int(mcfg.image_size[0]), int(mcfg.image_size[1]))
        self.max_len: int = int(mcfg.max_len)
        self.render: dict = dict(state.get("render") or {})
        self.step: int = int(state.get("step", 0))

    @classmethod
    def load(cls, ckpt: str, device: str = "cpu") -> "Backend":
        from train.checkpoint import CheckpointError
        from train.inference import load_model

        try:
            model, vocab, mcfg, state = load_model(ckpt, device)
        except CheckpointError as exc:
            raise BackendError(str(exc)) from None
        except (RuntimeError, ValueError) as exc:  # an unknown or absent device
            raise BackendError(f"cannot load {ckpt} on device {device!r}: {exc}") from None
        return cls(model, vocab, mcfg, state, device)

    @property
    def has_steps(self) -> bool:
        """True for GryphOne (T refinement steps); the AR baseline gives one final step."""
        return self.kind != "ar"

    def canvas_from_strokes(self, strokes: list[np.ndarray]) -> np.ndarray:
        """Strokes ([n, 2] arrays, y down) -> the model's input, float32 [H, W] with ink = 1, drawn
        exactly as train.predict draws an InkML file: the checkpoint's render settings, its canvas."""
        from datasets_prep.ink import Ink
        from datasets_prep.render import render_ink

        style = {k: self.render[k] for k in RENDER_KEYS if k in self.render}
        try:
            image = render_ink(Ink(strokes=[np.asarray(s, dtype=np.float64) for s in strokes]),
                               size=self.image_size, **style)
        except ValueError as exc:
            raise InputError(f"the ink cannot be drawn: {exc}") from None
        return (255 - image).astype("float32") / 255.0

    def canvas_from_image(self, data: bytes) -> np.ndarray:
        """Image bytes -> the model's input as train.predict makes it (safe decode, ink found, fitted,
        quantized to 8 bits as the shards store it); InputError with the intake's reason."""
        from datasets_prep.image_intake import ImageError, image_to_canvas

        margin = {"margin": self.render["margin"]} if "margin" in self.render else {}
        try:
            canvas = image_to_canvas(data, self.image_size, binarize=bool(self.render.get("binarize")), **margin)
        except ImageError as exc:
            raise InputError(str(exc)) from None
        return (np.rint(canvas * 255.0) / 255.0).astype("float32")

    def recognize(self, canvas: np.ndarray, T: int = 10) -> Reading:
        """One canvas -> LaTeX (always parses), its refinement steps and confidence, and the time taken."""
        from datasets_prep.render import png_bytes
        from train.inference import DecoderSpec, recognize

        t0 = time.perf_counter()
        image = torch.from_numpy(np.ascontiguousarray(canvas, dtype=np.float32))[None, None]
        history: list = []
        with self._lock:
            if self.has_steps:
                latex = recognize(self._model, self._vocab, image, DecoderSpec("remask", T=T), history=history)[0]
            else:
                latex = recognize(self._model, self._vocab, image, DecoderSpec("greedy"))[0]
        steps = [self._step(s[0].tolist(), m[0].tolist(), c[0].tolist()) for s, m, c in history] \
            or [self._ar_step(latex)]
        confs = [c for c in steps[-1].confidence if c is not None]
        confidence = math.exp(sum(math.log(max(c, 1e-12)) for c in confs) / len(confs)) \
            if self.has_steps and confs else None
        png = png_bytes(np.rint(255.0 - canvas * 255.0).clip(0, 255).astype(np.uint8))
        return Reading(latex=latex, confidence=confidence, steps=steps, repaired=steps[-1].latex != latex,
                       image_png=png, ms=(time.perf_counter() - t0) * 1000.0)

    def _step(self, sym: list[int], mod: list[int], conf: list[float]) -> Step:
        """A history entry as text, the way train/run.py's refinement picture writes a position."""
        v = self._vocab
        tokens, confidence = [], []
        for sid, mid, c in zip(sym, mod, conf):
            if sid == v.PAD:
                break
            name = v.symbols[sid] if 3 <= sid < v.num_symbols else "?"
            pre, post = v.modifiers[mid] if 3 <= mid < v.num_modifiers else ((), ())
            tokens.append("".join(pre) + name + "".join(post))
            confidence.append(round(float(c), 4))
        return Step(tokens, confidence, v.decode(sym, mod))

    @staticmethod
    def _ar_step(latex: str) -> Step:
        """The AR baseline's output as its one step: LaTeX tokens, no per-token confidence (its greedy
        decoder returns ids only)."""
        from tokenizer import tokenize

        tokens = tokenize(latex)
        return Step(tokens, [None] * len(tokens), latex)
