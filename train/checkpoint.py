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


def load_checkpoint(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: checkpoint is empty (0 bytes)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "weights only" in str(exc).lower() or "weights_only" in str(exc):
            why = next((ln.strip() for ln in str(exc).splitlines() if "Unpickler error" in ln), "")
            raise CheckpointError(f"{path}: refused: the file holds objects other than tensors and plain types, "
                                  f"and loading them could run code ({why.split('. Please')[0]})") from None
        raise CheckpointError(f"{path}: cannot read checkpoint (truncated or corrupt?): {exc}") from None
    except Exception as exc:  # zip/pickle errors vary with how the file is damaged
        raise CheckpointError(f"{path}: cannot read checkpoint (truncated or corrupt?): "
                              f"{type(exc).__name__}: {exc}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: not a gryphone checkpoint (format {found!r}, expected {FORMAT!r})")
    missing = [k for k in REQUIRED if k not in state]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {missing}")
    return state
