"""Compiled against eager, side by side in one process: training steps/s and batch-1 decoding latency.

For each preset named (default `demo` and `crohme-cpu`) and each of its two trainers (GryphOne, the
preset's own model, and the AR reader its stage 1 trains), four copies of the recognizer start from the
same weights; one runs eager, one under `torch.compile`, one eager under bf16 autocast (a CPU with
bf16 instructions runs its matmuls in bf16), one compiled under bf16 autocast. The bf16 pair runs
only on a CPU with bf16 instructions, as the trainer decides (`--bf16 always` to time oneDNN's
emulation elsewhere, an order of magnitude slower). After the compiled copies' warm-up
(compilation, not counted) they take their timed steps in alternating blocks on the same random
images and labels, so a noisy neighbour slows both alike; the table gives the median step of each and
their ratio. The compiled copies draw dropout from the eager generator, as the trainer's do on the CPU
(train.compiled.training_options); `--inductor-rng` adds a compiled copy that draws it in-graph. A
second pair, reseeded alike before each step, checks that eager and compiled agree with dropout on: the
largest relative difference of their losses over the first steps.

Decoding: batch-1 GryphOne mask-predict at T=1 and T=10 and AR greedy, eager against the recognizer's
`compile_for_decoding()` (train.compiled), outputs compared.

    python benchmarks/bench_compile.py --threads 2 --json benchmarks/results/compile_cpu.json
    python benchmarks/bench_compile.py --smoke        # tiny sizes, a few steps: the code paths only
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from datasets_prep.render_spec import RenderSpec  # noqa: E402
from model import DecodeSpec, Recognizer, build, switch_kind  # noqa: E402
from model.registry import recognizer_class  # noqa: E402
from train.compiled import compile_for_decoding, compile_for_training  # noqa: E402
from train.config import TrainConfig, preset  # noqa: E402
from train.trainer import cpu_bf16_native, make_optimizer  # noqa: E402

from gpu_bench import labels_for, random_targets  # noqa: E402

VOCAB = {"sat": (110, 30), "token": (115,)}
"""CROHME-sized vocabularies (SAT symbols, modifiers; LaTeX tokens)."""
LABEL_LEN = {"sat": 20, "token": 30}
"""Random label lengths near CROHME's: SAT positions, LaTeX tokens."""
SMOKE_MODEL = dict(patch=16, enc_dim=32, enc_depth=1, enc_heads=2, dec_dim=32, dec_depth=1, dec_heads=2, max_len=24)


def trainers(name: str, smoke: bool) -> list[tuple[str, TrainConfig]]:
    """The preset's GryphOne config and its stage-1 AR reader's, shrunk for --smoke."""
    tcfg = preset(name)
    if smoke:
        tcfg.model = dataclasses.replace(tcfg.model, **SMOKE_MODEL)
    ar = copy.deepcopy(tcfg)
    ar.model = switch_kind(tcfg.model, "ar")
    if tcfg.pretrain.max_len and not smoke:
        ar.model.max_len = tcfg.pretrain.max_len
    return [(f"{name}/{tcfg.model.kind}", tcfg), (f"{name}/ar", ar)]


def canvas(name: str, smoke: bool) -> tuple[int, int]:
    return (32, 64) if smoke else {"demo": (64, 256), "crohme-cpu": (96, 384)}.get(name, RenderSpec().size)


def make(tcfg: TrainConfig, size: tuple[int, int], dropout: float | None = None) -> Recognizer:
    cfg = tcfg.model if dropout is None else dataclasses.replace(tcfg.model, dropout=dropout)
    kind = recognizer_class(cfg.kind).label_kind
    torch.manual_seed(0)
    return build(cfg, RenderSpec(size), labels_for(kind, VOCAB[kind]))


class Stepper:
    """One recognizer, its optimizer and its (compiled or eager) step, as the trainer takes it."""

    def __init__(self, model: Recognizer, tcfg: TrainConfig, compiled: bool, bf16: bool = False,
                 mode: str = "default", inductor_rng: bool = False):
        self.model, self.tcfg, self.bf16 = model, tcfg, bf16
        self.opt = make_optimizer(tcfg, model, torch.device("cpu"))
        self.module = model
        if compiled:
            self.module = torch.compile(model, dynamic=False, mode=mode) if inductor_rng \
                else compile_for_training(model, mode)
        self.step_no = 0

    def step(self, images: torch.Tensor, targets: dict) -> float:
        m = self.model
        m.train()
        batch = {**targets, **m.step_inputs(self.step_no)}
        batch.update(m.draws(batch, torch.Generator().manual_seed(self.step_no)))
        with torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext():
            parts = self.module(images, batch)
        self.opt.zero_grad(set_to_none=True)
        parts["loss"].backward()
        if self.tcfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(m.parameters(), self.tcfg.optim.grad_clip)
        self.opt.step()
        self.step_no += 1
        return float(parts["loss"].detach())


