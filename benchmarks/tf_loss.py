"""Teacher-forced loss of a checkpoint on shard splits: the generalization gap in one number per split.

    python benchmarks/tf_loss.py --ckpt runs/X/ckpt.pt --data shards/crohme-96x384 --splits train,test2014 --limit 1200

The model's own training loss (CE for the AR baseline; GryphOne's masked CE with its seeded masks),
in eval mode (EMA weights where the run kept them), over the first `limit` usable samples of each
split, labels read as the run trained on them (the checkpoint's LabelSpec, normalized or not). A
training split far below the test splits means the run fits its writers more than it reads.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import Recognizer, load  # noqa: E402
from train.data import ShardDataset, collate, load_split_data  # noqa: E402


def split_loss(model: Recognizer, split_dir: Path, limit: int, batch: int = 64) -> tuple[float, int]:
    """(mean teacher-forced CE, samples) over the first `limit` usable samples of one split."""
    data = load_split_data(split_dir, model.targets, model.cfg.max_len, labels=model.labels)
    ds = ShardDataset(data, model.render.size)
    n, total = min(limit, len(ds)), 0.0
    gen = torch.Generator().manual_seed(0)
    device = next(model.parameters()).device
    with torch.no_grad():
        for i in range(0, n, batch):
            b = collate([ds[j] for j in range(i, min(n, i + batch))])
            tensors = {k: v.to(device) for k, v in b.items() if isinstance(v, torch.Tensor)}
            out = model.loss(tensors["image"], tensors, gen)
            total += float(out.get("ce", out["loss"])) * (min(n, i + batch) - i)
    return total / max(n, 1), n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--splits", default="train,test2014")
    ap.add_argument("--limit", type=int, default=1200)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    loaded = load(args.ckpt)
    if not isinstance(loaded.recognizer, Recognizer):
        raise SystemExit(f"{args.ckpt}: an ONNX export has no training loss; give a PyTorch checkpoint")
    for split in args.splits.split(","):
        ce, n = split_loss(loaded.recognizer, Path(args.data) / split, args.limit)
        print(f"{args.ckpt} step {loaded.step} {split}: CE {ce:.3f} over {n}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
