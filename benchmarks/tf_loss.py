"""Teacher-forced loss of a checkpoint on shard splits: the generalization gap in one number per split.

    python benchmarks/tf_loss.py --ckpt runs/X/ckpt.pt --data shards/crohme-96x384 --splits train,test2014 --limit 1200

The model's own training loss (CE for the AR baseline; GryphOne's masked CE with its seeded masks),
in eval mode (EMA weights where the run kept them), over the first `limit` usable samples of each
split. A training split far below the test splits means the run fits its writers more than it reads.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from train.data import ShardDataset, collate, load_split_data
from train.inference import load_model


def split_loss(model, vocab, mcfg, split_dir: Path, limit: int, normalized: bool,
               batch: int = 64) -> tuple[float, int]:
    data = load_split_data(split_dir, vocab, mcfg.max_len, normalized=normalized)
    ds = ShardDataset(data, mcfg.image_size)
    n, total = min(limit, len(ds)), 0.0
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for i in range(0, n, batch):
            b = collate([ds[j] for j in range(i, min(n, i + batch))])
            out = model.loss(b["image"], b, gen)
            total += float(out.get("ce", out["loss"])) * (min(n, i + batch) - i)
    return total / max(n, 1), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--splits", default="train,test2014")
    ap.add_argument("--limit", type=int, default=1200)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, vocab, mcfg, state = load_model(args.ckpt)
    model.eval()
    normalized = bool(state["train_config"].get("normalize_labels", False))  # labels as the run trained on them
    for split in args.splits.split(","):
        ce, n = split_loss(model, vocab, mcfg, Path(args.data) / split, args.limit, normalized)
        print(f"{args.ckpt} step {state['step']} {split}: CE {ce:.3f} over {n}", flush=True)


if __name__ == "__main__":
    main()
