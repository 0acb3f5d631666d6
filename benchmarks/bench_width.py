"""How much a model change costs per training step, before spending 110 minutes on it.

Each variant (config overrides on a preset's recognizer, the AR baseline unless --kind says another;
by default a wider or deeper `print-cpu` AR baseline) starts from its own weights and takes the trainer's eager step (bench_compile_parts'
Stepper: the window trimmed at the batch's longest label) on one set of labels drawn from a shard
split and random images at the preset's canvas; the timed steps alternate in blocks, so a noisy
machine slows every variant alike. Medians, as ratios to the first variant.

    python benchmarks/bench_width.py --data shards/printed-64x512 --threads 1
    python benchmarks/bench_width.py --preset crohme-cpu --data shards/crohme-96x384 \
        --variant "dropout 0.1 (preset)=" --variant "no dropout=model.dropout=0"
    python benchmarks/bench_width.py --kind hvt --data shards/printed-64x512 --variant "attention 128=" \
        --variant "attention 64=model.attn_dim=64"
    python benchmarks/bench_width.py --smoke      # the code paths only, tiny sizes
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from model.registry import config_keys  # noqa: E402
from train.config import apply_overrides, preset  # noqa: E402
from train.demo_data import prepare_demo_data  # noqa: E402
from train.trainer import Env, prepare  # noqa: E402

from bench_compile_parts import Stepper, alternating_blocks, label_batches  # noqa: E402

VARIANTS = {"width 96 (print-cpu)": [], "decoder 128": ["model.dec_dim=128"],
            "decoder 128, 3 layers": ["model.dec_dim=128", "model.dec_depth=3"],
            "encoder and decoder 128": ["model.enc_dim=128", "model.dec_dim=128"], "encoder depth 6": ["model.enc_depth=6"]}
SMOKE = ["model.enc_dim=16", "model.dec_dim=16", "model.enc_heads=2", "model.dec_heads=2", "model.max_len=24", "batch_size=4"]


def bench(data: Path, blocks: int, steps: int, extra: list[str], variants: dict[str, list[str]] = VARIANTS,
          preset_name: str = "print-cpu", max_len: int = 160, kind: str = "ar") -> dict[str, dict]:
    steppers, params = {}, {}
    for name, overrides in variants.items():
        cfg = apply_overrides(preset(preset_name), [f"model.kind={kind}", f"model.max_len={max_len}", f"data.root={data}"]
                              + extra + overrides)
        torch.manual_seed(0)
        model, shards, _ = prepare(cfg, Env(torch.device("cpu")), None)
        params[name] = sum(p.numel() for p in model.parameters())
        steppers[name] = Stepper(model, cfg, parts=False, bf16=False)
    tokens = torch.from_numpy(shards.targets["tokens"])
    b = cfg.batch_size
    batches = label_batches(tokens, b, blocks * steps + 1)
    images = torch.rand(b, 1, *model.render.size, generator=torch.Generator().manual_seed(1))
    for s in steppers.values():  # first touch, not timed
        s.step(images, batches[0])
    times, _ = alternating_blocks(steppers, images, batches, 1, blocks, steps)
    base = statistics.median(next(iter(times.values())))
    return {n: {"params": params[n], "ms_per_step": 1e3 * statistics.median(t), "vs_base": statistics.median(t) / base}
            for n, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="a shard root whose train split's labels are drawn")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per block and variant")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--preset", default="print-cpu", help="the preset whose AR baseline is timed (default: print-cpu)")
    ap.add_argument("--kind", default="ar", help="the recognizer timed (model.kind; default: ar, the AR baseline)")
    ap.add_argument("--max-len", type=int, default=160, help="model.max_len, the label window (default: 160)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=KEY=VALUE,...",  # a comma before KEY= splits
                    help="a named set of overrides, repeatable; the first is the base (default: the width variants)")
    ap.add_argument("--smoke", action="store_true", help="tiny models, 1 block of 1 step (checks the code paths)")
    args = ap.parse_args(argv)
    variants = VARIANTS
    if args.variant:
        variants = {}
        for v in args.variant:
            name, sep, overrides = v.partition("=")
            if not sep or not name:
                ap.error(f"--variant {v!r}: want NAME=KEY=VALUE,... (NAME= for the preset as it is)")
            variants[name] = [o for o in re.split(r",(?=[\w.]+=)", overrides) if o]  # values may hold commas
    torch.set_num_threads(args.threads)
    keys = set(config_keys(args.kind))
    extra = [o for o in SMOKE if not o.startswith("model.") or o.split("=")[0].removeprefix("model.") in keys] \
        if args.smoke else []
    if args.smoke:
        args.blocks, args.steps = 1, 1
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            if not args.smoke:
                ap.error("--data is required (or --smoke)")
            args.data = prepare_demo_data(Path(tmp), splits={"train": (8, 1)}, log=lambda msg: None)
        rows = bench(args.data, args.blocks, args.steps, extra, variants, args.preset, args.max_len, args.kind)
    print(f"| variant | parameters | ms/step | vs {next(iter(rows))} |\n| --- | ---: | ---: | ---: |")
    for name, r in rows.items():
        print(f"| {name} | {r['params'] / 1e6:.2f}M | {r['ms_per_step']:.1f} | {r['vs_base']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
