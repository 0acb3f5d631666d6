"""The prepared device check: what a GPU lease measures, in priority order, within one call's budget.

1. Training MFU, eager against compiled (bf16 autocast, fused AdamW, static shapes: random images and
   labels of fixed size), at batch 32, 64 and 128 for `paper` (GryphOne), `posformer-paper` and
   `hvt-paper`, with peak memory; GryphOne first, then the others, while the budget lasts.
2. Decoding FPS: GryphOne (`paper` size) at batch 1 and 64, mask-predict and re-mask at T = 1, 10, 50,
   eager against `train.compiled.compile_for_decoding` (CUDA graphs through torch.compile's
   "reduce-overhead"), outputs compared; beside the paper's own batch-1 figures (V100: 164 FPS at T=1,
   73.7 at T=10, 21.2 at T=50). An AR greedy decoder on the same encoder at CROHME length (30 tokens),
   eager against compiled on preallocated caches.
3. The data pipeline alone (with --data): images/s the DataLoader sustains with 0..8 workers on the
   carried shards, beside what the compiled training step consumes.
Every part is written to --json as soon as it is measured (a call cut short keeps what it reached);
a part that does not fit in what is left of --budget-minutes is recorded as skipped. What the call
leaves is for a training run (benchmarks/gpu_check.sh runs one after this script, its checkpoint to $OUT).

    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --budget-minutes 6 --json $OUT/gpu_check.json
    python benchmarks/gpu_check.py --smoke      # CPU, tiny shapes: every code path, nothing measured
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from model import DecodeSpec  # noqa: E402
from train.compiled import compile_for_decoding  # noqa: E402

from bench_decode import ar_beside, ar_fixed_steps, time_per_image  # noqa: E402
from gpu_bench import SHAPES, _autocast, bench_setup, setup_device, train_throughput  # noqa: E402

PAPER_FPS = {1: 164.0, 10: 73.7, 50: 21.2}
"""GryphOne's paper, batch 1 on a V100 (the re-mask sampler)."""
PRESETS = ("paper", "posformer-paper", "hvt-paper")


def record(report: dict, key: str, value, path: str) -> None:
    """Add one part to the report and rewrite the JSON (each entry was printed as it was measured)."""
    report[key] = value
    Path(path).write_text(json.dumps(report, indent=1))


class Budget:
    """Seconds left of the call; a part asks before it starts."""

    def __init__(self, minutes: float):
        self.end = time.time() + 60 * minutes

    def left(self) -> float:
        return self.end - time.time()

    def allows(self, seconds: float) -> bool:
        return self.left() > seconds


def _free(device) -> None:
    torch._dynamo.reset()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def train_table(args, device, budget: Budget) -> list[dict]:
    """MFU eager and compiled for each preset and batch, while the budget lasts (each entry ~20-60 s)."""
    rows = []
    for name in args.presets:
        for batch in args.batches:
            for compiled in (False, True):
                entry = {"preset": name, "batch": batch, "compile": compiled}
                if not budget.allows(args.reserve_s + (60 if compiled else 20)):
                    rows.append({**entry, "skipped": "budget"})
                    continue
                tcfg, model = bench_setup(name, args.smoke)
                try:
                    entry.update(train_throughput(tcfg, model, batch, args.steps, compiled, device,
                                                  SHAPES[name].label_len))
                except Exception as exc:  # out of memory, a compile failure: recorded, the rest goes on
                    entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                del model
                _free(device)
                rows.append(entry)
                print("train", json.dumps(entry), flush=True)
    return rows


def _decoders(model, batch: int, Ts) -> dict:
    specs = {}
    for T in Ts:
        specs[f"mask-predict-T{T}"] = DecodeSpec("mask-predict", T=T)
        specs[f"remask-T{T}"] = DecodeSpec("remask", T=T, seed=0)
    return specs


