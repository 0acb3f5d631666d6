"""The prepared GPU check: one call measures what BENCHMARKS.md asks of a GPU session.

1. Training throughput (images/s) and MFU of the `paper` config (ViT-S/8 224x224, 5-layer decoder,
   RMML, batch 32) with bf16 autocast, eager and torch.compile'd, on random images and labels.
2. Batch-1 FPS at T=1/10/50 (re-mask sampler) vs AR greedy on the same encoder (docs/training.md protocol:
   warm-up, synchronize around each image, no data loading), eager.
3. The loss of a short real run when --data points at carried shards (python -m train.run --config
   paper with a step budget).
Everything is printed and written to $OUT/gpu_bench.json (or --json). Run on the device with e.g.

    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_bench.py --json $OUT/gpu_bench.json

and locally (a CPU smoke of the same code paths): python benchmarks/gpu_bench.py --smoke
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model import ModelConfig, build_model, count_params, flops_per_image  # noqa: E402
from train.config import preset  # noqa: E402
from train.trainer import _param_groups, _peak_flops  # noqa: E402

from bench_decode import ar_fixed_steps, time_per_image  # noqa: E402


def paper_model_cfg(smoke: bool) -> ModelConfig:
    cfg = preset("micro" if smoke else "paper").model
    cfg.num_symbols, cfg.num_modifiers = 260, 120  # MathWriting-sized vocabularies
    return cfg


def train_throughput(cfg: ModelConfig, batch: int, steps: int, compile_: bool, device) -> dict:
    torch.manual_seed(0)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(_param_groups(model, 1e-3), lr=1e-4, fused=device.type == "cuda")
    module = torch.compile(model) if compile_ else model
    images = torch.rand(batch, 1, *cfg.image_size, device=device)
    L = cfg.max_len
    sym = torch.randint(3, cfg.num_symbols, (batch, L), device=device)
    mod = torch.randint(3, cfg.num_modifiers, (batch, L), device=device)
    sym[:, 40:] = 0
    mod[:, 40:] = 0
    batch_t = {"symbols": sym, "modifiers": mod}
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    losses, times = [], []
    for i in range(steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        gen = torch.Generator(device=device).manual_seed(i)
        with autocast:
            parts = module(images, batch_t, gen)
        opt.zero_grad(set_to_none=True)
        parts["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(float(parts["loss"]))
    warm = times[min(5, steps // 2):]
    step_s = statistics.median(warm)
    ips = batch / step_s
    peak = _peak_flops(device)
    fpi = flops_per_image(cfg, train=True)
    return {"compile": compile_, "batch": batch, "params_M": count_params(model) / 1e6, "step_ms": 1000 * step_s,
            "images_per_s": ips, "tflops_per_s": fpi * ips / 1e12, "mfu": (fpi * ips / peak) if peak else None,
            "first_step_s": times[0], "loss_first_last": [losses[0], losses[-1]],
            "max_mem_GiB": torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None}


def fps(cfg: ModelConfig, Ts, n_images: int, ar_tokens: int, device) -> dict:
    torch.manual_seed(0)
    diff = build_model(cfg).to(device).eval()
    acfg = ModelConfig(**{**cfg.to_dict(), "kind": "ar", "num_tokens": 260, "loss": cfg.loss})
    ar = build_model(acfg).to(device).eval()
    ar.encoder.load_state_dict(diff.encoder.state_dict())
    images = [torch.rand(1, 1, *cfg.image_size, device=device) for _ in range(n_images)]
    out = {}
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        ts = time_per_image(lambda im: diff.encoder(im), images, 5, device)
        out["encoder"] = 1000 * statistics.median(ts)
        for T in Ts:
            gen = torch.Generator(device=device).manual_seed(0)
            ts = time_per_image(lambda im: diff.recognize(im, T=T, sampler="remask", generator=gen), images, 3, device)
            out[f"remask_T{T}"] = 1000 * statistics.median(ts)
        ts = time_per_image(lambda im: ar_fixed_steps(ar, im, ar_tokens), images, 3, device)
        out[f"ar_greedy_{ar_tokens}tok"] = 1000 * statistics.median(ts)
    return {k: {"ms": v, "fps": 1000 / v} for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU: checks the script, measures nothing")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--fps-images", type=int, default=30)
    ap.add_argument("--ar-tokens", type=int, default=30, help="mean MathWriting label length in tokens")
    ap.add_argument("--data", default=None, help="carried shard root for the short real run")
    ap.add_argument("--real-minutes", type=float, default=3.0)
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "gpu_bench.json"))
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    report: dict = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                    "torch": torch.__version__}
    cfg = paper_model_cfg(args.smoke)
    steps = 3 if args.smoke else args.steps
    report["train_eager"] = train_throughput(cfg, 4 if args.smoke else args.batch, steps, False, device)
    print("train eager:", json.dumps(report["train_eager"]), flush=True)
    if not args.no_compile and not args.smoke:
        try:
            report["train_compiled"] = train_throughput(cfg, args.batch, steps, True, device)
            print("train compiled:", json.dumps(report["train_compiled"]), flush=True)
        except Exception as exc:  # report, keep measuring the rest
            report["train_compiled"] = {"error": f"{type(exc).__name__}: {exc}"}
            print("train compiled failed:", exc, flush=True)
    Ts = (1, 2) if args.smoke else (1, 10, 50)
    report["fps_batch1"] = fps(cfg, Ts, 3 if args.smoke else args.fps_images, 4 if args.smoke else args.ar_tokens,
                               device)
    print("fps:", json.dumps(report["fps_batch1"]), flush=True)
    if args.data:
        out = Path(os.environ.get("OUT", "/tmp")) / "paper-short"
        cmd = [sys.executable, "-m", "train.run", "--config", "micro" if args.smoke else "paper", "--data", args.data,
               "--out", str(out), "--no-eval", f"max_minutes={args.real_minutes}", "log_every=10",
               "eval_splits=" + ("train" if args.smoke else "test")]
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()] if (out / "metrics.jsonl").exists() else []
        report["real_run"] = {"cmd": " ".join(cmd), "rc": proc.returncode, "wall_s": time.time() - t0,
                              "log_tail": proc.stdout[-3000:] + proc.stderr[-2000:],
                              "curve": [(r["step"], r["loss"], r.get("images_per_s")) for r in rows if "loss" in r]}
        print("real run:", report["real_run"]["log_tail"], flush=True)
    Path(args.json).write_text(json.dumps(report, indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