def data(model: Recognizer, batch: int) -> tuple[torch.Tensor, dict]:
    torch.manual_seed(1)
    images = torch.rand(batch, 1, *model.render.size)
    return images, random_targets(model, batch, LABEL_LEN[model.label_kind], "cpu")


def train_pair(label: str, tcfg: TrainConfig, size, batch: int, blocks: int, per_block: int,
               mode: str = "default", bf16: bool = True, inductor_rng: bool = False) -> dict:
    """Median step seconds, eager and compiled (and both under bf16 autocast when `bf16`), in
    alternating blocks; the compiled warm-up apart."""
    torch._dynamo.reset()  # each pair compiles afresh (no recompile limit reached across pairs)
    steppers = {"eager": Stepper(make(tcfg, size), tcfg, compiled=False),
                "compiled": Stepper(make(tcfg, size), tcfg, compiled=True, mode=mode)}
    if inductor_rng:
        steppers["compiled_inductor_rng"] = Stepper(make(tcfg, size), tcfg, compiled=True, mode=mode, inductor_rng=True)
    if bf16:
        steppers["eager_bf16"] = Stepper(make(tcfg, size), tcfg, compiled=False, bf16=True)
        steppers["compiled_bf16"] = Stepper(make(tcfg, size), tcfg, compiled=True, bf16=True, mode=mode)
    images, targets = data(steppers["eager"].model, batch)
    t0 = time.perf_counter()
    for _ in range(3):  # compilation (and the eager copies' first-touch) before anything is timed
        for s in steppers.values():
            s.step(images, targets)
    warmup = time.perf_counter() - t0
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(blocks):
        for name, s in steppers.items():
            for _ in range(per_block):
                t = time.perf_counter()
                s.step(images, targets)
                times[name].append(time.perf_counter() - t)
    ms = {name: 1000 * statistics.median(t) for name, t in times.items()}
    ratio = {"speedup": ms["eager"] / ms["compiled"]}
    if inductor_rng:
        ratio["inductor_rng_speedup"] = ms["eager"] / ms["compiled_inductor_rng"]
    if bf16:
        ratio.update(bf16_speedup=ms["eager"] / ms["eager_bf16"], compiled_bf16_speedup=ms["eager"] / ms["compiled_bf16"])
    return {"trainer": label, "batch": batch, "canvas": list(size), "steps_each": blocks * per_block,
            **{f"{name}_step_ms": v for name, v in ms.items()}, **ratio, "warmup_s": warmup}