def fps_table(args, device, budget: Budget) -> list[dict]:
    """Images/s of each sampler at batch 1 and 64, eager and compiled; outputs compared."""
    _, diff = bench_setup("paper", args.smoke)
    diff = diff.to(device).eval()
    fast = compile_for_decoding(copy.deepcopy(diff))
    rows = []
    for batch in args.fps_batches:
        images = [torch.rand(batch, 1, *diff.render.size, device=device) for _ in range(args.fps_repeats)]
        for label, spec in _decoders(diff, batch, args.Ts).items():
            if not budget.allows(args.reserve_s + 30):
                rows.append({"decoder": label, "batch": batch, "skipped": "budget"})
                continue
            row = {"decoder": label, "batch": batch, "paper_fps_batch1_v100": PAPER_FPS.get(spec.T)}
            outs = {}
            for name, m in (("eager", diff), ("compiled", fast)):
                try:
                    with torch.no_grad(), _autocast(device):
                        fn = (lambda im, m=m: m.decode_sat(im, spec))
                        times = time_per_image(fn, images, 2, device)
                        outs[name] = [t.cpu() for t in fn(images[0])]
                    row[f"{name}_fps"] = batch / statistics.median(times)
                except Exception as exc:
                    row[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            if len(outs) == 2:
                row["outputs_equal"] = all(torch.equal(a, b) for a, b in zip(outs["eager"], outs["compiled"]))
            rows.append(row)
            print("fps", json.dumps(row), flush=True)
    if budget.allows(args.reserve_s + 40):
        rows.append(ar_row(args, diff, device))
    return rows


def ar_row(args, diff, device) -> dict:
    """Batch-1 AR greedy on GryphOne's encoder: `ar_tokens` steps with the growing cache (eager), and
    the compiled decoder on preallocated caches (CUDA graphs) to its own stop, outputs compared."""
    ar = ar_beside(diff, args.ar_tokens, num_tokens=SHAPES["paper"].vocab[0])
    fast = compile_for_decoding(copy.deepcopy(ar))
    images = [torch.rand(1, 1, *diff.render.size, device=device) for _ in range(args.fps_repeats)]
    row = {"decoder": f"greedy-{args.ar_tokens}tok", "batch": 1}
    spec = DecodeSpec("greedy")
    with torch.no_grad(), _autocast(device):
        times = time_per_image(lambda im: ar_fixed_steps(ar, im, args.ar_tokens), images, 2, device)
        row["eager_fps"] = 1 / statistics.median(times)
        try:
            times = time_per_image(lambda im: fast.decode_ids(im, spec), images, 2, device)
            row["compiled_fps"] = 1 / statistics.median(times)
            ids = [fast.decode_ids(im, spec) for im in images[:3]]
            row["compiled_tokens"] = [int(i.shape[1]) - 1 for i in ids]
            row["outputs_equal"] = all(torch.equal(a, ar.decode_ids(im, spec)) for a, im in zip(ids, images))
        except Exception as exc:
            row["compiled_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    print("fps", json.dumps(row), flush=True)
    return row


def loader_table(args, budget: Budget) -> list[dict]:
    """Images/s of the DataLoader alone (decode PNG, to tensor, collate) with 0..8 workers."""
    from train.data import ShardDataset, collate, load_split_data
    from datasets_prep.render_spec import RenderSpec

    root = Path(args.data)
    spec = RenderSpec.from_shards(root)
    split = root / "train"
    data = load_split_data(split, lambda latex: {"tokens": np.zeros(8, np.int64)}, 8, labels=False, keep_all=True)
    dataset = ShardDataset(data, spec.size if spec else (96, 384))
    rows = []
    for workers in args.loader_workers:
        if not budget.allows(args.reserve_s + 15):
            rows.append({"workers": workers, "skipped": "budget"})
            continue
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=workers,
                                             collate_fn=collate, persistent_workers=False)
        t0, seen = time.perf_counter(), 0
        for i, batch in enumerate(loader):
            if i == 1:
                t0, seen = time.perf_counter(), 0  # worker start-up apart
            seen += batch["image"].shape[0]
            if time.perf_counter() - t0 > args.loader_seconds:
                break
        rows.append({"workers": workers, "images_per_s": seen / max(time.perf_counter() - t0, 1e-9)})
        print("loader", json.dumps(rows[-1]), flush=True)
    return rows


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU: checks the script, measures nothing")
    ap.add_argument("--budget-minutes", type=float, default=6.0)
    ap.add_argument("--reserve-s", type=float, default=0.0, help="seconds every part leaves for what follows")
    ap.add_argument("--parts", nargs="+", default=["train", "fps", "loader"], choices=["train", "fps", "loader"],
                    help="what to measure (default: all three; loader needs --data)")
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    ap.add_argument("--batches", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--steps", type=int, default=20, help="timed training steps per entry")
    ap.add_argument("--fps-batches", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--Ts", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--fps-repeats", type=int, default=20)
    ap.add_argument("--ar-tokens", type=int, default=30, help="CROHME's mean label length in tokens")
    ap.add_argument("--data", default=None, help="carried shard root: also time the data pipeline alone")
    ap.add_argument("--loader-workers", type=int, nargs="+", default=[0, 2, 4, 8])
    ap.add_argument("--loader-seconds", type=float, default=8.0)
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "gpu_check.json"))
    args = ap.parse_args(argv)
    if args.smoke:  # tiny shapes, few repeats; the lists the command line narrows stay narrowed
        args.steps, args.fps_repeats, args.ar_tokens, args.loader_seconds = 3, 2, 4, 1.0
        args.batches = [b for b in args.batches if b <= 4] or [2]
        args.fps_batches = [b for b in args.fps_batches if b <= 2] or [1]
        args.Ts = [T for T in args.Ts if T <= 2] or [1]
        args.loader_workers = [w for w in args.loader_workers if w <= 1] or [0]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    budget = Budget(args.budget_minutes)
    device = setup_device(args.smoke, 0)
    report: dict = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                    "torch": torch.__version__, "budget_minutes": args.budget_minutes}
    if "train" in args.parts:
        record(report, "train", train_table(args, device, budget), args.json)
    if "fps" in args.parts:
        record(report, "fps", fps_table(args, device, budget), args.json)
    if args.data and "loader" in args.parts:
        record(report, "loader", loader_table(args, budget), args.json)
    if device.type == "cuda":
        record(report, "max_mem_GiB", torch.cuda.max_memory_allocated() / 2**30, args.json)
    record(report, "wall_s", 60 * args.budget_minutes - budget.left(), args.json)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
