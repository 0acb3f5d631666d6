"""Training data straight from the Arrow shards: memory-mapped rows, PNG decode, labels as SAT ids.

Images are stored black ink on white (as the datasets ship); the model sees ink = 1 on 0, so zero
padding equals background. Labels are encoded once up front; every sample that cannot be used
(invalid label, unencodable, longer than the window, undecodable image) is counted by reason and
listed, never dropped silently.
"""
from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from PIL import Image

from datasets_prep.shards import ShardError, load_split
from tokenizer import LatexError
from tokenizer.label_spec import LabelSpec, prepare_label
from tokenizer.vocab import TokenVocab


def image_to_tensor(png: bytes, size: tuple[int, int]) -> torch.Tensor:
    """PNG bytes (black on white) -> float tensor [1, H, W], ink = 1. Raises ValueError on a bad image."""
    with Image.open(io.BytesIO(png)) as im:
        arr = np.asarray(im.convert("L"), dtype=np.uint8)
    if arr.shape != tuple(size):
        raise ValueError(f"image is {arr.shape[0]}x{arr.shape[1]}, the model expects {size[0]}x{size[1]}")
    return torch.from_numpy(255 - arr).float().div_(255.0)[None]


@dataclass
class SplitData:
    """The usable rows of one split, their encoded labels, and an account of what was left out."""

    table: object                       # pyarrow.Table, memory-mapped
    rows: np.ndarray                    # indices into table
    labels: list[str]
    targets: dict[str, np.ndarray]      # name -> [len(rows), max_len] int64
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: list[dict] = field(default_factory=list)


def read_labels(split_dir: Path, labels: LabelSpec | bool) -> tuple:
    """(table, labels) of a split: its shards memory-mapped and the `latex` column as the label spec
    prepares it (normalized or not; `labels` may be the spec or its `normalized` flag)."""
    table = load_split(split_dir)
    normalized = labels.normalized if isinstance(labels, LabelSpec) else bool(labels)
    return table, [prepare_label(t, normalized) for t in table.column("latex").to_pylist()]


def load_split_data(split_dir: Path, targets: Callable[[str], dict[str, np.ndarray]], max_len: int, *,
                    labels: LabelSpec, drop_invalid: bool = True, keep_all: bool = False,
                    labelled: tuple | None = None) -> SplitData:
    """Encode every label of a split with a recognizer's `targets` (model/recognizer.py).

    keep_all: keep rows whose label cannot be encoded (evaluation must score every sample: their
    targets are all PAD and only the reference string is used).
    labelled: read_labels(split_dir, labels), when the caller already has it.
    """
    table, latex = labelled if labelled is not None else read_labels(split_dir, labels)
    errors = table.column("label_error").to_pylist() if "label_error" in table.column_names else [None] * len(latex)
    rows, kept = [], []
    cols: dict[str, list[np.ndarray]] = {}
    skipped: Counter = Counter()
    examples: list[dict] = []

    def skip(i: int, reason: str, detail: str) -> None:
        skipped[reason] += 1
        if len(examples) < 20:
            examples.append({"row": i, "reason": reason, "detail": detail, "latex": latex[i]})

    pad = None
    for i, (text, err) in enumerate(zip(latex, errors)):
        if err and drop_invalid and not keep_all:
            skip(i, "invalid-label", err)
            continue
        try:
            enc = targets(text)
        except LatexError as exc:
            if not keep_all:
                skip(i, getattr(exc, "kind", "label-error"), str(exc))
                continue
            skipped[f"scored-unencodable:{getattr(exc, 'kind', 'label-error')}"] += 1
            pad = pad or {n: np.zeros_like(v) for n, v in targets("x").items()}
            enc = pad
        rows.append(i)
        kept.append(text)
        for n, v in enc.items():
            cols.setdefault(n, []).append(v)
    names = cols.keys() or targets("x").keys()
    stacked = {n: (np.stack(cols[n]) if cols.get(n) else np.zeros((0, max_len), dtype=np.int64)) for n in names}
    return SplitData(table, np.asarray(rows, dtype=np.int64), kept, stacked, skipped, examples)


