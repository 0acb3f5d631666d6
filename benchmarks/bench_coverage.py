"""HVT's coverage term two ways, side by side in one process: a convolution then a projection (as the
layers are declared) against the composed product `CoverageAttention.coverage_term` computes.

    python benchmarks/bench_coverage.py --data shards/printed-64x512 --threads 1

First the term alone (forward and backward over one batch's coverage, the two forms in alternating
blocks, medians) at the sizes of each `--configs` preset's HVT on the data's canvas; then, unless
`--no-step`, the trainer's eager step of the first preset's HVT (bench_compile_parts' Stepper: the window
trimmed at the batch's longest label), both forms from the same weights on the same labels and random
images, eager and with `compile_parts`, in alternating blocks; medians. With dropout off, the first
losses of the two forms are compared.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model.hvt.decoder import CoverageAttention  # noqa: E402
from train.compiled import compiler_works  # noqa: E402
from train.config import apply_overrides, preset  # noqa: E402
from train.demo_data import prepare_demo_data  # noqa: E402
from train.trainer import Env, prepare  # noqa: E402

from bench_compile_parts import SMOKE, Stepper, alternating_blocks, dropout_off, label_batches  # noqa: E402


def conv_then_projection(self: CoverageAttention, coverage: torch.Tensor) -> torch.Tensor:
    """The coverage term as the layers are declared: conv (1 -> C) over the grid, then C -> A."""
    feats = self.cov_conv(coverage.view(-1, 1, *self.grid)).flatten(2).transpose(1, 2)
    return self.cov_proj(feats)


def with_plain_coverage(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with every CoverageAttention computing its term as conv then projection."""
    for mod in model.modules():
        if isinstance(mod, CoverageAttention):
            mod.coverage_term = types.MethodType(conv_then_projection, mod)
    return model


def bench_term(cfg, blocks: int, reps: int = 10) -> dict:
    """The coverage term alone, forward and backward, both forms, at `cfg`'s HVT sizes and batch."""
    torch.manual_seed(0)
    model, _, _ = prepare(cfg, Env(torch.device("cpu")), None)
    attn = model.decoder.attn
    plain = types.MethodType(conv_then_projection, attn)
    cov = torch.rand(cfg.batch_size, attn.grid[0] * attn.grid[1], requires_grad=True)
    diff = (plain(cov) - attn.coverage_term(cov)).abs().max().item()
    times: dict[str, list[float]] = {"conv then projection": [], "composed": []}
    for _ in range(blocks):
        for v, f in (("conv then projection", plain), ("composed", attn.coverage_term)):
            t = time.perf_counter()
            for _ in range(reps):
                f(cov).sum().backward()
            times[v].append((time.perf_counter() - t) / reps)
    ms = {v: 1e3 * statistics.median(t) for v, t in times.items()}
    return {"preset": cfg.name, "batch": cfg.batch_size, "grid": list(attn.grid), "attn_dim": attn.query.out_features,
            "channels": attn.cov_conv.out_channels, "kernel": list(attn.cov_conv.kernel_size), "max_abs_diff": diff,
            "ms": ms, "speedup": ms["conv then projection"] / ms["composed"]}


def bench(cfg, blocks: int, steps: int, parts: tuple[bool, ...]) -> dict:
    torch.manual_seed(0)
    model, data, _ = prepare(cfg, Env(torch.device("cpu")), None)
    dropout_off(model)
    b = cfg.batch_size
    batches = label_batches(torch.from_numpy(data.targets["tokens"]), b, blocks * steps + 2)
    images = torch.rand(b, 1, *model.render.size, generator=torch.Generator().manual_seed(1))
    variants = {}
    for p in parts:
        suffix = ", compiled parts" if p else ", eager"
        variants["conv then projection" + suffix] = Stepper(with_plain_coverage(copy.deepcopy(model)), cfg, p, False)
        variants["composed" + suffix] = Stepper(copy.deepcopy(model), cfg, p, False)
    losses = {v: [s.step(images, batches[i])[0] for i in range(2)] for v, s in variants.items()}  # also warm-up
    ref = next(iter(losses.values()))
    parity = max(abs(a - r) / max(abs(r), 1e-12) for ls in losses.values() for a, r in zip(ls, ref))
    times, _ = alternating_blocks(variants, images, batches, 2, blocks, steps)
    rows = {v: 1e3 * statistics.median(t) for v, t in times.items()}
    return {"preset": cfg.name, "batch": b, "canvas": list(model.render.size), "steps_each": blocks * steps,
            "loss_rel_diff": parity, "ms_per_step": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="a shard root whose train split's labels are drawn (or --smoke)")
    ap.add_argument("--configs", nargs="+", default=["print-cpu", "hvt-paper"],
                    help="presets whose HVT sizes the term is timed at (default print-cpu hvt-paper); the step: the first")
    ap.add_argument("--no-step", action="store_true", help="time the term alone, not the training step")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per block and variant")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eager-only", action="store_true", help="leave out the compile_parts pair")
    ap.add_argument("--smoke", action="store_true", help="tiny model, 1 block of 1 step (checks the code paths)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    parts = (False,) if args.eager_only else (False, True)
    why_not = "" if args.no_step or True not in parts else compiler_works()
    if why_not:
        print(f"error: torch.compile cannot build here ({why_not}); use --eager-only", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    overrides = ["model.kind=hvt", "model.max_len=160"]
    if args.smoke:
        overrides += SMOKE + ["batch_size=4"]
        args.blocks, args.steps = 1, 1
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            if not args.smoke:
                ap.error("--data is required (or --smoke)")
            args.data = prepare_demo_data(Path(tmp), splits={"train": (8, 1)}, log=lambda msg: None)
        cfgs = [apply_overrides(preset(name), overrides + [f"data.root={args.data}"]) for name in args.configs]
        report = {"term": [bench_term(cfg, 2 if args.smoke else 8, 1 if args.smoke else 10) for cfg in cfgs]}
        if not args.no_step:
            report["step"] = bench(cfgs[0], args.blocks, args.steps, parts)
    print("| preset's HVT sizes | batch, grid | A, C, k | conv then projection ms | composed ms | speed-up | max abs diff |\n"
          "| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for t in report["term"]:
        print(f"| {t['preset']} | {t['batch']}, {t['grid'][0]}x{t['grid'][1]} | {t['attn_dim']}, {t['channels']}, "
              f"{t['kernel'][0]} | {t['ms']['conv then projection']:.2f} | {t['ms']['composed']:.2f} | "
              f"{t['speedup']:.2f}x | {t['max_abs_diff']:.1e} |")
    r = report.get("step")
    if r:
        print(f"\n{r['preset']} HVT training step, batch {r['batch']}, canvas {r['canvas'][0]}x{r['canvas'][1]}, "
              f"{r['steps_each']} timed steps each; losses of the forms (dropout off, 2 steps): largest relative "
              f"difference {r['loss_rel_diff']:.1e}")
        print("| coverage term | ms/step | vs conv then projection |\n| --- | ---: | ---: |")
        ms = r["ms_per_step"]
        for v, t in ms.items():
            print(f"| {v} | {t:.1f} | {ms[v.replace('composed', 'conv then projection')] / t:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
