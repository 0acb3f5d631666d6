"""The server's one link to the recognizer: load a checkpoint (or an ONNX export folder) with
`model.load`, draw input exactly as the training data was drawn (its RenderSpec, through
datasets_prep.canvas, as train.predict does), decode with the refinement history.
"""
from __future__ import annotations

import base64
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from datasets_prep.canvas import draw_ink, fit_image
from datasets_prep.image_intake import ImageError
from datasets_prep.ink import Ink
from datasets_prep.render import png_bytes
from model import CheckpointError, DecodeSpec, Loaded, load
from tokenizer import tokenize


class BackendError(Exception):
    """The checkpoint cannot be served (missing, corrupt, refused, or from another model version)."""


class Busy(Exception):
    """The model has been busy with other requests for longer than the backend waits."""


class Gone(Exception):
    """The request's client left before the model was free: nothing to compute."""


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
    confidences (GryphOne), or the token recognizers' sequence confidence (model/confidence.py).
    repaired: the last step did not parse and was repaired."""

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

    wait_s = 20.0
    """How long a request waits for the model before it is answered busy (its client has likely given up)."""

    def __init__(self, loaded: Loaded, device: str = "cpu"):
        self._loaded = loaded
        self._model = loaded.recognizer
        self._vocab = loaded.labels.vocab
        self._lock = threading.Lock()
        self.device = device
        self.kind: str = self._model.kind
        self.title: str = getattr(self._model, "title", "") or self.kind  # an ONNX folder's reader has no title
        self.image_size: tuple[int, int] = loaded.render.size
        self.max_len: int = int(self._model.cfg.max_len)
        self.step: int = loaded.step
        ship = self.shipped = loaded.shipped
        self.render = loaded.render
        self.source: str = f"the shipped {ship.name}" if ship else str(loaded.path)
        own = ship.sampler if ship and ship.sampler in self._model.samplers else None
        self.sampler: str = own or self._model.default_sampler
        self.beam: int = ship.beam if ship and own == "beam" else self._model.default_beam

    @classmethod
    def load(cls, ckpt: str | None, device: str = "cpu", use: str = "page") -> "Backend":
        """`ckpt` None: the shipped model for `use` (model/shipped.py; the page's by default)."""
        try:
            loaded = load(ckpt, device, use=use)
        except CheckpointError as exc:
            raise BackendError(str(exc)) from None
        except (RuntimeError, ValueError) as exc:  # an unknown or absent device
            raise BackendError(f"cannot load {ckpt} on device {device!r}: {exc}") from None
        return cls(loaded, device)

    @property
    def has_steps(self) -> bool:
        """True for GryphOne (T refinement steps); the AR baseline gives one final step."""
        return bool(self._model.step_samplers)

    def canvas_from_strokes(self, strokes: list[np.ndarray]) -> np.ndarray:
        """Strokes ([n, 2] arrays, y down) -> the model's input, float32 [H, W] with ink = 1, drawn
        exactly as train.predict draws an InkML file: the checkpoint's RenderSpec."""
        try:
            return draw_ink(self._loaded.render, Ink(strokes=[np.asarray(s, dtype=np.float64) for s in strokes]))
        except ValueError as exc:
            raise InputError(f"the ink cannot be drawn: {exc}") from None

    def canvas_from_image(self, data: bytes) -> np.ndarray:
        """Image bytes -> the model's input as train.predict makes it (safe decode, ink found, fitted,
        quantized to 8 bits as the shards store it); InputError with the intake's reason."""
        try:
            return fit_image(self._loaded.render, data)
        except ImageError as exc:
            raise InputError(str(exc)) from None

    def recognize(self, canvas: np.ndarray, T: int = 10, sampler: str | None = None,
                  wanted: Callable[[], bool] | None = None) -> Reading:
        """One canvas -> LaTeX (always parses), its refinement steps and confidence, and the time taken.
        `sampler`: a GryphOne sampler other than the backend's own (ValueError if the model lacks it).
        `wanted`: asked once the model is free; False (the client hung up while waiting) raises Gone and
        nothing is computed for it."""
        if sampler is not None and sampler not in self._model.samplers:
            raise ValueError(f"sampler {sampler!r}: a {self.kind} model decodes with {', '.join(self._model.samplers)}")
        t0 = time.perf_counter()
        image = torch.from_numpy(np.ascontiguousarray(canvas, dtype=np.float32))[None, None]
        history: list = []
        sequence_confidence: list = []   # the recognizer's own confidence of the whole output
        if not self._lock.acquire(timeout=self.wait_s):
            raise Busy(f"the model was busy for {self.wait_s:.0f} s with other requests; try again")
        try:
            if wanted is not None and not wanted():
                raise Gone("the client closed the connection while waiting")
            chosen = sampler or self.sampler
            spec = DecodeSpec(chosen, T=T, beam=self.beam if chosen == "beam" else 1)
            latex = self._model.recognize(image, spec, history=history, confidences=sequence_confidence)[0]
        finally:
            self._lock.release()
        steps = [self._step(s[0].tolist(), m[0].tolist(), c[0].tolist()) for s, m, c in history] \
            or [self._ar_step(latex)]
        confs = [c for c in steps[-1].confidence if c is not None]
        # GryphOne with its history: the last step's positions; an ONNX export (no history) and the token
        # recognizers: the recognizer's own confidence of the output
        confidence = math.exp(sum(math.log(max(c, 1e-12)) for c in confs) / len(confs)) \
            if self.has_steps and history and confs else (sequence_confidence[0] if sequence_confidence else None)
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
        """A token recognizer's output as its one step: LaTeX tokens (the confidence is the whole
        output's, in the Reading)."""
        tokens = tokenize(latex)
        return Step(tokens, [None] * len(tokens), latex)
