"""RenderSpec: how an ink or an image becomes the model's input, defined once.

The converter writes it into every shard folder's `summary.json` (as its `options`), training copies
it into the checkpoint, and evaluation, `train.predict`, the server and the ONNX export read it back
from there, so a new ink is drawn exactly as the training images were. Nothing else in the project
holds a canvas size or a stroke width default.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

DEFAULT_SIZE = (224, 224)
"""GryphOne's published canvas (ViT-S/8 at 224x224)."""
DEFAULT_STROKE_WIDTH = 2.0
"""At 224x224 a 1 px stroke comes out grey and broken; 2 px anti-aliased reads like pen ink."""
DEFAULT_MARGIN = 8.0
"""Blank pixels around the ink: keeps round caps off the border."""
DEFAULT_ANTIALIAS = "fast"
"""cairo's 4x4 supersampling: ~40% less cairo time than its default, 0.75/255 mean pixel difference (BENCHMARKS.md)."""
MAX_SIDE = 8192


class RenderSpecError(ValueError):
    """A render spec that cannot be used (bad values, or shards and a setting that disagree)."""


@dataclass(frozen=True)
class RenderSpec:
    """The canvas and the drawing settings of a set of shards (and of every model trained on them)."""

    size: tuple[int, int] = DEFAULT_SIZE   # (H, W) pixels
    stroke_width: float = DEFAULT_STROKE_WIDTH
    margin: float = DEFAULT_MARGIN
    antialias: str = DEFAULT_ANTIALIAS     # fast | best | none
    max_glyph: float = 0.0                 # inks: glyphs at most this many px (0: fit the ink to the canvas)
    binarize: bool = False                 # images: Otsu-threshold the ink (photos)

    def __post_init__(self) -> None:
        try:
            h, w = (int(v) for v in self.size)
        except (TypeError, ValueError):
            raise RenderSpecError(f"render size must be two integers (H, W), got {self.size!r}") from None
        if not (8 <= h <= MAX_SIDE and 8 <= w <= MAX_SIDE):
            raise RenderSpecError(f"render size {h}x{w} out of range (8..{MAX_SIDE} per side)")
        object.__setattr__(self, "size", (h, w))
        if not (isinstance(self.stroke_width, (int, float)) and self.stroke_width > 0):
            raise RenderSpecError(f"stroke_width must be > 0, got {self.stroke_width!r}")
        if not (isinstance(self.margin, (int, float)) and 0 <= self.margin < min(h, w) / 2):
            raise RenderSpecError(f"margin must be in [0, {min(h, w) / 2}), got {self.margin!r}")
        if self.antialias not in ("fast", "best", "none"):
            raise RenderSpecError(f"antialias must be fast, best or none, got {self.antialias!r}")
        if not (isinstance(self.max_glyph, (int, float)) and self.max_glyph >= 0):
            raise RenderSpecError(f"max_glyph must be >= 0, got {self.max_glyph!r}")

    @property
    def height(self) -> int:
        return self.size[0]

    @property
    def width(self) -> int:
        return self.size[1]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["size"] = list(self.size)
        return d

    @classmethod
    def from_dict(cls, d: object) -> "RenderSpec":
        """From a summary's `options` or a checkpoint's `render`; keys other than the spec's are ignored
        (a summary also holds the converter's limits), missing optional keys take their defaults."""
        if not isinstance(d, dict):
            raise RenderSpecError(f"render settings must be a mapping, got {type(d).__name__}")
        if "size" not in d:
            raise RenderSpecError("render settings lack the canvas size")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known}
        if not isinstance(kwargs["size"], (list, tuple)) or len(kwargs["size"]) != 2:
            raise RenderSpecError(f"render size must be [H, W], got {kwargs['size']!r}")
        kwargs["size"] = tuple(kwargs["size"])
        return cls(**kwargs)

    def with_size(self, size: tuple[int, int]) -> "RenderSpec":
        return replace(self, size=tuple(size))

    # --- reading it back from shards --------------------------------------------------------------

    @classmethod
    def from_shards(cls, root: str | Path) -> "RenderSpec | None":
        """The spec the converter wrote into `root/summary.json`; None for shards that do not say."""
        path = Path(root) / "summary.json"
        try:
            opts = json.loads(path.read_text())["options"]
        except (OSError, KeyError, TypeError, ValueError):
            return None
        try:
            return cls.from_dict(opts)
        except RenderSpecError as exc:
            raise RenderSpecError(f"{path}: {exc}") from None
