"""Atomic checkpoints that hold everything a run needs to continue exactly, and clear errors when they can't.

A checkpoint is one `torch.save` dict: format version, train config, the recognizer's kind and
config (`model_config`), the RenderSpec (`render`) and the LabelSpec with its vocabulary (`labels`),
model / EMA / optimizer state, step, epoch and batch position, and every rank's RNG state.
`read_specs` reads the recognizer's identity back, from this format or the earlier one (which kept
the vocabulary under `vocab`, the canvas inside the model config and the normalization flag in the
train config). It is written to
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

from datasets_prep.render_spec import RenderSpec, RenderSpecError
from tokenizer.files import atomic_path
from tokenizer.label_spec import LabelSpec, LabelSpecError

from .errors import CheckpointError

FORMAT = "gryphone-checkpoint-2"
FORMATS = ("gryphone-checkpoint-1", FORMAT)
REQUIRED = {"gryphone-checkpoint-1": ("format", "train_config", "model", "vocab", "step"),
            FORMAT: ("format", "train_config", "model_config", "render", "labels", "model", "step")}
LEGACY_MODEL_KEYS = ("image_size", "num_symbols", "num_modifiers", "num_tokens")


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
    if not isinstance(state, dict) or state.get("format") not in FORMATS:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: not a gryphone checkpoint (format {found!r}, expected {FORMAT!r})")
    missing = [k for k in REQUIRED[state["format"]] if k not in state]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {missing}")
    return state


def read_specs(state: dict, path: str | Path) -> tuple[str, dict, RenderSpec, LabelSpec]:
    """(recognizer kind, its config as a dict, RenderSpec, LabelSpec) of a loaded checkpoint, from either
    format; CheckpointError naming the file when they cannot be read."""
    try:
        if state["format"] == FORMAT:
            model_cfg = dict(state["model_config"])
            render = RenderSpec.from_dict(state["render"])
            labels = LabelSpec.from_dict(state["labels"])
        else:
            model_cfg, render, labels = _legacy_specs(state)
        if not isinstance(model_cfg.get("kind"), str):
            raise ValueError("the model config names no recognizer kind")
    except (KeyError, TypeError, ValueError, RenderSpecError, LabelSpecError) as exc:
        raise CheckpointError(f"{path}: cannot read the checkpoint's specs: {exc}") from None
    return model_cfg["kind"], model_cfg, render, labels


def _legacy_specs(state: dict) -> tuple[dict, RenderSpec, LabelSpec]:
    """The first format: canvas in the model config, render settings beside it when the shards said,
    vocabulary under `vocab`, normalization in the train config."""
    model_cfg = dict(state["train_config"]["model"])
    size = model_cfg.get("image_size", (224, 224))
    render_d = dict(state.get("render") or {})
    render_d["size"] = size
    for k in LEGACY_MODEL_KEYS:
        model_cfg.pop(k, None)
    vocab = state["vocab"]
    kind = {"token": "token", "sat": "sat"}[vocab.get("kind")]
    labels = LabelSpec.from_dict({"kind": kind, "vocab": vocab["data"],
                                  "normalized": _normalized(state["train_config"])})
    return model_cfg, RenderSpec.from_dict(render_d), labels


def _normalized(train_config: dict) -> bool:
    """normalize_labels of a stored training config: under data.* since 2026-12-05, at the top before."""
    data = train_config.get("data")
    return bool(data.get("normalize_labels", False) if isinstance(data, dict) else train_config.get("normalize_labels", False))
