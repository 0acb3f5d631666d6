"""PyTorch eager vs ONNX Runtime fp32 vs ONNX Runtime dynamic int8, side by side on one checkpoint.

Latency: batch 1, one thread each (torch.set_num_threads and ONNX Runtime's intra-op threads), the
three backends run on the same image one after another (so a busy machine slows all three alike),
p50/p95 over --n test images, for each decoder asked (GryphOne remask T=1 and T=10; a token recognizer
greedy, and beam at each --beams width where its export has beam).
Throughput: images/s over the same images at batch 1, 8, 32 (remask T=10; greedy). Accuracy: ExpRate
(train.eval's: lexed tokens equal, spacing ignored) of each backend's outputs against the references
(remask T=10; every token decoder), and how many outputs equal PyTorch's.

    python benchmarks/bench_onnx.py --ckpt runs/demo/ckpt.pt --data runs/demo/shards --split test --n 100
    python benchmarks/bench_onnx.py --ckpt runs/demo/pretrain/ckpt.pt --data runs/demo/shards --split test  # AR
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import DecodeSpec, load  # noqa: E402
from model.onnx_export import export_onnx  # noqa: E402
from model.onnx_ensemble import read_any_export  # noqa: E402
from tokenizer.metrics import score  # noqa: E402
from train.data import ShardDataset, collate, load_split_data  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def latency(backends: dict, images: torch.Tensor, specs: list[DecodeSpec], warmup: int = 5) -> dict:
    """{decoder: {backend: {"p50_ms", "p95_ms"}}} at batch 1, backends interleaved per image."""
    out = {}
    for spec in specs:
        times: dict[str, list[float]] = {name: [] for name in backends}
        for i in range(images.shape[0]):
            for name, rec in backends.items():
                t0 = time.perf_counter()
                rec.recognize(images[i: i + 1], spec)
                if i >= warmup:
                    times[name].append(1000 * (time.perf_counter() - t0))
        out[spec.name] = {name: {"p50_ms": round(statistics.median(t), 2), "p95_ms": round(_pct(t, 0.95), 2)}
                          for name, t in times.items()}
    return out


def throughput(backends: dict, images: torch.Tensor, spec: DecodeSpec, batches=(1, 8, 32)) -> dict:
    """{batch: {backend: images/s}} over all images, each backend in turn per batch size."""
    out = {}
    for bs in batches:
        out[bs] = {}
        for name, rec in backends.items():
            rec.recognize(images[:bs], spec)  # warm-up at this shape
            t0 = time.perf_counter()
            for i in range(0, images.shape[0], bs):
                rec.recognize(images[i: i + bs], spec)
            out[bs][name] = round(images.shape[0] / (time.perf_counter() - t0), 1)
    return out


def accuracy(backends: dict, images: torch.Tensor, refs: list[str], spec: DecodeSpec) -> dict:
    hyps = {name: rec.recognize(images, spec) for name, rec in backends.items()}
    base = hyps["pytorch"]
    return {name: {"exprate": round(100 * score(refs, hs)["em"], 2),
                   "same_as_pytorch": sum(a == b for a, b in zip(hs, base)), "n": len(refs)}
            for name, hs in hyps.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=None, help="a checkpoint or a shipped model's name (default: the shipped one)")
    ap.add_argument("--data", required=True, help="shard root")
    ap.add_argument("--split", default="test")
    ap.add_argument("--n", type=int, default=100, help="test images timed (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=1, help="threads per backend (default: %(default)s)")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--beams", type=int, nargs="*", default=[5],
                    help="beam widths timed beside greedy for a token recognizer (default: %(default)s)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load(args.ckpt)
    rec = loaded.recognizer
    tmp = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    export_onnx(loaded, tmp, int8=True)
    backends = {"pytorch": rec, "onnx-fp32": read_any_export(tmp, precision="fp32", threads=args.threads),
                "onnx-int8": read_any_export(tmp, precision="int8", threads=args.threads)}
    data = load_split_data(Path(args.data) / args.split, rec.targets, rec.cfg.max_len, labels=rec.labels, keep_all=True)
    items = [ShardDataset(data, rec.render.size)[i] for i in range(min(args.n, len(data.rows)))]
    images, refs = collate(items)["image"], [it["latex"] for it in items]
    specs = [DecodeSpec("remask", T=1), DecodeSpec("mask-predict", T=10), DecodeSpec("remask", T=10)] \
        if rec.label_kind == "sat" else [DecodeSpec("greedy")] + [DecodeSpec("beam", beam=w) for w in args.beams]
    if "beam" not in backends["onnx-fp32"].samplers:  # an export without beam (PosFormer's): greedy only
        specs = [s for s in specs if s.sampler != "beam"]
    scored = specs[-1:] if rec.label_kind == "sat" else specs  # GryphOne: remask T=10; token recognizers: each
    report = {
        "ckpt": str(loaded.path), "kind": rec.kind, "n": len(refs), "threads": args.threads,
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {open('/proc/loadavg').read().split()[0]}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "graph_bytes": {p.relative_to(tmp).as_posix(): p.stat().st_size for p in sorted(tmp.rglob("*.onnx"))},
        "latency_batch1": latency(backends, images, specs),
        "throughput_images_per_s": throughput(backends, images, specs[-1] if rec.label_kind == "sat" else specs[0]),
        "accuracy": {s.name: accuracy(backends, images, refs, s) for s in scored},
    }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
