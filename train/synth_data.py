"""Synthetic real-hand training data for a run: a glyph bank cut from the training inks' own symbol
segmentation, and N expressions drawn with it, made once and cached (datasets_prep/synth).

`synth.count=N` turns it on: the bank is built from `synth.bank_input` (segmented InkML, e.g. the
CROHME train folder; refused if it looks like a test split; when unset, the folder the shards' own
train split was converted from, as their summary.json records it) unless `synth.bank` already holds one,
labels are the training split's own (recombined with probability `synth.recombine`), labels equal
to any eval split's label are never drawn, and the shards are made at the run's RenderSpec. Every
epoch then sees the real training samples and the N synthetic ones.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from datasets_prep.holdout import read_holdout
from datasets_prep.render_spec import RenderSpec
from datasets_prep.shards import ShardError, load_split, split_names
from datasets_prep.sources.base import split_name
from datasets_prep.synth.bank_build import build_bank
from datasets_prep.synth.bank_shards import bank_shards
from datasets_prep.synth.bank_store import Bank

from .config import TrainConfig


def train_inputs(data: Path, train_split: str) -> Path | None:
    """The folder the shards' train split was converted from (summary.json's inputs, a folder whose name
    is the split's), when it still exists here; None otherwise. Why: a preset can then draw its glyph
    bank from the training inks without a path on the command line. A split cut by writer from another
    (datasets_prep/holdout.py, `fit`) was converted from its source split's folder."""
    rec = read_holdout(data)
    if rec and train_split == rec.get("fit") and isinstance(rec.get("source"), str):
        train_split = rec["source"]
    try:
        summary = json.loads((data / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("inputs"), list):
        return None
    found = [Path(p) for p in summary["inputs"]
             if isinstance(p, str) and split_name(Path(p).name) == train_split and Path(p).is_dir()]
    return found[0] if len(found) == 1 else None


def held_out_writers(data: Path, train_split: str) -> frozenset[str]:
    """The validation writers the bank must leave out when the run trains on a split held out by writer."""
    rec = read_holdout(data)
    if not rec or train_split != rec.get("fit") or not isinstance(rec.get("valid_writers"), list):
        return frozenset()
    return frozenset(w for w in rec["valid_writers"] if isinstance(w, str))


def excluded_splits(root: Path, cfg: TrainConfig) -> list[str]:
    """Splits whose labels are never drawn: the eval splits and every other split of the shard folder but
    the training split (and the split it was held out from), so a run validating on `valid` still draws
    no test label."""
    rec = read_holdout(root) or {}
    family = {rec.get("source"), rec.get("fit"), rec.get("valid")}
    own = {cfg.data.train_split}
    if cfg.data.train_split == rec.get("source"):
        own |= family  # fit and valid are parts of the training split itself
    elif cfg.data.train_split == rec.get("fit"):
        own.add(rec.get("source"))  # the superset; valid stays excluded
    names = set(cfg.eval.splits)
    try:
        names |= set(split_names(root))
    except (ShardError, OSError, ValueError):
        pass
    return sorted(n for n in names - own if (root / n).is_dir())


def _bank(cfg: TrainConfig, log: Callable[[str], None]) -> Path:
    folder = Path(cfg.synth.bank)
    if (folder / "glyphs.npz").is_file():
        try:
            made_from = ", ".join(map(str, json.loads((folder / "coverage.json").read_text())["inputs"]))
        except (OSError, ValueError, KeyError, TypeError):
            made_from = "inputs not recorded"
        log(f"[synth] glyph bank {folder} ({made_from}); delete it or set synth.bank to build another")
        return folder
    source = Path(cfg.synth.bank_input) if cfg.synth.bank_input else train_inputs(Path(cfg.data.root), cfg.data.train_split)
    if source is None:
        raise ValueError(f"synth.count={cfg.synth.count} needs a glyph bank: synth.bank={folder} holds none, "
                         f"synth.bank_input (segmented InkML to build it from) is not set, and {cfg.data.root}/summary.json "
                         f"names no {cfg.data.train_split!r} input folder that exists here; set synth.bank_input=FOLDER, "
                         f"or synth.count=0 to train without synthetic data")
    t0 = time.time()
    skip = held_out_writers(Path(cfg.data.root), cfg.data.train_split)
    bank, report = build_bank(cfg.synth.bank_source, [source], skip_writers=skip)
    if bank.num_samples == 0:
        raise ValueError(f"{source}: no segmented symbol found to build a glyph bank from")
    bank.save(folder)
    (folder / "coverage.json").write_text(json.dumps(report, indent=1))
    left = f", {report['files_held_out']} files of {len(skip)} held-out writers left out" if skip else ""
    log(f"[synth] glyph bank from {source}: {bank.num_samples} symbols in {time.time() - t0:.0f} s{left} -> {folder}")
    return folder


def prepare_synth(cfg: TrainConfig, render: RenderSpec, log: Callable[[str], None] = print) -> Path | None:
    """Make (or find in the cache) the run's synthetic shards; returns their split folder or None."""
    if cfg.synth.count <= 0:
        return None
    bank = _bank(cfg, log)
    Bank.load(bank)  # a clear error now for a damaged bank, not halfway through synthesis
    root = Path(cfg.data.root)
    labels = load_split(root / cfg.data.train_split).column("latex").to_pylist()
    exclude = [lab for split in excluded_splits(root, cfg) for lab in load_split(root / split).column("latex").to_pylist()]
    t0 = time.time()
    shards = bank_shards(bank, labels, cfg.synth.count, cfg.synth.cache, size=render.size, seed=cfg.seed,
                         exclude=exclude, recombine_p=cfg.synth.recombine, progress=True)
    made = RenderSpec.from_shards(shards)
    if made is not None and made.size != render.size:
        raise ValueError(f"{shards}: synthetic shards are {made.size} images, the run's canvas is {render.size}")
    log(f"[synth] {cfg.synth.count} real-hand expressions in {shards} ({time.time() - t0:.0f} s; cached for "
        f"later runs)")
    return shards / "train"
