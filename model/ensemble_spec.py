"""The ensemble file: several trained recognizers that decode as one (model/ensemble.py for token
recognizers, model/sat_ensemble.py for GryphOne's refinement, model/onnx_ensemble.py for their exports).
Torch-free, so an exported ensemble loads without PyTorch.

An ensemble is a small JSON file beside its members:

    {"format": "gryphone-ensemble-1", "members": ["a.pt", "b.pt"], "combine": "mean-log-prob",
     "sampler": "greedy", "beam": 1, "T": 10, "sha256": ["<hex>", "<hex>"]}

`members` are relative paths inside the file's own folder (`a.pt`, `run-1/ckpt.pt`, `run-1`):
checkpoints (train.run's, its run folders, or their slim shipped form) or folders written by
train.export_onnx, all of one sort. `python -m train.ensemble` writes one. A folder whose `gryphone-ensemble.json`
is such a file is the ensemble too (what train.export_onnx writes for one). `sha256`, when given, is
each member checkpoint's digest, checked on load (the shipped ensembles carry it). The file is
untrusted input like a checkpoint: its size is capped, its fields type-checked, and a member name that
could reach outside the folder (a path, `..`, a link out of it) is refused.

`combine`: "mean-log-prob", the one rule: at each step the members' log-probabilities of the next token
(of every position's symbol and modifier, for GryphOne members) are averaged (a normalized geometric
mean of their distributions). On the CROHME validation split it read as much as averaging
probabilities (BENCHMARKS.md, "Ensembles of AR readers").

`sampler` is the default decoder: greedy or beam (width `beam`) for token recognizers; remask,
remask-keep or mask-predict over `T` refinement steps for GryphOne members.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from datasets_prep.names import is_plain

from .errors import CheckpointError
from .spec_files import read_spec_json

ENSEMBLE_FORMAT = "gryphone-ensemble-1"
ENSEMBLE_FILE = "gryphone-ensemble.json"   # its name inside a folder (an exported ensemble)
COMBINE = ("mean-log-prob",)
TOKEN_SAMPLERS = ("greedy", "beam")
SAT_SAMPLERS = ("remask", "remask-keep", "mask-predict")
MAX_T = 1000
MAX_MEMBERS = 16
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class EnsembleSpec:
    path: Path                      # the JSON file
    members: tuple[Path, ...]       # each member's path, inside the file's folder
    names: tuple[str, ...]          # as the file spells them
    sha256: tuple[str | None, ...]  # each member checkpoint's expected digest (None: not checked)
    combine: str = "mean-log-prob"
    sampler: str = "greedy"         # the default decoder
    beam: int = 1
    T: int = 10                     # refinement steps of a GryphOne ensemble's default decoder


def ensemble_file(path: str | Path) -> Path | None:
    """The ensemble file `path` names (itself, or a folder's gryphone-ensemble.json), or None when `path`
    is not one: a .json file whose "format" is the ensemble's is one, any other .json is refused later by
    read_ensemble with its reason."""
    path = Path(path)
    if path.is_dir():
        return path / ENSEMBLE_FILE if (path / ENSEMBLE_FILE).is_file() else None
    return path if path.suffix == ".json" and path.is_file() else None


def read_ensemble(path: str | Path) -> EnsembleSpec:
    """The validated ensemble file; CheckpointError naming the file and the cause otherwise."""
    path = Path(path)
    spec = read_spec_json(path, MAX_BYTES, ENSEMBLE_FORMAT, "ensemble")
    try:
        return _checked(path, spec)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def _checked(path: Path, spec: dict) -> EnsembleSpec:
    members = spec.get("members")
    if not isinstance(members, list) or not 1 <= len(members) <= MAX_MEMBERS:
        raise ValueError(f"members must list 1 to {MAX_MEMBERS} files")
    folder = path.parent.resolve()
    paths = []
    for name in members:
        parts = name.split("/") if isinstance(name, str) else []
        if not parts or not all(is_plain(part) for part in parts):
            raise ValueError(f"member {ascii(name)[:60]} is not a relative path of plain names in the ensemble's folder")
        where = path.parent.joinpath(*parts)
        if not where.resolve().is_relative_to(folder):
            raise ValueError(f"member {name!r} leads outside the ensemble's folder")
        if not where.exists():
            raise ValueError(f"member {name!r} is missing")
        paths.append(where)
    sha = spec.get("sha256", [None] * len(members))
    if not isinstance(sha, list) or len(sha) != len(members) or not all(
            s is None or (isinstance(s, str) and len(s) == 64 and all(c in "0123456789abcdef" for c in s)) for s in sha):
        raise ValueError("sha256 must list one hex digest (or null) per member")
    combine = spec.get("combine", COMBINE[0])
    if combine not in COMBINE:
        raise ValueError(f"combine {combine!r} is not one of {', '.join(COMBINE)}")
    sampler, beam, T = spec.get("sampler", "greedy"), spec.get("beam", 1), spec.get("T", 10)
    if sampler not in TOKEN_SAMPLERS + SAT_SAMPLERS:
        raise ValueError(f"sampler {sampler!r} is not one of {', '.join(TOKEN_SAMPLERS + SAT_SAMPLERS)}")
    if not _int_in(beam, 1, 64) or not _int_in(T, 1, MAX_T):
        raise ValueError(f"beam must be 1..64 and T 1..{MAX_T}, got {beam!r}, {T!r}")
    return EnsembleSpec(path, tuple(paths), tuple(members), tuple(sha), combine, sampler, beam, T)


def _int_in(value: object, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def check_members(members: list, names: list[str]) -> None:
    """ValueError naming the first member that cannot join: members are all token recognizers or all
    GryphOne (SAT refinement: one whole answer refined per step cannot be averaged with a next-token
    step), with one vocabulary and one label normalization, reading images drawn one way (GryphOne
    members: into one window too). `members`: recognizers or exports (each with kind, label_kind, labels,
    render and cfg.max_len)."""
    first = members[0]
    for name, m in zip(names, members):
        if m.label_kind != first.label_kind:
            raise ValueError(f"{name}: a {m.kind} model ({m.label_kind} labels) cannot join {names[0]} "
                             f"({first.kind}, {first.label_kind} labels): members are all token recognizers or all GryphOne")
        if m.labels.vocab.to_dict() != first.labels.vocab.to_dict() or m.labels.normalized != first.labels.normalized:
            raise ValueError(f"{name}: its vocabulary differs from {names[0]}'s (members must share one)")
        if m.render != first.render:
            raise ValueError(f"{name}: it reads images drawn otherwise than {names[0]} ({m.render} vs {first.render})")
        if first.label_kind == "sat" and m.cfg.max_len != first.cfg.max_len:
            raise ValueError(f"{name}: its window is {m.cfg.max_len} positions, {names[0]}'s {first.cfg.max_len} "
                             "(GryphOne members refine one window)")


def ensemble_title(titles: list[str]) -> str:
    """'an ensemble of 4 (the AR baseline x3, HVT)': what logs and the page call it."""
    counts: dict[str, int] = {}
    for t in titles:
        counts[t] = counts.get(t, 0) + 1
    parts = ", ".join(t if n == 1 else f"{t} x{n}" for t, n in counts.items())
    return f"an ensemble of {len(titles)} ({parts})"


def write_ensemble(path: str | Path, members: list[str], sampler: str = "greedy", beam: int = 1,
                   sha256: list[str | None] | None = None, T: int = 10) -> Path:
    """Write an ensemble file listing `members` (relative paths inside its folder); returns its path, read
    back (so what is written is what loads)."""
    path = Path(path)
    spec = {"format": ENSEMBLE_FORMAT, "members": list(members), "combine": COMBINE[0], "sampler": sampler,
            "beam": int(beam), "T": int(T), "sha256": list(sha256) if sha256 is not None else [None] * len(members)}
    path.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    read_ensemble(path)
    return path
