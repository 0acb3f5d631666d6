"""The training loop (nanoGPT-style): plain PyTorch, exact resume, DDP when launched by torchrun.

`train(cfg)` reads as its steps: set up the processes, read the checkpoint (if resuming), resolve the
render and label specs, build the recognizer and the data, then loop `train_step` with logging,
checkpoints and quick evals. The recognizer is anything on the seam in model/recognizer.py: the loop
never asks which one it trains.

Determinism: batches come from `epoch_batches(seed, epoch)`, masks from a generator seeded by
(seed, step, rank), dropout from the global RNG; every rank's RNG state is checkpointed and each rank
restores its own, so stopping after step s and resuming gives the same loss at step s+1 as a run
that never stopped, on one process or several (a run resumed with another number of processes
restarts the ranks' RNG streams from rank 0's state and says so).
"""
from __future__ import annotations

import copy
import gc
import hashlib
import io
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist
from PIL import Image

from datasets_prep.render_spec import RenderSpec, RenderSpecError
from datasets_prep.shards import load_split
from model import Recognizer, build, count_params, load_checkpoint, read_specs, save_checkpoint
from model.registry import recognizer_class
from tokenizer.label_spec import LabelSpec

from .augment import augment_batch
from .compiled import compile_for_training, compiler_works
from .config import TrainConfig, from_dict, to_dict
from .degrade import degrade_batch
from .finetune import InitWeights, apply_init, read_init
from .data import ShardDataset, SplitData, collate, epoch_batches, label_lengths, load_split_data, read_labels
from .rng import restore_rng, rng_state
from .tb_log import ScalarLog

SCHEDULE_KEYS = ("optim.lr", "optim.warmup_steps", "optim.schedule", "optim.min_lr_ratio", "epochs", "max_steps",
                 "max_minutes", "batch_size")
PEAK_BF16_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L4": 121e12}
"""Dense BF16 tensor-core peaks from the datasheets (H100/H200 SXM; the PCIe H100 is lower). A GPU
not listed here gets no MFU figure, only achieved FLOP/s."""


def log(msg: str) -> None:
    print(msg, flush=True)


@dataclass
class Env:
    """Where this process runs: device, rank, world size, precision."""
    device: torch.device
    rank: int = 0
    world: int = 1
    bf16: bool = False
    compile: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@dataclass
class Position:
    """Where the run is: what a checkpoint must hold to continue exactly."""
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    seconds_before: float = 0.0          # training seconds spent before this process started
    started: float = field(default_factory=time.time)

    def seconds(self) -> float:
        return self.seconds_before + time.time() - self.started


def run_device(cfg: TrainConfig) -> torch.device:
    """The device `cfg.device` names: auto is CUDA where there is one. Training and the run's final
    evaluation both use it."""
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


def setup_env(cfg: TrainConfig) -> Env:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = run_device(cfg)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device=cuda but no CUDA device is available (use device=cpu or auto)")
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} is not divisible by {world} processes")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    on_cuda = device.type == "cuda"
    bf16 = cfg.bf16 if cfg.bf16 is not None else on_cuda
    if bf16 and device.type == "cpu" and not cpu_bf16_native():
        bf16 = False
        if rank == 0:
            log(f"[train] bf16=true asked for, but this CPU ({torch.backends.cpu.get_cpu_capability()}) has no bf16 "
                "instructions: emulated bf16 ran ~10x slower than fp32 (BENCHMARKS.md); training in fp32")
    return Env(device, rank, world, bf16, cfg.compile if cfg.compile is not None else on_cuda)


