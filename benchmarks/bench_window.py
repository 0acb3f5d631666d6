"""Training steps/s of the token recognizers with the whole label window, with the window cut at each
batch's longest label (`Recognizer.trim_padding`), and with length-bucketed batches
(`data.length_buckets`), side by side in one process.

The labels are a shard split's own (their lengths are what the window and the buckets depend on); the
images are random at the shards' canvas (a step's cost does not depend on the pixels). The variants
take their timed steps in alternating blocks from one set of weights each, so a noisy machine slows
them alike.

    python benchmarks/bench_window.py --data shards/printed-64x512 --kinds ar hvt --threads 1
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from train.config import apply_overrides, preset
from train.data import epoch_batches, label_lengths
from train.trainer import Env, prepare


def batches_for(variant: str, lengths: np.ndarray, batch_size: int, pool: int) -> list[list[int]]:
    if variant == "buckets":
        return epoch_batches(len(lengths), batch_size, 0, 0, lengths=lengths, pool=pool)
    return epoch_batches(len(lengths), batch_size, 0, 0)


def bench_kind(kind: str, data: Path, config: str, blocks: int, steps: int, pool: int, split: str = "train") -> dict:
    cfg = apply_overrides(preset(config), [f"model.kind={kind}", "model.max_len=160", f"data.root={data}",
                                           f"data.train_split={split}"])
    torch.manual_seed(0)
    model, data, dataset = prepare(cfg, Env(torch.device("cpu")), None)
    tokens = torch.from_numpy(data.targets["tokens"])
    lengths = label_lengths(dataset)
    variants = ("whole window", "trimmed", "buckets")
    models, opts, order = {}, {}, {}
    for v in variants:
        models[v] = copy.deepcopy(model).train()
        opts[v] = torch.optim.AdamW(models[v].parameters(), 1e-4)
        order[v] = iter(batches_for(v, lengths, cfg.batch_size, pool))
    images = torch.rand(cfg.batch_size, 1, *model.render.size)
    times = {v: [] for v in variants}
    widths = {v: [] for v in variants}

    def step(v: str) -> None:
        batch = {"tokens": tokens[next(order[v])]}
        if v != "whole window":
            batch = models[v].trim_padding(batch)
        widths[v].append(batch["tokens"].shape[1])
        loss = models[v].loss(images, batch, torch.Generator().manual_seed(0))["loss"]
        opts[v].zero_grad()
        loss.backward()
        opts[v].step()

    for v in variants:
        step(v)  # warm-up, not timed
    for _ in range(blocks):
        for v in variants:
            t = time.perf_counter()
            for _ in range(steps):
                step(v)
            times[v].append((time.perf_counter() - t) / steps)
    base = statistics.median(times["whole window"])
    rows = {v: {"ms_per_step": 1e3 * statistics.median(times[v]), "images_per_s": cfg.batch_size / statistics.median(times[v]),
                "speedup": base / statistics.median(times[v]), "mean_window": float(np.mean(widths[v]))}
            for v in variants}
    return {"kind": kind, "batch": cfg.batch_size, "mean_label": float(lengths.mean()), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="a shard root with a train split")
    ap.add_argument("--split", default="train", help="the split whose labels are drawn (default train)")
    ap.add_argument("--config", default="print-cpu", help="the preset whose model is timed (default print-cpu)")
    ap.add_argument("--kinds", nargs="+", default=["ar", "hvt"], help="token recognizers that trim (ar, hvt)")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per block")
    ap.add_argument("--pool", type=int, default=50, help="data.length_buckets for the bucketed variant")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = [bench_kind(k, args.data, args.config, args.blocks, args.steps, args.pool, args.split) for k in args.kinds]
    print("| recognizer | variant | mean window (tokens) | ms/step | images/s | vs whole window |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in results:
        for v, row in r["rows"].items():
            print(f"| {r['kind']} (labels {r['mean_label']:.1f} tokens on average) | {v} | {row['mean_window']:.1f} | "
                  f"{row['ms_per_step']:.1f} | {row['images_per_s']:.1f} | {row['speedup']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