def sample_ids(data: SplitData) -> list[str]:
    """Each row's `sample_id` (or its path, or its row number): what an eval row is traced back by."""
    for column in ("sample_id", "path"):
        if column in data.table.column_names:
            values = data.table.column(column).to_pylist()
            return [str(values[int(r)]) for r in data.rows]
    return [str(int(r)) for r in data.rows]


class ShardDataset(torch.utils.data.Dataset):
    """Map-style dataset over SplitData; items are dicts of tensors plus the reference LaTeX."""

    def __init__(self, data: SplitData, image_size: tuple[int, int]):
        self.data, self.image_size = data, tuple(image_size)
        self.images = data.table.column("image")

    def __len__(self) -> int:
        return len(self.data.rows)

    def __getitem__(self, i: int) -> dict:
        row = int(self.data.rows[i])
        cell = self.images[row].as_py()
        png = cell["bytes"] if isinstance(cell, dict) else cell
        try:
            image = image_to_tensor(png, self.image_size)
        except Exception as exc:  # a corrupt PNG must name the sample, not kill a worker with a bare trace
            path = self.data.table.column("path")[row].as_py() if "path" in self.data.table.column_names else row
            raise ValueError(f"sample {path}: cannot decode image: {exc}") from None
        item = {"image": image, "latex": self.data.labels[i], "index": i}
        for name, arr in self.data.targets.items():
            item[name] = torch.from_numpy(arr[i])
        return item


def collate(items: list[dict]) -> dict:
    out = {k: torch.stack([it[k] for it in items]) for k in items[0] if k not in ("latex", "index")}
    out["latex"] = [it["latex"] for it in items]
    out["index"] = torch.tensor([it["index"] for it in items])
    return out


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int, rank: int = 0, world: int = 1,
                  lengths: np.ndarray | None = None, pool: int = 0) -> list[list[int]]:
    """The batches of one epoch: a permutation seeded by (seed, epoch), cut into global batches
    (last partial batch dropped), each split across ranks. Deterministic, so resuming at batch k of
    epoch e replays exactly what an uninterrupted run would have seen.

    With `lengths` (each sample's label length) and `pool` > 1, each run of `pool` batches of the
    permutation is sorted by length before it is cut, and the batches are then shuffled: a batch holds
    labels of like length (what `Recognizer.trim_padding` turns into less work) while every sample is
    still seen once an epoch and the order of lengths stays random."""
    g = np.random.default_rng([seed, epoch])
    perm = g.permutation(n)
    if lengths is not None and pool > 1:
        span, lengths = pool * batch_size, np.asarray(lengths)
        perm = np.concatenate([c[np.argsort(lengths[c], kind="stable")]
                               for c in (perm[i: i + span] for i in range(0, n, span))]) if n else perm
    per_rank = batch_size // world
    batches = []
    for start in range(0, n - batch_size + 1, batch_size):
        chunk = perm[start: start + batch_size]
        batches.append(chunk[rank * per_rank: (rank + 1) * per_rank].tolist())
    if lengths is not None and pool > 1:
        batches = [batches[i] for i in g.permutation(len(batches))]
    if not batches and n:  # tiny sets: one batch of everything (repeats allowed)
        idx = np.resize(perm, batch_size)
        batches.append(idx[rank * per_rank: (rank + 1) * per_rank].tolist())
    return batches


def label_lengths(dataset: torch.utils.data.Dataset) -> np.ndarray:
    """Each sample's label length (non-PAD entries of its first target column: tokens, or SAT
    symbols; PAD is 0 in both vocabularies), for a ShardDataset or a ConcatDataset of them."""
    if isinstance(dataset, torch.utils.data.ConcatDataset):
        return np.concatenate([label_lengths(d) for d in dataset.datasets])
    first = next(iter(dataset.data.targets.values()))
    return (first != TokenVocab.PAD).sum(1)


__all__ = ["ShardDataset", "ShardError", "SplitData", "collate", "epoch_batches", "image_to_tensor",
           "label_lengths", "load_split_data", "read_labels", "sample_ids"]
