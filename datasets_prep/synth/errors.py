"""The one exception the synthesizer raises on input it cannot draw."""
from __future__ import annotations


class SynthError(ValueError):
    """A label the synthesizer cannot lay out: carries the label and a one-line reason."""

    def __init__(self, label: str, reason: str):
        super().__init__(f"{reason}: {label!r}")
        self.label = label
        self.reason = reason
