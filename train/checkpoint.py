"""Atomic checkpoints that hold everything a run needs to continue exactly, and clear errors when they can't.

A checkpoint is one `torch.save` dict: format version, train config, model config, vocabulary,
model / EMA / optimizer state, step, epoch and batch position, and every RNG state. It is written to
a temporary file and `os.replace`d, so a kill leaves either the old or the new file, never half of one
(a temporary file left by a killed write is removed by the next save).

Checkpoints are shared and downloaded, so they are untrusted input: everything in one is a tensor or a
plain type (dict, list, tuple, str, number, bool, None), and loading uses `weights_only=True`, which
refuses any other object instead of running it.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import torch

from tokenizer.files import atomic_path

FORMAT = "gryphone-checkpoint-1"
REQUIRED = ("format", "train_config", "model", "vocab", "step")


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, not ours, or incompatible; the message names the file."""


def save_checkpoint(path: str | Path, state: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stray in path.parent.glob(path.name + ".tmp*"):  # left by a write that was killed
        stray.unlink(missing_ok=True)
    with atomic_path(path, clean=True) as tmp:
        torch.save({"format": FORMAT, **state}, tmp)


CHECKPOINT_MAGIC = (b"PK\x03\x04", b"\x80")
"""How every file torch.save writes starts: a zip archive (torch >= 1.6) or a binary pickle (older)."""


def _torch_reason(exc: BaseException) -> str:
    """torch's own reason, without its advice to re-run with weights_only=False (which would run the
    file's code): the line naming what was refused, else the first line that gives no such advice."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln for ln in lines if "weights_only" not in ln and "Re-running" not in ln
             and "trust the source" not in ln and not ln.startswith("Check the documentation")]
    named = [ln for ln in lines if "GLOBAL" in ln or "Unsupported" in ln or "Unpickler error" in ln]
    reason = (named or lines or [type(exc).__name__])[0]
    return reason.removeprefix("WeightsUnpickler error: ").split(". Please")[0]


def load_checkpoint(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: checkpoint is empty (0 bytes)")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read checkpoint: {exc.strerror or exc}") from None
    if not head.startswith(CHECKPOINT_MAGIC):
        raise CheckpointError(f"{path}: not a checkpoint (torch.save writes a zip archive or a binary pickle; "
                              f"this file starts with {head!r})")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        reason = _torch_reason(exc)
        if "GLOBAL" in reason or "Unsupported" in reason:
            raise CheckpointError(f"{path}: refused: the file holds objects other than tensors and plain types, "
                                  f"and loading them could run code ({reason})") from None
        raise CheckpointError(f"{path}: cannot read checkpoint (truncated or corrupt?): {reason}") from None
    except Exception as exc:  # zip/pickle errors vary with how the file is damaged
        raise CheckpointError(f"{path}: cannot read checkpoint (truncated or corrupt?): "
                              f"{type(exc).__name__}: {_torch_reason(exc)}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: not a gryphone checkpoint (format {found!r}, expected {FORMAT!r})")
    missing = [k for k in REQUIRED if k not in state]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {missing}")
    return state