def cpu_bf16_native() -> bool:
    """Whether this CPU runs bf16 matmuls and convolutions in hardware (AVX-512 BF16 or AMX). Without
    them oneDNN emulates bf16, and autocast makes a step an order of magnitude slower, not faster."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def lr_at(cfg: TrainConfig, step: int, total: int, time_progress: float | None = None) -> float:
    """Linear warmup (from warmup_start x lr), then constant, cosine, or divided by 10 at each
    milestone epoch ("step"). With a time budget (time_progress in [0, 1], the share of max_minutes
    spent) the cosine follows the clock instead of the step count."""
    opt = cfg.optim
    if opt.warmup_steps and step < opt.warmup_steps:
        frac = (step + 1) / opt.warmup_steps
        return opt.lr * (opt.warmup_start + (1 - opt.warmup_start) * frac)
    if opt.schedule == "cosine":
        if time_progress is not None:
            progress = min(1.0, time_progress)
        else:
            progress = min(1.0, (step - opt.warmup_steps) / max(1, total - opt.warmup_steps))
        return opt.lr * (opt.min_lr_ratio + (1 - opt.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
    if opt.schedule == "step" and cfg.epochs and total:
        epoch = step * cfg.epochs / total
        return opt.lr * 0.1 ** sum(epoch >= m for m in opt.milestones)
    return opt.lr


NO_DECAY_MODULES = (torch.nn.Embedding, torch.nn.LayerNorm, torch.nn.GroupNorm, torch.nn.BatchNorm1d,
                    torch.nn.BatchNorm2d, torch.nn.BatchNorm3d, torch.nn.SyncBatchNorm)
NO_DECAY_PARAMS = ("pos_emb", "cls")
"""Parameters of their own that are position tables or the [CLS] token."""
NO_DECAY_PARTS = ("patch_embed",)
"""Modules whose parameters never decay: the patch stem (linear or convolutional), as every recipe was
measured with it."""


def decays(module_name: str, module: torch.nn.Module, param_name: str, param: torch.Tensor) -> bool:
    """Whether weight decay applies: not to biases and other vectors, embeddings, norms, position
    tables, the [CLS] token or the patch stem (docs/training.md); to every other matrix and kernel."""
    if param.ndim < 2 or isinstance(module, NO_DECAY_MODULES) or param_name in NO_DECAY_PARAMS:
        return False
    return not any(part in module_name.split(".") for part in NO_DECAY_PARTS)


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay, seen = [], [], set()
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if p.requires_grad and id(p) not in seen:  # a tied parameter once, where it first appears
                seen.add(id(p))
                (decay if decays(module_name, module, name, p) else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(cfg: TrainConfig, model: torch.nn.Module, device: torch.device) -> torch.optim.Optimizer:
    """AdamW (GryphOne's recipe) or SGD with momentum (CoMER's and PosFormer's)."""
    opt = cfg.optim
    groups = _param_groups(model, opt.weight_decay)
    if opt.name == "sgd":
        return torch.optim.SGD(groups, lr=opt.lr, momentum=opt.momentum)
    if opt.name != "adamw":
        raise ValueError(f"optim.name must be adamw or sgd, got {opt.name!r}")
    return torch.optim.AdamW(groups, lr=opt.lr, betas=opt.betas, fused=device.type == "cuda")


def resolve_render(cfg: TrainConfig) -> RenderSpec:
    """The shards' RenderSpec (their summary.json); shards that do not say get the defaults at their
    images' size. An explicit `canvas` that disagrees is one clear error at the start."""
    root = Path(cfg.data.root)
    spec = RenderSpec.from_shards(root)
    if spec is None:
        spec = RenderSpec().with_size(_first_image_size(root / cfg.data.train_split))
    want = tuple(cfg.data.canvas)
    if any(want) and want != spec.size:
        raise RenderSpecError(f"{root}: the shards are {spec.size[0]}x{spec.size[1]} images but canvas is "
                              f"{want[0]}x{want[1]}; convert with `--size {want[0]}x{want[1]}` or set "
                              f"canvas={spec.size[0]}x{spec.size[1]} (0x0 follows the shards)")
    return spec


def _first_image_size(split_dir: Path) -> tuple[int, int]:
    table = load_split(split_dir)
    cell = table.column("image")[0].as_py() if len(table) else None
    png = cell["bytes"] if isinstance(cell, dict) else cell
    with Image.open(io.BytesIO(png)) as im:
        return im.size[1], im.size[0]


def resolve_labels(cfg: TrainConfig, state: dict | None, labelled: tuple, label_kind: str,
                   init: InitWeights | None = None) -> LabelSpec:
    """The resumed run's LabelSpec, the init checkpoint's, or one built from the training split's
    usable labels."""
    if state is not None:
        return read_specs(state, Path(cfg.out) / "ckpt.pt")[3]
    if init is not None:
        if init.labels.normalized != cfg.data.normalize_labels:
            raise ValueError(f"{init.path}: it was trained with normalize_labels={init.labels.normalized}, this run "
                             f"reads labels with normalize_labels={cfg.data.normalize_labels}; set it to match")
        return init.labels
    table, labels = labelled
    if "label_error" in table.column_names and cfg.data.drop_invalid:
        errs = table.column("label_error").to_pylist()
        labels = [lab for lab, e in zip(labels, errs) if not e]
    return LabelSpec.build(label_kind, labels, normalized=cfg.data.normalize_labels,
                           extended_modifiers=cfg.data.extended_modifiers, min_count=cfg.data.vocab_min_count)


def prepare(cfg: TrainConfig, env: Env, state: dict | None) -> tuple[Recognizer, SplitData, ShardDataset]:
    """Specs, recognizer (warm-started on a fresh run) and the encoded training data."""
    render = resolve_render(cfg)
    train_dir = Path(cfg.data.root) / cfg.data.train_split
    labelled = read_labels(train_dir, cfg.data.normalize_labels)  # read once, for the vocabulary and the targets
    both = [k for k in ("encoder_init", "decoder_init") if cfg.init and getattr(cfg.model, k, "")]
    if both:
        raise ValueError(f"init={cfg.init} starts every weight; drop {', '.join('model.' + k for k in both)}")
    init = read_init(cfg.init, cfg.model.kind, render) if cfg.init and state is None else None
    labels = resolve_labels(cfg, state, labelled, recognizer_class(cfg.model.kind).label_kind, init)
    if state is not None:
        kind, stored, _, _ = read_specs(state, Path(cfg.out) / "ckpt.pt")
        if stored != to_dict(cfg)["model"]:
            raise ValueError(f"{cfg.out}/ckpt.pt: the checkpoint's model config differs from this run's; "
                             f"use another --out or --fresh")
    if state is None:  # every rank alike: the same initial weights
        torch.manual_seed(cfg.seed)
        np.random.seed(cfg.seed)
    model = build(cfg.model, render, labels)
    if init is not None:
        apply_init(model, init)
        if env.is_main:
            log(f"[train] every weight starts from {init.path} ({init.which} weights of step {init.step}; "
                f"its vocabulary of {labels.size()}; "
                f"fresh optimizer and schedule)")
    elif state is None:
        model.warm_start(log if env.is_main else (lambda msg: None))
    data = load_split_data(train_dir, model.targets, cfg.model.max_len, labels=labels,
                           drop_invalid=cfg.data.drop_invalid, labelled=labelled)
    if not len(data.rows):
        raise ValueError(f"{cfg.data.root}/{cfg.data.train_split}: no usable training samples ({dict(data.skipped)})")
    dataset = ShardDataset(data, render.size)
    extras = [_extra_split(Path(p), model, cfg, render) for p in cfg.data.extra]
    if extras:
        for extra in extras:
            data.skipped.update({f"{k} (extra)": v for k, v in extra.data.skipped.items()})
        dataset = torch.utils.data.ConcatDataset([dataset, *extras])
    return model.to(env.device), data, dataset


def _extra_split(split_dir: Path, model: Recognizer, cfg: TrainConfig, render: RenderSpec) -> ShardDataset:
    """Another split folder trained on with the train split (e.g. synthetic shards): same labels, canvas."""
    spec = RenderSpec.from_shards(split_dir.parent)
    if spec is not None and spec.size != render.size:
        raise RenderSpecError(f"{split_dir}: {spec.size[0]}x{spec.size[1]} images, the run's canvas is "
                              f"{render.size[0]}x{render.size[1]}")
    data = load_split_data(split_dir, model.targets, cfg.model.max_len, labels=model.labels,
                           drop_invalid=cfg.data.drop_invalid)
    return ShardDataset(data, render.size)


def param_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class Trainer:
    """One run's moving parts; `fit` is the loop, each of its steps a method."""

    def __init__(self, cfg: TrainConfig, env: Env, state: dict | None, quick_eval: Callable | None):
        self.cfg, self.env, self.quick_eval = cfg, env, quick_eval
        self.out = Path(cfg.out)
        self.model, self.data, self.dataset = prepare(cfg, env, state)
        self.ema = copy.deepcopy(self.model).eval() if cfg.optim.ema > 0 else None
        self.opt = make_optimizer(cfg, self.model, env.device)
        self.pos = Position()
        if state is not None:
            self._restore(state)
        module, self.compiled_parts = self._compiled() if env.compile or cfg.compile_parts else (self.model, ())
        self.whole_compiled = module is not self.model  # one graph of the whole loss: one window for every step
        if env.world > 1:
            module = torch.nn.parallel.DistributedDataParallel(
                module, device_ids=[env.device.index] if env.device.type == "cuda" else None)
        self.module = module
        per_epoch = len(epoch_batches(len(self.dataset), cfg.batch_size, cfg.seed, 0, env.rank, env.world))
        # a time budget alone runs until the clock says stop, cosine on the clock; resuming such a run
        # continues its clock (train_seconds is checkpointed) but is not bit-exact
        self.by_time = bool(cfg.max_minutes and not cfg.max_steps)
        self.total = cfg.max_steps or (10**12 if self.by_time else int(math.ceil(cfg.epochs * per_epoch)))
        self.flops = self.model.flops_per_image(train=True)
        self.peak = _peak_flops(env.device)
        self.autocast = torch.autocast(env.device.type, dtype=torch.bfloat16) if env.bf16 else nullcontext()
        self.metrics_f = None
        self.scalars: ScalarLog | None = None

    def _restore(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        if self.ema is not None and state.get("ema"):
            self.ema.load_state_dict(state["ema"])
        self.pos = Position(state["step"], state["epoch"], state["batch_in_epoch"], state.get("train_seconds", 0.0))
        note = restore_rng(state["rng"], self.env.rank, self.env.world, self.env.device)
        if note and self.env.is_main:
            log(f"[train] note: {note}")

    # --- the loop -------------------------------------------------------------------------------
    def fit(self) -> Path:
        cfg, env = self.cfg, self.env
        if env.is_main:
            self._announce()
            self.metrics_f = open(self.out / "metrics.jsonl", "a")
            if cfg.log.tensorboard:
                self.scalars = ScalarLog(self.out, log)
        running: dict[str, float] = {}
        t_log, seen = time.time(), 0
        stop = bool(cfg.max_minutes) and self.pos.seconds_before >= cfg.max_minutes * 60  # finished stays finished
        loader_gen = torch.Generator().manual_seed(cfg.seed)  # keeps DataLoader off the global RNG
        while self.pos.step < self.total and not stop:
            for batch in self._loader(loader_gen):
                parts, lr, grad_norm = self.train_step(batch)
                seen += batch["image"].shape[0] * env.world
                for k, v in parts.items():  # tensors: read (one host sync) only when logged
                    running[k] = running.get(k, 0.0) + v
                running["_n"] = running.get("_n", 0) + 1
                if env.is_main and (self.pos.step % cfg.log_every == 0 or self.pos.step == self.total):
                    self._log(running, lr, grad_norm, seen / max(time.time() - t_log, 1e-9))
                    running, t_log, seen = {}, time.time(), 0
                stop = bool(cfg.max_minutes) and self.pos.seconds() > cfg.max_minutes * 60
                last = self.pos.step >= self.total or stop
                if last or (cfg.ckpt_every and self.pos.step % cfg.ckpt_every == 0):
                    self.save()
                if cfg.eval.every and self.pos.step % cfg.eval.every == 0 and not last:
                    self._quick_eval()
                if last:
                    break
            else:
                self.pos.epoch += 1
                self.pos.batch_in_epoch = 0
        return self._finish(stop)

    def _loader(self, generator: torch.Generator):
        cfg, env = self.cfg, self.env
        pool = cfg.data.length_buckets
        lengths = label_lengths(self.dataset) if pool > 1 else None
        batches = epoch_batches(len(self.dataset), cfg.batch_size, cfg.seed, self.pos.epoch, env.rank, env.world,
                                lengths, pool)
        return torch.utils.data.DataLoader(self.dataset, batch_sampler=batches[self.pos.batch_in_epoch:],
                                           collate_fn=collate, num_workers=cfg.data.workers, generator=generator,
                                           persistent_workers=False, pin_memory=env.device.type == "cuda")

    def train_step(self, batch: dict) -> tuple[dict[str, torch.Tensor], float, torch.Tensor | None]:
        """One optimizer step on one batch; returns (loss parts, lr, grad norm), the parts and the norm
        as detached tensors so that nothing waits for the device until they are logged."""
        cfg, env, step = self.cfg, self.env, self.pos.step
        progress = self.pos.seconds() / (60 * cfg.max_minutes) if self.by_time else None
        lr = lr_at(cfg, step, self.total, progress)
        for group in self.opt.param_groups:
            group["lr"] = lr
        images = batch["image"].to(env.device, non_blocking=True)
        tensors = {k: v.to(env.device, non_blocking=True) for k, v in batch.items() if isinstance(v, torch.Tensor)}
        tensors = self.cut_window(tensors)
        tensors.update(self.model.step_inputs(step))
        gen = torch.Generator(device=env.device).manual_seed(cfg.seed * 1_000_003 + step * 131 + env.rank)
        tensors.update(self.model.draws(tensors, gen))  # outside the (compiled) step: it sees tensors only
        if cfg.augment.prob > 0:  # its own stream, so the masks are the same with or without it
            aug_gen = torch.Generator(device=env.device).manual_seed(cfg.seed * 1_000_033 + step * 137 + env.rank + 1)
            images = augment_batch(images, cfg.augment, aug_gen)
        if cfg.degrade.prob > 0:  # after the geometry, as a page is printed, then scanned
            deg_gen = torch.Generator(device=env.device).manual_seed(cfg.seed * 1_000_037 + step * 139 + env.rank + 2)
            images = degrade_batch(images, cfg.degrade, deg_gen)
        self.model.train()
        with self.autocast:
            parts = self.module(images, tensors)
        self.opt.zero_grad(set_to_none=True)
        parts["loss"].backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.optim.grad_clip) if cfg.optim.grad_clip else None
        self.opt.step()
        self._update_ema(step)
        self.pos.step += 1
        self.pos.batch_in_epoch += 1
        return {k: v.detach() for k, v in parts.items()}, lr, grad_norm

    def cut_window(self, tensors: dict) -> dict:
        """The step's label columns: none past the longest label (`Recognizer.trim_padding`); a whole
        compiled loss rounds the cut up to one of `compile_windows` widths, one graph each."""
        return self.model.trim_padding(tensors, self.cfg.compile_windows if self.whole_compiled else 0)

    def _compiled(self) -> tuple[torch.nn.Module, tuple[str, ...]]:
        """(the module the step calls, the parts compiled in place), after the EMA copy, which stays eager.
        compile_parts alone touches only a recognizer with train_parts; where torch.compile cannot build
        those, the run says why and trains eager."""
        parts = self.model.train_parts
        if not parts:
            if not self.env.compile:
                return self.model, ()
            limit = torch._dynamo.config.recompile_limit  # one graph per window width, none left eager
            torch._dynamo.config.recompile_limit = max(limit, self.cfg.compile_windows + 1)
            return compile_for_training(self.model), ()
        why_not = compiler_works()
        if why_not:
            log(f"[train] note: compile_parts off: torch.compile cannot build here ({why_not}); the step runs eager")
            return self.model, ()
        return compile_for_training(self.model), parts

    def _update_ema(self, step: int) -> None:
        if self.ema is None:
            return
        decay = min(self.cfg.optim.ema, (1 + step) / (10 + step))  # warms up so early EMA weights are not the init
        with torch.no_grad():
            for pe, pm in zip(self.ema.parameters(), self.model.parameters()):
                pe.lerp_(pm, 1 - decay)
            for be, bm in zip(self.ema.buffers(), self.model.buffers()):
                be.copy_(bm)

    # --- what the loop writes -------------------------------------------------------------------
    def _announce(self) -> None:
        cfg, env, model = self.cfg, self.env, self.model
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.json").write_text(json.dumps(to_dict(cfg), indent=1))
        skipped = dict(self.data.skipped)
        (self.out / "data_skipped.json").write_text(json.dumps({"counts": skipped,
                                                                "examples": self.data.skipped_examples}, indent=1))
        log(f"[train] {cfg.model.kind} model, {count_params(model) / 1e6:.2f}M parameters, device {env.device}"
            f"{' bf16' if env.bf16 else ''}{' compiled' if self.whole_compiled else ''}"
            f"{' (compiled: ' + ', '.join(self.compiled_parts) + ')' if self.compiled_parts else ''}, world {env.world}")
        extra = f" + {len(self.dataset) - len(self.data.rows)} from {', '.join(cfg.data.extra)}" if cfg.data.extra else ""
        log(f"[train] {len(self.data.rows)} training samples from {cfg.data.root}/{cfg.data.train_split}{extra}"
            f" (left out: {skipped or 'none'}); vocab {model.labels.size()}; canvas "
            f"{model.render.size[0]}x{model.render.size[1]}; "
            + (f"{cfg.max_minutes} minutes" if self.by_time else f"{self.total} steps")
            + (f" (resuming at step {self.pos.step})" if self.pos.step else ""))

    def _log(self, running: dict, lr: float, grad_norm: torch.Tensor | None, ips: float) -> None:
        n = running.pop("_n")
        rec = {"step": self.pos.step, "epoch": self.pos.epoch, "lr": lr,
               **{k: float(v) / n for k, v in running.items()},
               "grad_norm": float(grad_norm) if grad_norm is not None else None, "images_per_s": ips,
               "elapsed_s": self.pos.seconds()}
        if self.peak:
            rec["mfu"] = self.flops * ips / self.peak
        else:
            rec["achieved_gflops"] = self.flops * ips / 1e9
        self.metrics_f.write(json.dumps(rec) + "\n")
        self.metrics_f.flush()
        if self.scalars is not None:
            self.scalars.add("train", {k: v for k, v in rec.items() if k != "step"}, self.pos.step)
        extras = "".join(f" {k} {rec[k]:.4f}" for k in self.model.log_parts if k in rec)
        log(f"step {self.pos.step}{'' if self.by_time else f'/{self.total}'} loss {rec['loss']:.4f} "
            f"ce {rec['ce']:.4f}{extras} lr {lr:.2e} {ips:.1f} img/s" + (f" mfu {rec['mfu']:.1%}" if "mfu" in rec else ""))

    def _quick_eval(self) -> None:
        if self.env.is_main and self.quick_eval is not None:
            rec = {"step": self.pos.step, "eval": self.quick_eval(self.ema or self.model, self.pos.step)}
            self.metrics_f.write(json.dumps(rec) + "\n")
            self.metrics_f.flush()
            if self.scalars is not None:
                self.scalars.add("eval", rec["eval"], self.pos.step)

    def save(self) -> None:
        """Every rank's RNG state goes into the checkpoint (gathered to rank 0, which writes it)."""
        states = [rng_state(self.env.device)]
        if self.env.world > 1:
            states = [None] * self.env.world
            dist.all_gather_object(states, rng_state(self.env.device))
        if not self.env.is_main:
            return
        model, cfg = self.model, self.cfg
        save_checkpoint(self.out / "ckpt.pt", {
            "train_config": to_dict(cfg), "model_config": to_dict(cfg)["model"], "render": model.render.to_dict(),
            "labels": model.labels.to_dict(), "model": model.state_dict(),
            "ema": self.ema.state_dict() if self.ema is not None else None, "optimizer": self.opt.state_dict(),
            "step": self.pos.step, "epoch": self.pos.epoch, "batch_in_epoch": self.pos.batch_in_epoch,
            "rng": states, "world": self.env.world, "train_seconds": self.pos.seconds(),
            "torch": str(torch.__version__), "python": sys.version.split()[0],
        })

    def _finish(self, stopped: bool) -> Path:
        if stopped and self.env.is_main:
            log(f"[train] stopped at step {self.pos.step} after max_minutes={self.cfg.max_minutes}")
        if self.cfg.ddp_check:
            (self.out / f"params.rank{self.env.rank}").write_text(param_digest(self.model))
        if self.metrics_f:
            self.metrics_f.close()
        if self.scalars is not None:
            self.scalars.close()
        return self.out / "ckpt.pt"


def train(cfg: TrainConfig, resume: bool = True, quick_eval: Callable | None = None) -> Path:
    """Train per `cfg`; returns the checkpoint path. Resumes from out/ckpt.pt when present and `resume`.

    quick_eval(model, step) -> dict, if given, runs every cfg.eval.every steps on rank 0."""
    cfg.augment.validate()
    cfg.degrade.validate()
    env = setup_env(cfg)
    trainer = None
    try:
        ckpt = Path(cfg.out) / "ckpt.pt"
        state = load_checkpoint(ckpt) if resume and ckpt.exists() else None
        if state is not None and env.is_main:
            _note_schedule_change(cfg, state, ckpt)
        trainer = Trainer(cfg, env, state, quick_eval)
        return trainer.fit()
    finally:
        if env.world > 1 and dist.is_initialized():
            # DDP's reducer holds gloo work and tensors: free it while the interpreter is whole and before
            # the group goes (left to interpreter exit, a gloo thread could abort the process)
            trainer = None
            gc.collect()
            dist.barrier()
            dist.destroy_process_group()


def _note_schedule_change(cfg: TrainConfig, state: dict, path: Path) -> None:
    saved = from_dict(state["train_config"])  # either spelling of the keys (config.FLAT_KEYS)
    changed = {k: (attrgetter(k)(saved), attrgetter(k)(cfg)) for k in SCHEDULE_KEYS
               if attrgetter(k)(saved) != attrgetter(k)(cfg)}
    if changed:
        what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
        log(f"[train] note: resuming {path} at step {state['step']} with a changed schedule ({what}); "
            f"the learning rate follows the new schedule from here (use --fresh to start over)")


def _peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)
