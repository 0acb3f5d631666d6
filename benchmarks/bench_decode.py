"""Batch-1 decoding speed on one encoder: diffusion T=1/10/50 (re-mask and mask-predict) vs AR greedy.

docs/training.md's FPS protocol: batch size 1, warm-up, synchronize around each image, no data loading;
per-image ms and the per-step cost. With checkpoints (--ckpt, --ar-ckpt) real test images are decoded
and the AR decoder stops at its own EOS; without, random weights are used and the AR decoder is run
for exactly --ar-tokens steps (the mean label length of the test set), so both sides do the work a
trained model would.

    python benchmarks/bench_decode.py --config crohme-cpu --ar-tokens 22
    python benchmarks/bench_decode.py --ckpt runs/crohme-cpu/ckpt.pt --ar-ckpt runs/crohme-cpu-ar/ckpt.pt --data shards/crohme-96x384 --split test2014
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import ModelConfig, build_model  # noqa: E402
from model.autoregressive import BOS  # noqa: E402
from train.config import preset  # noqa: E402


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def ar_fixed_steps(model, image, steps: int) -> torch.Tensor:
    """Greedy decoding forced to `steps` tokens (KV-cached), for random-weight timing."""
    mem_kv = model.decoder.memory_kv(model.encoder(image))
    caches = [{} for _ in model.decoder.blocks]
    tok = torch.full((1, 1), BOS, dtype=torch.long, device=image.device)
    for pos in range(steps):
        tok = model.decoder(tok, mem_kv, caches, start=pos)[:, -1:].argmax(-1)
    return tok


def time_per_image(fn, images, warmup: int, device) -> list[float]:
    for im in images[:warmup]:
        fn(im)
    _sync(device)
    times = []
    for im in images:
        _sync(device)
        t0 = time.perf_counter()
        fn(im)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="crohme-cpu", help="preset whose model shape to time (random weights)")
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--ar-ckpt", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default="test2014")
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ar-tokens", type=int, default=22)
    ap.add_argument("--Ts", default="1,10,50")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    if args.ckpt:
        from train.inference import load_model

        diff, vocab, mcfg, _ = load_model(args.ckpt, args.device)
    else:
        mcfg = preset(args.config).model
        mcfg.num_symbols, mcfg.num_modifiers = 120, 60
        diff = build_model(mcfg).to(device).eval()
    if args.ar_ckpt:
        from train.inference import load_model

        ar, _, acfg, _ = load_model(args.ar_ckpt, args.device)
    else:
        acfg = ModelConfig(**{**mcfg.to_dict(), "kind": "ar", "num_tokens": 120, "loss": mcfg.loss})
        acfg.max_len = max(mcfg.max_len, args.ar_tokens + 2)
        ar = build_model(acfg).to(device).eval()
        ar.encoder.load_state_dict(diff.encoder.state_dict())
    if args.data:
        from train.data import ShardDataset, load_split_data

        data = load_split_data(Path(args.data) / args.split, vocab, mcfg.max_len, keep_all=True)
        ds = ShardDataset(data, mcfg.image_size)
        images = [ds[i]["image"][None].to(device) for i in range(min(args.images, len(ds)))]
    else:
        images = [torch.rand(1, 1, *mcfg.image_size, device=device) for _ in range(args.images)]

    results = {}
    with torch.no_grad():
        results["encoder only"] = time_per_image(lambda im: diff.encoder(im), images, args.warmup, device)
        for T in [int(t) for t in args.Ts.split(",")]:
            for sampler in ("remask", "mask-predict"):
                gen = torch.Generator(device=device).manual_seed(0)
                results[f"diffusion {sampler} T={T}"] = time_per_image(
                    lambda im: diff.recognize(im, T=T, sampler=sampler, generator=gen), images, args.warmup, device)
        if args.ar_ckpt:
            results["AR greedy (own EOS)"] = time_per_image(lambda im: ar.recognize(im), images, args.warmup, device)
        else:
            results[f"AR greedy ({args.ar_tokens} tokens)"] = time_per_image(
                lambda im: ar_fixed_steps(ar, im, args.ar_tokens), images, args.warmup, device)
    ar_key = [k for k in results if k.startswith("AR")][0]
    ar_ms = 1000 * statistics.median(results[ar_key])
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, device {device}, "
          f"threads {args.threads}, model {mcfg.image_size[0]}x{mcfg.image_size[1]} patch {mcfg.patch} "
          f"enc {mcfg.enc_dim}x{mcfg.enc_depth} dec {mcfg.dec_dim}x{mcfg.dec_depth} len {mcfg.max_len}")
    print(f"{'decoder':<32} {'ms/img (median)':>16} {'FPS':>8} {'speed vs AR':>12}")
    table = {}
    for name, ts in results.items():
        ms = 1000 * statistics.median(ts)
        table[name] = {"ms": ms, "fps": 1000 / ms, "speed_vs_ar": ar_ms / ms}
        print(f"{name:<32} {ms:>16.2f} {1000 / ms:>8.1f} {ar_ms / ms:>11.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
