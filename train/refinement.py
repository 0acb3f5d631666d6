"""The refinement picture: one test expression settling step by step under GryphOne's sampler."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from model import DecodeSpec, Recognizer

from .data import ShardDataset, collate, load_split_data
from .plots import plot_refinement


def step_cells(recognizer: Recognizer, state: tuple, i: int) -> list[tuple[str, float]]:
    """One sampler step of sample i as (token text with its modifier, confidence) per position."""
    vocab = recognizer.labels.vocab
    s, m, conf = state
    cells = []
    for k, (sid, mid) in enumerate(zip(s[i].tolist(), m[i].tolist())):
        if sid == vocab.PAD:
            break
        sym = vocab.symbols[sid] if 3 <= sid < vocab.num_symbols else "?"
        pre, post = vocab.modifiers[mid] if 3 <= mid < vocab.num_modifiers else ((), ())
        cells.append(("".join(pre) + sym + "".join(post), float(conf[i, k])))
    return cells


def refinement_picture(recognizer: Recognizer, split_dir: Path, T: int, out_png: Path, candidates: int = 64) -> Path:
    """Draw the refinement of the sample (of the split's first `candidates`) whose prediction changes
    most across the sampler's steps, preferring one that ends right: a sample already right at step 1
    shows nothing."""
    vocab = recognizer.labels.vocab
    data = load_split_data(split_dir, recognizer.targets, recognizer.cfg.max_len, labels=recognizer.labels,
                           keep_all=True)
    dataset = ShardDataset(data, recognizer.render.size)
    batch = collate([dataset[i] for i in range(min(candidates, len(dataset)))])
    history: list = []
    recognizer.recognize(batch["image"], DecodeSpec("remask", T=T), history=history)

    def preference(i: int) -> tuple[bool, bool, bool, int]:
        """Changes and ends right > changes > ends right > most changes."""
        texts = [vocab.decode(s[i].tolist(), m[i].tolist()) for s, m, _ in history]
        right, n = texts[-1] == batch["latex"][i], sum(a != b for a, b in zip(texts, texts[1:]))
        return right and n > 0, n > 0, right, n

    best = max(range(len(batch["latex"])), key=preference)
    steps = [{"cells": step_cells(recognizer, st, best), "latex": vocab.decode(st[0][best].tolist(), st[1][best].tolist())}
             for st in history]
    image = (255 - batch["image"][best, 0].numpy() * 255).astype(np.uint8)
    return plot_refinement(image, steps, batch["latex"][best], out_png,
                           title=f"random re-mask sampler, T={T}: one test expression, step by step")
