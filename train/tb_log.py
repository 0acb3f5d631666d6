"""TensorBoard event files beside metrics.jsonl, for people who watch a run in TensorBoard.

metrics.jsonl stays the record (plots, resume and the model card read it); this only mirrors its
numbers as scalars. Off unless `log.tensorboard=true`, and then only when `tensorboard` is
installed: without it the run says so once and goes on.
"""
from __future__ import annotations

from numbers import Number
from pathlib import Path


class ScalarLog:
    """add(prefix, {name: value}, step) for every numeric value; close() at the end."""

    def __init__(self, folder: Path, log=print):
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            log("[train] note: log.tensorboard=true but tensorboard is not installed (pip install tensorboard); "
                "metrics.jsonl only")
            return
        self.writer = SummaryWriter(log_dir=str(folder))

    def add(self, prefix: str, values: dict, step: int) -> None:
        if self.writer is None:
            return
        for name, value in values.items():
            if isinstance(value, dict):
                self.add(f"{prefix}/{name}", value, step)
            elif isinstance(value, Number) and not isinstance(value, bool):
                self.writer.add_scalar(f"{prefix}/{name}", float(value), step)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
