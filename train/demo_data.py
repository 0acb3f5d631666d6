"""The demo's data, made by the project itself: synthetic inks -> shards, so a fresh clone can train.

The committed fixtures (fixtures/, written by `datasets_prep.synth --fixtures`) are too few to learn
from, so the demo generates a larger synthetic set on demand with the same generator, in both the
InkML form a user would have and the shard form the trainer reads.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DEMO_SPLITS = {"train": (3000, 1), "test": (200, 2)}  # split -> (count, seed)


def demo_labels(count: int, seed: int, depth: int = 1, length: int = 5) -> list[str]:
    from datasets_prep.synth import random_label

    rng = np.random.default_rng(seed)
    return [random_label(rng, depth=depth, length=length) for _ in range(count)]


def prepare_demo_data(root: Path, image_size: tuple[int, int], splits: dict = DEMO_SPLITS,
                      log=print) -> Path:
    """Write root/ink/<split>/*.inkml and root/shards/<split>; idempotent (reuses a finished set)."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate

    root = Path(root)
    shards = root / "shards"
    marker = root / "demo_data.json"
    wanted = {"splits": {k: list(v) for k, v in splits.items()}, "image_size": list(image_size)}
    if marker.exists() and json.loads(marker.read_text()) == wanted and (shards / "dataset_dict.json").exists():
        log(f"[demo] reusing the synthetic set in {root}")
        return shards
    for split, (count, seed) in splits.items():
        labels = demo_labels(count, seed)
        summary = generate(count, root / "ink", labels=labels, seed=seed, fmt="mathwriting", split=split)
        log(f"[demo] synthesized {split}: {summary.get('written', count)} inks")
    convert("mathwriting", inputs=[root / "ink"], out=shards, size=tuple(image_size), overwrite=True,
            progress=False)
    marker.write_text(json.dumps(wanted))
    return shards
