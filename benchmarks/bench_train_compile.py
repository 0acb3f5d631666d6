"""The trainer's own step, compiled against eager, on real batches of a shard folder: steps/s side by side.

`bench_compile.py` times random labels of one length, where nothing is cut; a real epoch mixes short and
long labels, and an eager step of a token recognizer cuts its window after the batch's longest label
while a compiled one rounds that cut up to one of `compile_windows` widths (train/trainer.py). This
script builds the preset's `Trainer` three times from the same seed (eager; compiled with the
configured windows; compiled on the whole window, `compile_windows=1`), takes the same N batches of
the training split for each, compiles every window first (not timed), then times every variant's
steps over those batches in alternating blocks, so a noisy neighbour slows them alike. Reported: the
median step, its ratio to eager, and the mean label window each variant computed on.

    python benchmarks/bench_train_compile.py --config print-cpu --data shards/printed-64x512 \\
        --threads 1 model.kind=ar model.max_len=160
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from train.config import apply_overrides, preset  # noqa: E402
from train.trainer import Env, Trainer  # noqa: E402


def variants(windows: int) -> dict[str, tuple[bool, int]]:
    """name -> (compiled, compile_windows)."""
    return {"eager": (False, windows), f"compiled, {windows} windows": (True, windows),
            "compiled, whole window": (True, 1)}


def build(args, compiled: bool, windows: int, out: Path) -> Trainer:
    cfg = apply_overrides(preset(args.config), [*args.overrides, f"compile_windows={windows}", "eval.every=0"])
    cfg.data.root, cfg.out = args.data, str(out)
    return Trainer(cfg, Env(torch.device("cpu"), compile=compiled), None, None)


def window(trainer: Trainer, batch: dict) -> int:
    """The label columns this trainer's step computes on for `batch` (its own cut, Trainer.cut_window)."""
    cut = trainer.cut_window({k: v for k, v in batch.items() if isinstance(v, torch.Tensor) and v.dim() == 2})
    return int(next(iter(cut.values())).shape[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="print-cpu")
    ap.add_argument("--data", required=True, help="a shard folder with a train split")
    ap.add_argument("--batches", type=int, default=16, help="distinct real batches, reused in every block")
    ap.add_argument("--blocks", type=int, default=3, help="alternating timed blocks (each: every batch once)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--windows", type=int, default=4, help="compile_windows of the windowed variant")
    ap.add_argument("--out", default="/tmp/bench_train_compile", help="scratch folder (nothing is saved there)")
    ap.add_argument("--json", default="")
    ap.add_argument("overrides", nargs="*", help="key=value config overrides, as train.run takes them")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    trainers = {name: build(args, compiled, w, Path(args.out) / str(i))
                for i, (name, (compiled, w)) in enumerate(variants(args.windows).items())}
    loader = next(iter(trainers.values()))._loader(torch.Generator().manual_seed(0))
    batches = [b for b, _ in zip(loader, range(args.batches))]
    t0 = time.perf_counter()
    for trainer in trainers.values():  # every window compiled (and every first touch) before timing
        for b in batches:
            trainer.train_step(b)
    warmup = time.perf_counter() - t0
    times: dict[str, list[float]] = {name: [] for name in trainers}
    for _ in range(args.blocks):
        for name, trainer in trainers.items():
            for b in batches:
                t = time.perf_counter()
                trainer.train_step(b)
                times[name].append(time.perf_counter() - t)
    eager_ms = 1000 * statistics.median(times["eager"])
    rows = []
    for name, trainer in trainers.items():
        ms = 1000 * statistics.median(times[name])
        widths = [window(trainer, b) for b in batches]
        rows.append({"variant": name, "step_ms": ms, "vs_eager": eager_ms / ms,
                     "mean_window": statistics.mean(widths), "windows_seen": sorted(set(widths))})
        print(f"{name:28s} {ms:8.1f} ms/step  x{eager_ms / ms:.2f}  label window: mean {statistics.mean(widths):.1f} "
              f"of {trainer.cfg.model.max_len} (widths {sorted(set(widths))})", flush=True)
    print(f"(warm-up, compilation included: {warmup:.0f} s; {args.blocks} x {len(batches)} timed steps per variant)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "torch": torch.__version__, "machine": platform.processor() or platform.machine(), "threads": args.threads,
            "config": args.config, "overrides": args.overrides, "data": args.data, "batches": len(batches),
            "blocks": args.blocks, "warmup_s": warmup, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
