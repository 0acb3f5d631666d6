"""The plain `Ink` record every reader produces and every renderer and writer consumes.

Kept deliberately small (like the MathWriting notebook's `Ink`): strokes as float arrays plus the
file's annotations as a dict, so readers, the synthesizer and the renderer share one shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Ink:
    """One handwritten expression.

    strokes: one float64 array per stroke, shape (n_points, 2) for X Y or (n_points, 3) for X Y T
      (T in ms when the source has it). y grows downward, as in the files.
    annotations: the file's `<annotation type=...>` values, entities decoded, as read.
    """

    strokes: list[np.ndarray]
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def num_points(self) -> int:
        return int(sum(len(s) for s in self.strokes))

    @property
    def num_strokes(self) -> int:
        return len(self.strokes)

    def bbox(self) -> tuple[float, float, float, float]:
        """(x_min, y_min, x_max, y_max) over all points; raises ValueError on an empty ink."""
        if not self.strokes or self.num_points == 0:
            raise ValueError("ink has no points")
        xy = np.concatenate([s[:, :2] for s in self.strokes if len(s)])
        return (float(xy[:, 0].min()), float(xy[:, 1].min()), float(xy[:, 0].max()), float(xy[:, 1].max()))
