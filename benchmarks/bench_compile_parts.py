"""Eager training steps against `compile_parts` (the recognizer's `train_parts` compiled on their own:
HVT's coverage attention), with and without bf16 autocast, side by side in one process.

Why apart from bench_compile.py: that script compiles the whole loss, which needs one fixed window;
HVT's LSTM runs one step per label column, so its eager step trims the window to the batch's longest
label, and compiling only the attention it calls at every column keeps that trim. The labels are a
shard split's own (the window depends on them), the images random at the preset's canvas. The
variants start from the same weights and take their timed steps in alternating blocks, so a noisy
machine slows them alike; a dropout-free pair checks that eager and compiled parts give the same
losses.

    python benchmarks/bench_compile_parts.py --data shards/printed-64x512 --threads 1
    python benchmarks/bench_compile_parts.py --data shards/printed-64x512 --threads 2 --batch 32
    python benchmarks/bench_compile_parts.py --smoke      # the code paths only, tiny sizes
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from train.compiled import compile_train_parts, compiler_works  # noqa: E402
from train.config import apply_overrides, preset  # noqa: E402
from train.demo_data import prepare_demo_data  # noqa: E402
from train.trainer import Env, prepare  # noqa: E402

from bench_compile import Stepper as PlainStepper  # noqa: E402

VARIANTS = ("eager", "compiled parts", "eager bf16", "compiled parts bf16")
SMOKE = ["model.res_channels=8,8,8,8", "model.enc_dim=16", "model.enc_depth=1", "model.enc_heads=2",
         "model.dec_dim=16", "model.emb_dim=16", "model.attn_dim=16", "model.cov_channels=4", "model.max_len=24"]


class Stepper(PlainStepper):
    """bench_compile's eager step (the trainer's), on the window trimmed as the trainer's eager step
    trims it, with the recognizer's train_parts compiled for `parts`."""

    def __init__(self, model, cfg, parts: bool, bf16: bool):
        super().__init__(model, cfg, compiled=False, bf16=bf16)
        if parts:
            compile_train_parts(model)

    def step(self, images: torch.Tensor, tokens: torch.Tensor) -> tuple[float, int]:
        batch = self.model.trim_padding({"tokens": tokens})
        return super().step(images, batch), batch["tokens"].shape[1]


def label_batches(tokens: torch.Tensor, batch: int, count: int) -> list[torch.Tensor]:
    """`count` batches of `batch` label rows drawn from `tokens`, the i-th with seed i (the same in every run)."""
    return [tokens[torch.randperm(len(tokens), generator=torch.Generator().manual_seed(i))[:batch]]
            for i in range(count)]


def dropout_off(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with every dropout at p=0 (two variants' losses can then be compared step for step)."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
    return model


def alternating_blocks(steppers: dict, images: torch.Tensor, batches: list[torch.Tensor], start: int,
                       blocks: int, steps: int) -> tuple[dict[str, list[float]], list]:
    """Time each stepper's `steps` steps in turn, `blocks` times over, on batches[start:]: the load
    of a shared machine falls on every variant alike. Returns (seconds per step by name, every step's output)."""
    times: dict[str, list[float]] = {name: [] for name in steppers}
    outputs = []
    k = start
    for _ in range(blocks):
        for name, s in steppers.items():
            for j in range(steps):
                t = time.perf_counter()
                outputs.append(s.step(images, batches[k + j]))
                times[name].append(time.perf_counter() - t)
        k += steps
    return times, outputs


def bench(cfg, blocks: int, steps: int) -> dict:
    torch.manual_seed(0)
    model, data, _ = prepare(cfg, Env(torch.device("cpu")), None)
    tokens = torch.from_numpy(data.targets["tokens"])
    b = cfg.batch_size
    batches = label_batches(tokens, b, blocks * steps + 3)
    images = torch.rand(b, 1, *model.render.size, generator=torch.Generator().manual_seed(1))

    # parity first, dropout off (dropout draws differ between graphs), 4 steps from the same weights
    quiet = dropout_off(copy.deepcopy(model))
    pair = [Stepper(copy.deepcopy(quiet), cfg, parts=p, bf16=False) for p in (False, True)]
    losses = [[s.step(images, batches[i])[0] for i in range(4)] for s in pair]
    parity = max(abs(a - c) / max(abs(a), 1e-12) for a, c in zip(*losses))

    steppers = {v: Stepper(copy.deepcopy(model), cfg, parts="parts" in v, bf16="bf16" in v) for v in VARIANTS}
    t0 = time.perf_counter()
    for i in range(3):  # compilation and first touch, not timed
        for s in steppers.values():
            s.step(images, batches[i])
    warmup = time.perf_counter() - t0
    times, outputs = alternating_blocks(steppers, images, batches, 3, blocks, steps)
    windows = [w for _, w in outputs]
    base = statistics.median(times["eager"])
    rows = {v: {"ms_per_step": 1e3 * statistics.median(t), "images_per_s": b / statistics.median(t),
                "vs_eager": base / statistics.median(t)} for v, t in times.items()}
    return {"kind": cfg.model.kind, "batch": b, "canvas": list(model.render.size), "mean_window": statistics.mean(windows),
            "steps_each": blocks * steps, "warmup_s": warmup, "loss_rel_diff": parity, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="a shard root with the split (default: the micro fixture's, with --smoke)")
    ap.add_argument("--split", default="train", help="the split whose labels are drawn (default train)")
    ap.add_argument("--config", default="print-cpu", help="the preset whose model is timed (default print-cpu)")
    ap.add_argument("--kind", default="hvt", help="a recognizer with train_parts (default hvt)")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=4, help="timed steps per block and variant")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=0, help="images per step (default: the preset's batch_size)")
    ap.add_argument("--smoke", action="store_true", help="tiny model, 1 block of 1 step (checks the code paths)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    why_not = compiler_works()
    if why_not:
        print(f"error: torch.compile cannot build here ({why_not})", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    overrides = [f"model.kind={args.kind}", "model.max_len=160", f"data.train_split={args.split}"]
    if args.smoke:
        overrides += SMOKE + ["batch_size=4"]
        args.blocks, args.steps = 1, 1
    if args.batch:
        overrides.append(f"batch_size={args.batch}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            if not args.smoke:
                ap.error("--data is required (or --smoke)")
            args.data = prepare_demo_data(Path(tmp), splits={"train": (8, 1)}, log=lambda msg: None)
        cfg = apply_overrides(preset(args.config), overrides + [f"data.root={args.data}"])
        r = bench(cfg, args.blocks, args.steps)
    print(f"{r['kind']}, batch {r['batch']}, canvas {r['canvas'][0]}x{r['canvas'][1]}, mean window "
          f"{r['mean_window']:.1f} tokens, {r['steps_each']} timed steps each, warm-up {r['warmup_s']:.0f} s; "
          f"losses eager vs compiled parts (dropout off, 4 steps): largest relative difference {r['loss_rel_diff']:.1e}")
    print("| variant | ms/step | images/s | vs eager |\n| --- | ---: | ---: | ---: |")
    for v, row in r["rows"].items():
        print(f"| {v} | {row['ms_per_step']:.1f} | {row['images_per_s']:.1f} | {row['vs_eager']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
