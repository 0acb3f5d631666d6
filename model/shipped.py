"""The trained weights that ship inside gryphone (model/weights/), so a fresh install recognizes a
formula without training first: `model.load()`, `train.predict`, `train.serve` and
`train.export_onnx` use them when no checkpoint is named.

`model/weights/manifest.json` lists each shipped model: its checkpoint (EMA weights only, no
optimizer), its ONNX folder, its recognizer kind, the decoder chosen for it on a validation split,
the data it was trained on with that data's terms, and the checkpoint's SHA-256 (checked on every
load, so a damaged install is an error naming the file instead of a wrong answer). `default` names
the model each use gets: `read` (predict, export, `model.load()`), `page` (the drawing page, where
GryphOne's step-by-step refinement is the point) and `printed` (printed formulas: `predict --printed`,
`read(..., printed=True)`, the page's upload with "printed" ticked), when one ships. A name from the manifest is accepted wherever a
checkpoint path is (`--ckpt crohme-gryphone`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from datasets_prep.names import is_plain

from .errors import CheckpointError
from .spec_files import sha256_file

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gryphone-weights-1"
USES = ("read", "page", "printed")


class ShippedWeightsError(CheckpointError):
    """The shipped weights are missing, damaged or do not list the name asked for."""


@dataclass(frozen=True)
class Shipped:
    """One shipped model, as the manifest lists it."""
    name: str
    checkpoint: Path
    onnx: Path | None
    kind: str
    sampler: str
    T: int
    sha256: str
    summary: str       # one line: what it reads, on what, at what cost
    beam: int = 1      # the beam width of a token recognizer's "beam" decoder

    def describe(self) -> str:
        return f"{self.name} ({self.summary})"


def _folder(folder: Path | None) -> Path:
    return Path(folder) if folder is not None else WEIGHTS_DIR  # read at call time (tests point it elsewhere)


def _manifest(folder: Path | None = None) -> dict:
    path = _folder(folder) / MANIFEST
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShippedWeightsError(f"{path}: this install carries no shipped weights; name a checkpoint "
                                  "with --ckpt (train one with python -m train.run)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ShippedWeightsError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(got, dict) or got.get("format") != MANIFEST_FORMAT or not isinstance(got.get("models"), dict):
        raise ShippedWeightsError(f"{path}: not a {MANIFEST_FORMAT} manifest")
    return got


def shipped_names(folder: Path | None = None) -> list[str]:
    """Names of the shipped models (empty when the install carries none)."""
    try:
        return sorted(_manifest(folder)["models"])
    except ShippedWeightsError:
        return []


def default_name(use: str = "read", folder: Path | None = None) -> str:
    """The model `use` ('read' or 'page') gets when no checkpoint is named."""
    if use not in USES:
        raise ValueError(f"use must be one of {USES}, not {use!r}")
    folder = _folder(folder)
    man = _manifest(folder)
    name = (man.get("default") or {}).get(use) if isinstance(man.get("default"), dict) else None
    if not isinstance(name, str) or name not in man["models"]:
        raise ShippedWeightsError(f"{folder / MANIFEST}: names no default model for {use!r}")
    return name


def shipped(name: str | None = None, use: str = "read", folder: Path | None = None) -> Shipped:
    """The manifest's entry `name` (default: the one `use` gets), its files checked to be there."""
    folder = _folder(folder)
    man = _manifest(folder)
    name = name or default_name(use, folder)
    entry = man["models"].get(name)
    if not isinstance(entry, dict):
        raise ShippedWeightsError(f"no shipped model named {name!r}; shipped: {', '.join(sorted(man['models']))}")
    try:
        ckpt = folder / _plain(entry["checkpoint"])
        onnx = folder / _plain(entry["onnx"]) if entry.get("onnx") else None
        item = Shipped(name, ckpt, onnx, str(entry["kind"]), str(entry["sampler"]), int(entry["T"]),
                       str(entry["sha256"]), str(entry.get("summary", "")), int(entry.get("beam", 1)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ShippedWeightsError(f"{folder / MANIFEST}: entry {name!r} is malformed ({exc})") from None
    if not ckpt.is_file():
        raise ShippedWeightsError(f"{ckpt}: the shipped checkpoint {name!r} is missing from this install")
    return item


def verified(item: Shipped) -> Path:
    """The checkpoint's path once its SHA-256 matches the manifest's."""
    digest = sha256_file(item.checkpoint)
    if digest != item.sha256:
        raise ShippedWeightsError(f"{item.checkpoint}: damaged (SHA-256 {digest[:12]}..., the manifest says "
                                  f"{item.sha256[:12]}...); reinstall gryphone")
    return item.checkpoint


def resolve(ckpt: str | Path | None, use: str = "read") -> tuple[Path, Shipped | None]:
    """What a `--ckpt` argument names: None -> the default shipped model for `use`; a shipped model's
    name that is not also a path here -> that model; anything else -> the path itself. Returns the path
    and the shipped entry (None for a user's own file), whose decoder the callers take as default."""
    if ckpt is None or (isinstance(ckpt, str) and not Path(ckpt).exists() and ckpt in shipped_names()):
        item = shipped(None if ckpt is None else str(ckpt), use)
        return verified(item), item
    return Path(ckpt), None


def _plain(name: object) -> str:
    if not is_plain(name):
        raise ValueError(f"file name {name!r} is not a plain name inside the weights folder")
    return name


def help_line(use: str = "read") -> str:
    """For --help: which shipped model is used without --ckpt (or that none is shipped). argparse
    %-formats help strings, so a `%` in the summary ("21.91% ExpRate") is doubled here."""
    try:
        return f"default: the shipped {shipped(None, use).describe()}".replace("%", "%%")
    except ShippedWeightsError:
        return "required: this install carries no shipped weights"
