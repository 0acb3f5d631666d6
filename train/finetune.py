"""`init=PATH`: a run that starts every weight from a trained checkpoint (fine-tuning the shipped
weights on more steps or on a user's own data), with a fresh optimizer and schedule.

Why a separate path from `model.encoder_init` / `model.decoder_init`: those copy parts across
recognizers; this loads a whole recognizer of the same kind, so its vocabulary comes with it (the
label ids the weights were trained on) and a checkpoint that does not fit is refused by name before a
step is taken."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from datasets_prep.render_spec import RenderSpec
from model import CheckpointError, load_checkpoint, read_specs
from model.ensemble_spec import ensemble_file
from model.load import run_checkpoint, weights_mismatch
from model.onnx_runtime import is_export
from model.shipped import resolve
from tokenizer.label_spec import LabelSpec


@dataclass
class InitWeights:
    path: Path
    labels: LabelSpec
    weights: dict          # the checkpoint's EMA weights where it kept them, else its raw weights
    step: int              # the steps the checkpoint had trained (reported, not resumed)
    which: str             # "ema" | "raw"


def init_path(name: str | Path) -> Path:
    """What `init=` names: a checkpoint, a run folder, or a shipped model's name (`init=crohme-gryphone`,
    its digest checked). An ensemble or an ONNX export has no one set of trainable weights: refused."""
    path, _ = resolve(str(name))
    path = run_checkpoint(path)
    if ensemble_file(path) or (path.is_dir() and is_export(path)):
        raise CheckpointError(f"{path}: init needs one recognizer's training checkpoint; an ensemble or an ONNX "
                              f"export has none (name one member's checkpoint)")
    return path


def read_init(name: str | Path, kind: str, render: RenderSpec) -> InitWeights:
    """Load and check `name` (see init_path) for a run of recognizer `kind` on images drawn by `render`."""
    path = init_path(name)
    state = load_checkpoint(path)
    got, _, ck_render, labels = read_specs(state, path)
    if got != kind:
        raise CheckpointError(f"{path}: init needs a {kind!r} checkpoint (model.kind), this one is {got!r}")
    if tuple(ck_render.size) != tuple(render.size):
        raise CheckpointError(f"{path}: its canvas is {ck_render.size[0]}x{ck_render.size[1]}, the shards' is "
                              f"{render.size[0]}x{render.size[1]}; convert the shards at the checkpoint's size")
    ema = state.get("ema")
    which = "ema" if ema or state.get("weights") == "ema" else "raw"   # a slim checkpoint keeps its EMA as "model"
    return InitWeights(path, labels, ema or state["model"], int(state.get("step", 0)), which)


def apply_init(model: torch.nn.Module, init: InitWeights) -> None:
    """Copy every tensor into `model`; weights that are not exactly its names and shapes are a
    CheckpointError naming the file and the first difference (model.* keys that change shapes must
    match the checkpoint's)."""
    diff = weights_mismatch(model.state_dict(), init.weights, "this run's model")
    if diff:
        raise CheckpointError(f"{init.path}: its weights do not fit this model ({diff}); the run's model.* "
                              f"settings must build the checkpoint's model")
    with torch.no_grad():
        model.load_state_dict(init.weights, strict=True)
