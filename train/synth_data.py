"""Synthetic real-hand training data for a run: a glyph bank cut from the training inks' own symbol
segmentation, and N expressions drawn with it, made once and cached (datasets_prep/synth).

`synth.count=N` turns it on: the bank is built from `synth.bank_input` (segmented InkML, e.g. the
CROHME train folder; refused if it looks like a test split) unless `synth.bank` already holds one,
labels are the training split's own (recombined with probability `synth.recombine`), labels equal
to any eval split's label are never drawn, and the shards are made at the run's RenderSpec. Every
epoch then sees the real training samples and the N synthetic ones.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from datasets_prep.render_spec import RenderSpec
from datasets_prep.shards import load_split
from datasets_prep.synth.bank_build import build_bank
from datasets_prep.synth.bank_shards import bank_shards
from datasets_prep.synth.bank_store import Bank

from .config import TrainConfig


def _bank(cfg: TrainConfig, log: Callable[[str], None]) -> Path:
    folder = Path(cfg.synth.bank)
    if (folder / "glyphs.npz").is_file():
        return folder
    if not cfg.synth.bank_input:
        raise ValueError(f"synth.count={cfg.synth.count} needs a glyph bank: synth.bank={folder} holds none and "
                         f"synth.bank_input (segmented InkML to build it from) is not set")
    t0 = time.time()
    bank, report = build_bank(cfg.synth.bank_source, [Path(cfg.synth.bank_input)])
    if bank.num_samples == 0:
        raise ValueError(f"{cfg.synth.bank_input}: no segmented symbol found to build a glyph bank from")
    bank.save(folder)
    (folder / "coverage.json").write_text(json.dumps(report, indent=1))
    log(f"[synth] glyph bank from {cfg.synth.bank_input}: {bank.num_samples} symbols in {time.time() - t0:.0f} s "
        f"-> {folder}")
    return folder


def prepare_synth(cfg: TrainConfig, render: RenderSpec, log: Callable[[str], None] = print) -> Path | None:
    """Make (or find in the cache) the run's synthetic shards; returns their split folder or None."""
    if cfg.synth.count <= 0:
        return None
    bank = _bank(cfg, log)
    Bank.load(bank)  # a clear error now for a damaged bank, not halfway through synthesis
    root = Path(cfg.data)
    labels = load_split(root / cfg.train_split).column("latex").to_pylist()
    exclude = [lab for split in cfg.eval_splits if (root / split).exists()
               for lab in load_split(root / split).column("latex").to_pylist()]
    t0 = time.time()
    shards = bank_shards(bank, labels, cfg.synth.count, cfg.synth.cache, size=render.size, seed=cfg.seed,
                         exclude=exclude, recombine_p=cfg.synth.recombine, progress=True)
    made = RenderSpec.from_shards(shards)
    if made is not None and made.size != render.size:
        raise ValueError(f"{shards}: synthetic shards are {made.size} images, the run's canvas is {render.size}")
    log(f"[synth] {cfg.synth.count} real-hand expressions in {shards} ({time.time() - t0:.0f} s; cached for "
        f"later runs)")
    return shards / "train"
