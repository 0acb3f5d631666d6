"""From a checkpoint file to a recognizer that reads: `model.load(path)`.

Everything a caller needs comes back together: the recognizer (eval mode, its RenderSpec and
LabelSpec attached), and the checkpoint's other contents (step, train config). Evaluation,
prediction, the server and the ONNX export all start here. A folder written by train.export_onnx
loads through the same call (model/onnx_runtime.py), so its callers never branch on which it is; so
does an ensemble file listing several of either (model/ensemble_spec.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datasets_prep.render_spec import RenderSpec
from tokenizer.label_spec import LabelSpec

from .ensemble_spec import ENSEMBLE_FORMAT, ensemble_file, read_ensemble
from .errors import CheckpointError
from .onnx_runtime import ExportedRecognizer, is_export, read_export
from .shipped import Shipped, resolve
from .spec_files import sha256_file

if TYPE_CHECKING:
    from .recognizer import Recognizer


@dataclass
class Loaded:
    recognizer: "Recognizer | ExportedRecognizer"
    render: RenderSpec
    labels: LabelSpec
    state: dict          # the checkpoint dict (step, train_config, ...)
    path: Path
    shipped: Shipped | None = None   # the manifest entry when these are the weights gryphone ships
    members: list["Loaded"] | None = None   # an ensemble's (model/ensemble.py), each as loaded alone

    @property
    def step(self) -> int:
        return int(self.state.get("step", 0))


def load(path: str | Path | None = None, device: Any = "cpu", use_ema: bool = True,
         use: str = "read") -> Loaded:
    """Load a checkpoint written by train.run (either format), or a folder written by train.export_onnx
    (decoded by ONNX Runtime; its weights are those chosen at export, so use_ema does not apply), or an
    ensemble file (or a folder holding one) listing several of either; CheckpointError naming the file
    on anything unusable, including a stored config with impossible values.
    Without a path (or with a shipped model's name), the weights gryphone ships (model/shipped.py):
    the default for `use` ('read', or 'page' for the drawing page)."""
    path, item = resolve(path, use)
    path = run_checkpoint(path)
    spec_file = ensemble_file(path)
    loaded = _load_ensemble(spec_file, device, use_ema) if spec_file else _load_path(path, device, use_ema)
    loaded.shipped = item
    return loaded


def run_checkpoint(path: Path) -> Path:
    """A run folder (train.run --out) -> its checkpoint; any other path as it is."""
    if path.is_dir() and not is_export(path) and (path / "ckpt.pt").is_file():
        return path / "ckpt.pt"
    return path


def _load_ensemble(path: Path, device: Any, use_ema: bool) -> Loaded:
    """An ensemble file's members, each loaded (and its digest checked where the file gives one) as a
    checkpoint or export of its own, then joined: model/ensemble.py over checkpoints, model/onnx_ensemble.py
    over exports. CheckpointError naming the file when its members cannot join."""
    spec = read_ensemble(path)
    members = []
    for member, digest in zip(spec.members, spec.sha256):
        member = run_checkpoint(member)
        if ensemble_file(member):
            raise CheckpointError(f"{path}: member {member} is itself an ensemble; list its members instead")
        if digest is not None and member.is_file():
            got = sha256_file(member)
            if got != digest:
                raise CheckpointError(f"{member}: damaged (SHA-256 {got[:12]}..., {path.name} says {digest[:12]}...)")
        members.append(_load_path(member, device, use_ema))
    names = list(spec.names)
    exported = [isinstance(m.recognizer, ExportedRecognizer) for m in members]
    try:
        if all(exported):
            from .onnx_ensemble import ExportedEnsemble
            rec: Any = ExportedEnsemble([m.recognizer for m in members], spec, names)
        elif not any(exported):
            rec = _checkpoint_ensemble([m.recognizer for m in members], names, spec)
        else:
            raise ValueError("its members mix checkpoints and ONNX exports; list one sort")
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    state = {"format": ENSEMBLE_FORMAT, "step": sum(m.step for m in members),
             "train_config": members[0].state.get("train_config", {}), "ensemble": str(path)}
    return Loaded(rec, rec.render, rec.labels, state, path, members=members)


def _checkpoint_ensemble(members: list, names: list[str], spec):
    """Token recognizers join as model/ensemble.py's ensemble, GryphOne models as model/sat_ensemble.py's;
    ValueError when they cannot (mixed, or another vocabulary; model.ensemble_spec.check_members)."""
    if members[0].label_kind == "sat":
        from .sat_ensemble import SATEnsemble
        return SATEnsemble(members, names, spec.sampler, spec.T).eval()
    from .ensemble import EnsembleRecognizer
    return EnsembleRecognizer(members, names, spec.sampler, spec.beam).eval()


def _load_path(path: Path, device: Any, use_ema: bool) -> Loaded:
    if is_export(path):
        rec = read_export(path, str(device))
        return Loaded(rec, rec.render, rec.labels, rec.state, path)
    from .checkpoint import FORMAT, load_checkpoint, read_specs  # torch: only a checkpoint needs it
    from .registry import build, config_from_dict, config_keys

    state = load_checkpoint(path)
    kind, model_cfg, render, labels = read_specs(state, path)
    try:
        if state["format"] != FORMAT:  # the first format kept every kind's keys in one config
            model_cfg = {k: v for k, v in model_cfg.items() if k in config_keys(kind)}
        cfg = config_from_dict(model_cfg)
        weights = state.get("ema") if use_ema and state.get("ema") else state["model"]
        _check_shapes(cfg, render, labels, weights)
        recognizer = build(cfg, render, labels)
        recognizer.load_state_dict(weights)
    except (KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{path}: checkpoint does not match this version of the model: {exc}") from None
    return Loaded(recognizer.to(device).eval(), render, labels, state, path)


def _check_shapes(cfg, render: RenderSpec, labels: LabelSpec, weights: object) -> None:
    """The stored config's model, built on the meta device (no memory, no compute), must have exactly the
    stored weights' names and shapes: a config that says enc_dim=65536 beside small weights is refused
    here, before building it would ask for gigabytes. ValueError names the first difference."""
    import torch

    from .registry import build

    with torch.device("meta"):
        probe = build(cfg, render, labels)
    diff = weights_mismatch(probe.state_dict(), weights, "config")
    if diff:
        raise ValueError(f"the stored config describes another model than the stored weights ({diff})")


def weights_mismatch(want: dict, weights: object, label: str) -> str | None:
    """None when `weights` is a dict of tensors with exactly `want`'s names and shapes (a state_dict);
    else the first difference, `label` naming the side `want` comes from."""
    import torch

    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        return "the weights are not a dict of tensors"
    want_shapes = {k: tuple(v.shape) for k, v in want.items()}
    got = {k: tuple(v.shape) for k, v in weights.items()}
    if want_shapes == got:
        return None
    diff = sorted(set(want_shapes) ^ set(got)) or sorted(k for k in want_shapes if want_shapes[k] != got[k])
    key = diff[0]
    return f"{key}: {label} {want_shapes.get(key, 'absent')}, weights {got.get(key, 'absent')}"
