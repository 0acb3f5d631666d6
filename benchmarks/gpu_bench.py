"""The prepared GPU check: one call measures what BENCHMARKS.md asks of a GPU session.

1. Training throughput (images/s) and MFU of the `paper` config (ViT-S/8 224x224, 5-layer decoder,
   RMML, batch 32) with bf16 autocast, eager and torch.compile'd, on random images and labels; beside
   it, eager, the other recognizers at their published sizes (presets `posformer-paper`, `hvt-paper`),
   each with its preset's batch and optimizer.
2. Batch-1 FPS at T=1/10/50 (GryphOne's re-mask sampler, `decode_sat`) vs AR greedy on the same encoder
   (docs/training.md protocol: warm-up, synchronize around each image, no data loading), eager.
3. The loss of a short real run when --data points at carried shards (python -m train.run --config
   paper with a time budget).
Everything is printed and written to $OUT/gpu_bench.json (or --json) after each part. The whole call
keeps within --budget-minutes (the real run gets what is left). Run on the device with e.g.

    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_bench.py --json $OUT/gpu_bench.json

and locally (a CPU smoke of the same code paths, tiny sizes, a few steps): python benchmarks/gpu_bench.py --smoke
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from datasets_prep.render_spec import RenderSpec  # noqa: E402
from model import DecodeSpec, GryphOne, Recognizer, build, count_params  # noqa: E402
from model.registry import recognizer_class  # noqa: E402
from model.posformer.token_forest import IGNORE, RELATIONS  # noqa: E402
from tokenizer.label_spec import LabelSpec  # noqa: E402
from tokenizer.vocab import SATVocab, TokenVocab  # noqa: E402
from train.compiled import compile_for_training  # noqa: E402
from train.config import TrainConfig, preset  # noqa: E402
from train.trainer import PEAK_BF16_FLOPS, make_optimizer  # noqa: E402

from bench_decode import ar_beside, ar_fixed_steps, sat_labels, time_per_image, token_labels  # noqa: E402


@dataclass(frozen=True)
class Shape:
    """What the random-weight stand-in for a preset is built with and fed: the canvas and vocabulary
    of the data it trains on, the length of each random label, and the overrides that shrink it for --smoke."""

    canvas: tuple[int, int]
    vocab: tuple[int, ...]      # SAT: (symbols, modifiers); LaTeX tokens: (tokens,)
    label_len: int              # SAT positions or tokens per random label
    smoke: dict


SHAPES = {
    # MathWriting at the paper's canvas (RenderSpec's default): MathWriting-sized SAT vocabularies
    "paper": Shape(RenderSpec().size, (260, 120), 40,
                   dict(patch=16, enc_dim=32, enc_depth=1, enc_heads=2, dec_dim=32, dec_depth=1, dec_heads=2,
                        max_len=16)),
    # CROHME shards at the converter's default canvas; a CROHME-sized token vocabulary
    "posformer-paper": Shape(RenderSpec().size, (115,), 30,
                             dict(growth_rate=4, dense_layers=2, dec_dim=32, dec_depth=1, dec_heads=2, dec_ff=64,
                                  arm_channels=8, max_len=16)),
    # IM2LATEX-100K shards at 64x512 (docs/datasets.md); an IM2LATEX-sized token vocabulary
    "hvt-paper": Shape((64, 512), (500,), 60,
                       dict(res_channels=(8, 8, 8, 8), res_blocks=(1, 1, 1, 1), enc_dim=16, enc_depth=1,
                            enc_heads=2, dec_dim=16, emb_dim=16, attn_dim=16, cov_kernel=3, cov_channels=4,
                            max_len=16)),
}
SMOKE_CANVAS = (32, 64)
NAMES = {"paper": "GryphOne", "posformer-paper": "PosFormer", "hvt-paper": "HVT"}
NOTES = {"hvt-paper": "FLOPs count max_len - 1 decoder steps; HVT's training loop stops at the batch's "
                      "longest label, so its MFU and TFLOP/s read high"}


@dataclass(frozen=True)
class Plan:
    """How much each part measures: the command line's sizes, or the smoke's few steps."""

    steps: int
    other_steps: int
    batch: int                  # GryphOne's (0: the preset's)
    other_batch: int            # PosFormer's and HVT's (0: each preset's)
    Ts: tuple[int, ...]
    fps_images: int
    ar_tokens: int
    compile: bool


def plan(args) -> Plan:
    if args.smoke:
        return Plan(3, 3, 4, 4, (1, 2), 3, 4, False)
    return Plan(args.steps, args.other_steps, args.batch, 0, (1, 10, 50), args.fps_images, args.ar_tokens,
                not args.no_compile)


def peak_flops(device: torch.device) -> float | None:
    """The dense BF16 peak of this GPU (train/trainer.py's table); None on CPU or an unlisted GPU."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)


def labels_for(kind: str, vocab: tuple[int, ...]) -> LabelSpec:
    return sat_labels(*vocab) if kind == "sat" else token_labels(*vocab)


def bench_setup(name: str, smoke: bool) -> tuple[TrainConfig, Recognizer]:
    """The preset's train config and its recognizer with random weights (on CPU), at the data's size
    (or shrunk for --smoke)."""
    torch.manual_seed(0)
    shape, tcfg = SHAPES[name], preset(name)
    cfg = dataclasses.replace(tcfg.model, **shape.smoke) if smoke else tcfg.model
    canvas = SMOKE_CANVAS if smoke else shape.canvas
    labels = labels_for(recognizer_class(cfg.kind).label_kind, shape.vocab)
    return tcfg, build(cfg, RenderSpec(canvas), labels)


def target_spans(model: Recognizer) -> dict[str, tuple[int, int, int]]:
    """Target name -> (low, high, fill): the values a random label draws from, and what follows it."""
    vocab = model.labels.vocab
    if model.label_kind == "sat":
        return {"symbols": (3, vocab.num_symbols, SATVocab.PAD), "modifiers": (3, vocab.num_modifiers, SATVocab.PAD)}
    levels = getattr(model.cfg, "forest_levels", 1)  # PosFormer's position-forest targets
    return {"tokens": (4, len(vocab), TokenVocab.PAD), "level": (0, levels, IGNORE),
            "relation": (0, len(RELATIONS), IGNORE), "path": (0, 4 ** levels, 0)}


def random_targets(model: Recognizer, batch: int, length: int, device) -> dict[str, torch.Tensor]:
    """Random labels of `length` positions (SAT) or tokens (BOS ... EOS) in every target the
    recognizer trains on, PAD (or ignored) after."""
    L = model.cfg.max_len
    n = min(length, L - 2)
    spans, names = target_spans(model), list(model.targets("x"))
    unknown = sorted(set(names) - set(spans))
    if unknown:
        raise ValueError(f"{model.kind}: no random filler for targets {unknown}")
    start = 0 if model.label_kind == "sat" else 1
    gen = torch.Generator().manual_seed(0)
    out = {}
    for name in names:
        low, high, fill = spans[name]
        t = torch.full((batch, L), fill, dtype=torch.long)
        t[:, start: start + n] = torch.randint(low, high, (batch, n), generator=gen)
        out[name] = t
    if "tokens" in out:
        out["tokens"][:, 0], out["tokens"][:, n + 1] = TokenVocab.BOS, TokenVocab.EOS
    return {k: v.to(device) for k, v in out.items()}


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _autocast(device):
    """bf16 autocast on CUDA, as the trainer runs; nothing on CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


def timed_steps(model: Recognizer, module, opt, images, targets: dict, steps: int, grad_clip: float,
                device) -> tuple[list[float], list[float]]:
    """`steps` optimizer steps as the trainer takes them (bf16 autocast on CUDA): (seconds, losses)."""
    model.train()
    times, losses = [], []
    for i in range(steps):
        _sync(device)
        t0 = time.perf_counter()
        gen = torch.Generator(device=device).manual_seed(i)
        with _autocast(device):
            parts = module(images, {**targets, **model.step_inputs(i)}, gen)
        opt.zero_grad(set_to_none=True)
        parts["loss"].backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        _sync(device)
        times.append(time.perf_counter() - t0)
        losses.append(float(parts["loss"].detach()))
    return times, losses


def train_throughput(tcfg: TrainConfig, model: Recognizer, batch: int, steps: int, compile_: bool, device,
                     label_len: int) -> dict:
    """Images/s, achieved FLOP/s and MFU (the recognizer's own FLOP count) of training steps on random
    images and labels, with the preset's optimizer; the first steps (warm-up, compilation) not counted."""
    model = model.to(device)
    opt = make_optimizer(tcfg, model, device)
    module = compile_for_training(model) if compile_ else model  # HVT: its train_parts, as the trainer does
    images = torch.rand(batch, 1, *model.render.size, device=device)
    targets = random_targets(model, batch, label_len, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times, losses = timed_steps(model, module, opt, images, targets, steps, tcfg.optim.grad_clip, device)
    step_s = statistics.median(times[min(5, steps // 2):])
    ips, fpi, peak = batch / step_s, model.flops_per_image(train=True), peak_flops(device)
    return {"kind": model.kind, "compile": compile_, "batch": batch, "canvas": list(model.render.size),
            "optimizer": tcfg.optim.name, "params_M": count_params(model) / 1e6, "step_ms": 1000 * step_s,
            "images_per_s": ips, "tflops_per_s": fpi * ips / 1e12, "mfu": (fpi * ips / peak) if peak else None,
            "first_step_s": times[0], "loss_first_last": [losses[0], losses[-1]],
            "max_mem_GiB": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None}


def fps(diff: GryphOne, Ts, n_images: int, ar_tokens: int, device) -> dict:
    """Batch-1 ms and FPS: the encoder alone, the re-mask sampler at each T, and a same-shape AR greedy
    decoder on the same encoder run for exactly `ar_tokens` tokens."""
    diff = diff.to(device).eval()
    ar = ar_beside(diff, ar_tokens, num_tokens=SHAPES["paper"].vocab[0])
    images = [torch.rand(1, 1, *diff.render.size, device=device) for _ in range(n_images)]
    fns = {"encoder": lambda im: diff.encoder(im)}
    for T in Ts:
        spec = DecodeSpec("remask", T=T, seed=0)
        fns[f"remask_T{T}"] = lambda im, spec=spec: diff.decode_sat(im, spec)
    fns[f"ar_greedy_{ar_tokens}tok"] = lambda im: ar_fixed_steps(ar, im, ar_tokens)
    out = {}
    with torch.no_grad(), _autocast(device):
        for name, fn in fns.items():
            ms = 1000 * statistics.median(time_per_image(fn, images, 5 if name == "encoder" else 3, device))
            out[name] = {"ms": ms, "fps": 1000 / ms}
    return out


def real_run(args, seconds_left: float) -> dict:
    """A short `python -m train.run` on the carried shards, within the time left; its loss curve. Its
    run folder is --run-dir, else a temporary one (the checkpoint is not wanted back)."""
    if args.run_dir:
        return train_run(args, Path(args.run_dir), seconds_left)
    with tempfile.TemporaryDirectory(prefix="gpu_bench-") as tmp:
        return train_run(args, Path(tmp) / "paper-short", seconds_left)


def train_run(args, out: Path, seconds_left: float) -> dict:
    minutes = max(0.2, min(args.real_minutes, (seconds_left - 90) / 60))  # room for start-up and the checkpoint
    budget = ["max_steps=4", "log_every=2"] if args.smoke else [f"max_minutes={minutes:.2f}", "log_every=10"]
    cmd = [sys.executable, "-m", "train.run", "--config", "micro" if args.smoke else "paper", "--data", args.data,
           "--out", str(out), "--fresh", "--no-eval", *budget]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max(30.0, seconds_left - 10))
        rc, log_tail = proc.returncode, proc.stdout[-3000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired as exc:
        rc, log_tail = "timeout", _text(exc.stdout)[-3000:] + _text(exc.stderr)[-2000:]
    metrics = out / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    return {"cmd": " ".join(cmd), "rc": rc, "wall_s": time.time() - t0, "log_tail": log_tail,
            "curve": [(r["step"], r["loss"], r.get("images_per_s")) for r in rows if "loss" in r]}


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on CPU: checks the script, measures nothing")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--other-steps", type=int, default=20, help="training steps timed for PosFormer and HVT")
    ap.add_argument("--batch", type=int, default=0, help="GryphOne's training batch (0: the preset's, 32)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--fps-images", type=int, default=30)
    ap.add_argument("--ar-tokens", type=int, default=30, help="mean MathWriting label length in tokens")
    ap.add_argument("--data", default=None, help="carried shard root for the short real run")
    ap.add_argument("--real-minutes", type=float, default=3.0)
    ap.add_argument("--run-dir", default=None, help="the real run's folder (default: a temporary one, removed)")
    ap.add_argument("--budget-minutes", type=float, default=9.0, help="the whole call's wall-clock budget")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default; --smoke: 1)")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "gpu_bench.json"))
    return ap.parse_args(argv)


def setup_device(smoke: bool, threads: int) -> torch.device:
    if threads or smoke:  # tiny shapes: a second thread only adds synchronization
        torch.set_num_threads(threads or 1)
    device = torch.device("cuda" if torch.cuda.is_available() and not smoke else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def record(report: dict, key: str, value, path: str) -> None:
    """Add one part to the report, print it, and rewrite the JSON (a killed call keeps what it measured)."""
    report[key] = value
    print(f"{key}:", json.dumps(value), flush=True)
    Path(path).write_text(json.dumps(report, indent=1))


def compiled_throughput(tcfg: TrainConfig, model: Recognizer, p: Plan, device) -> dict:
    try:
        return train_throughput(tcfg, model, p.batch or tcfg.batch_size, p.steps, True, device,
                                SHAPES["paper"].label_len)
    except Exception as exc:  # report, keep measuring the rest
        return {"error": f"{type(exc).__name__}: {exc}"}


def others_throughput(smoke: bool, p: Plan, device) -> dict:
    """PosFormer and HVT at their published sizes, eager, each at its preset's batch."""
    out = {}
    for name in ("posformer-paper", "hvt-paper"):
        tcfg, model = bench_setup(name, smoke)
        out[name] = train_throughput(tcfg, model, p.other_batch or tcfg.batch_size, p.other_steps, False, device,
                                     SHAPES[name].label_len)
        if name in NOTES:
            out[name]["note"] = NOTES[name]
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


def throughput_line(gryphone: dict, others: dict) -> str:
    """One line: eager training images/s (and MFU where known) of the three recognizers side by side."""
    parts = []
    for name, r in (("paper", gryphone), *others.items()):
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        parts.append(f"{NAMES[name]} {r['images_per_s']:.1f} img/s (batch {r['batch']}{mfu})")
    return "train eager: " + " | ".join(parts)


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.time()
    device = setup_device(args.smoke, args.threads)
    p = plan(args)
    report: dict = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                    "torch": torch.__version__}
    tcfg, model = bench_setup("paper", args.smoke)
    record(report, "train_eager", train_throughput(tcfg, model, p.batch or tcfg.batch_size, p.steps, False, device,
                                                   SHAPES["paper"].label_len), args.json)
    if p.compile:
        record(report, "train_compiled", compiled_throughput(tcfg, model, p, device), args.json)
    record(report, "train_eager_others", others_throughput(args.smoke, p, device), args.json)
    print(throughput_line(report["train_eager"], report["train_eager_others"]), flush=True)
    record(report, "fps_batch1", fps(model, p.Ts, p.fps_images, p.ar_tokens, device), args.json)
    if args.data:
        left = 60 * args.budget_minutes - (time.time() - t_start)
        record(report, "real_run", real_run(args, left), args.json)
    record(report, "wall_s", time.time() - t_start, args.json)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