def profile_step(tcfg: TrainConfig, size, batch: int, compiled: bool = False, top: int = 8) -> list[dict]:
    """Where a step's time goes: the ops with the most self CPU time over 5 steps, and their share. A
    compiled step lists its generated kernels by name (inductor's kernel profiling)."""
    from torch._inductor import config as inductor_config
    from torch.profiler import ProfilerActivity, profile

    torch._dynamo.reset()
    was = inductor_config.cpp.enable_kernel_profile
    inductor_config.cpp.enable_kernel_profile = compiled
    s = Stepper(make(tcfg, size), tcfg, compiled=compiled)
    images, targets = data(s.model, batch)
    for _ in range(2):
        s.step(images, targets)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            s.step(images, targets)
    inductor_config.cpp.enable_kernel_profile = was
    events = sorted((e for e in prof.key_averages() if not e.key.startswith("## Call CompiledFxGraph")),
                    key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return [{"op": e.key, "share": e.self_cpu_time_total / total} for e in events[:top]]


def loss_agreement(tcfg: TrainConfig, size, batch: int, steps: int) -> float:
    """Largest relative difference of the losses of an eager and a compiled copy, dropout on: the
    compiled copy draws it from the eager generator (train.compiled.training_options), reseeded alike."""
    torch._dynamo.reset()
    eager = Stepper(make(tcfg, size), tcfg, compiled=False)
    comp = Stepper(make(tcfg, size), tcfg, compiled=True)
    images, targets = data(eager.model, batch)
    worst = 0.0
    for step in range(steps):
        torch.manual_seed(100 + step)
        a = eager.step(images, targets)
        torch.manual_seed(100 + step)
        b = comp.step(images, targets)
        worst = max(worst, abs(a - b) / max(abs(a), 1e-9))
    return worst


def decode_pair(tcfg: TrainConfig, size, repeats: int) -> list[dict]:
    """Batch-1 ms per image, eager against compiled, and whether every output agreed."""
    torch._dynamo.reset()
    model = make(tcfg, size, dropout=0.0).eval()
    fast = compile_for_decoding(copy.deepcopy(model))
    specs = [DecodeSpec("mask-predict", T=1), DecodeSpec("mask-predict", T=10)] if model.label_kind == "sat" \
        else [DecodeSpec("greedy")]
    images = [torch.rand(1, 1, *size, generator=torch.Generator().manual_seed(i)) for i in range(repeats)]
    variants = [("eager", model), ("compiled", fast)]
    if model.kind == "ar":  # the fixed-shape step the compiled decoder runs, eager
        fixed = copy.deepcopy(model)
        fixed.static_decoding = True
        variants.append(("eager_static", fixed))
    rows = []
    for spec in specs:
        row = {"recognizer": model.kind, "decoder": spec.name}
        same = True
        for name, m in variants:
            m.recognize(images[0], spec)  # warm-up (compilation)
            times, outs = [], []
            for im in images:
                t = time.perf_counter()
                outs.append(m.recognize(im, spec))
                times.append(time.perf_counter() - t)
            row[f"{name}_ms"] = 1000 * statistics.median(times)
            row.setdefault("outputs", outs)
            same = same and row["outputs"] == outs
        row["speedup"] = row["eager_ms"] / row["compiled_ms"]
        row["outputs_equal"] = same
        row["tokens"] = [int(model.decode_ids(im, spec).shape[1]) - 1 for im in images[:3]] \
            if model.label_kind == "token" else None  # tokens decoded (to EOS or the window's end)
        del row["outputs"]
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["demo", "crohme-cpu"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=4, help="alternating timed blocks per trainer")
    ap.add_argument("--per-block", type=int, default=8, help="steps per block")
    ap.add_argument("--agree-steps", type=int, default=8)
    ap.add_argument("--decode-images", type=int, default=20)
    ap.add_argument("--compile-mode", default="default", help="torch.compile's mode for training (max-autotune, ...)")
    ap.add_argument("--bf16", choices=("auto", "always", "never"), default="auto",
                    help="time the bf16 copies: auto (only where the CPU has bf16 instructions, as the trainer "
                         "decides), always (emulated bf16 too), never")
    ap.add_argument("--inductor-rng", action="store_true",
                    help="also time a compiled copy that draws dropout in-graph (inductor's generator)")
    ap.add_argument("--profile", action="store_true",
                    help="also list where an eager and a compiled step's time goes (the compiled one's kernels by name)")
    ap.add_argument("--smoke", action="store_true", help="tiny models, a few steps")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.smoke:
        args.blocks, args.per_block, args.agree_steps, args.decode_images = 1, 2, 2, 2
    torch.set_num_threads(args.threads)
    native = cpu_bf16_native()
    bf16 = args.bf16 == "always" or (args.bf16 == "auto" and native)
    if args.bf16 == "auto" and not native:
        print("this CPU has no bf16 instructions (oneDNN would emulate them): the bf16 copies are left out "
              "(--bf16 always times them anyway)", flush=True)
    report = {"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
              "threads": args.threads, "compile_mode": args.compile_mode, "cpu_bf16_native": native,
              "bf16_timed": bf16, "train": [], "decode": []}
    for name in args.presets:
        size = canvas(name, args.smoke)
        for label, tcfg in trainers(name, args.smoke):
            batch = 4 if args.smoke else tcfg.batch_size
            row = train_pair(label, tcfg, size, batch, args.blocks, args.per_block, args.compile_mode, bf16,
                             args.inductor_rng)
            if args.profile:
                for way in ("eager", "compiled"):
                    row[f"{way}_profile"] = profile_step(tcfg, size, batch, compiled=way == "compiled")
                    print(f"  {way} step: " + ", ".join(f"{p['op']} {p['share']:.0%}" for p in row[f"{way}_profile"]))
            row["loss_rel_diff"] = loss_agreement(tcfg, size, batch, args.agree_steps)
            report["train"].append(row)
            bf16_cols = (f"  eager bf16 {row['eager_bf16_step_ms']:7.1f} ms  x{row['bf16_speedup']:.2f}  compiled bf16 "
                         f"{row['compiled_bf16_step_ms']:7.1f} ms  x{row['compiled_bf16_speedup']:.2f}") if bf16 else ""
            if args.inductor_rng:
                bf16_cols += (f"  compiled, in-graph RNG {row['compiled_inductor_rng_step_ms']:7.1f} ms"
                              f"  x{row['inductor_rng_speedup']:.2f}")
            print(f"{label:22s} batch {batch:3d}  eager {row['eager_step_ms']:7.1f} ms  compiled "
                  f"{row['compiled_step_ms']:7.1f} ms  x{row['speedup']:.2f}{bf16_cols}  (warm-up {row['warmup_s']:.0f} s; "
                  f"losses agree to {row['loss_rel_diff']:.1e})", flush=True)
            for d in decode_pair(tcfg, size, args.decode_images):
                d["preset"] = name
                report["decode"].append(d)
                static = f"  eager static {d['eager_static_ms']:6.1f} ms" if "eager_static_ms" in d else ""
                print(f"  decode {d['decoder']:18s} eager {d['eager_ms']:6.1f} ms  compiled "
                      f"{d['compiled_ms']:6.1f} ms  x{d['speedup']:.2f}{static}  outputs equal: {d['outputs_equal']}"
                      + (f"  tokens {d['tokens']}" if d["tokens"] else ""), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
