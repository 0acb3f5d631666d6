"""The training loop (nanoGPT-style): one function, plain PyTorch, exact resume, DDP when launched by torchrun.

Determinism: batches come from `epoch_batches(seed, epoch)`, masks from a generator seeded by
(seed, step, rank), dropout from the global RNG whose state is checkpointed; so stopping after step
s and resuming gives the same loss at step s+1 as a run that never stopped.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from model import build_model, count_params, flops_per_image, init_encoder
from tokenizer import SATVocab, TokenVocab

from .augment import augment_batch
from .checkpoint import load_checkpoint, save_checkpoint
from .config import TrainConfig, from_dict, to_dict
from .data import ShardDataset, collate, epoch_batches, load_split_data, read_labels
from .inference import vocab_from_dict, vocab_to_dict

SCHEDULE_KEYS = ("lr", "warmup_steps", "schedule", "min_lr_ratio", "epochs", "max_steps", "max_minutes", "batch_size")
PEAK_BF16_FLOPS = {"H200": 790e12, "H100": 790e12, "A100": 312e12, "V100": 125e12, "L4": 121e12}


def log(msg: str) -> None:
    print(msg, flush=True)


def _device(cfg: TrainConfig) -> torch.device:
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


def _peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """No weight decay on norms, biases, embeddings and position tables (docs/training.md)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim < 2 or "emb" in name or "norm" in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_at(cfg: TrainConfig, step: int, total: int, time_progress: float | None = None) -> float:
    """Linear warmup, then constant or cosine. With a time budget (time_progress in [0, 1], the share
    of max_minutes spent) the cosine follows the clock instead of the step count."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "cosine":
        if time_progress is not None:
            progress = min(1.0, time_progress)
        else:
            progress = min(1.0, (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps))
        return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
    return cfg.lr


def build_vocab(cfg: TrainConfig, split_dir: Path, labelled: tuple | None = None) -> SATVocab | TokenVocab:
    """The vocabulary of the training split; `labelled` = read_labels(...) when the caller has it."""
    from .data import read_labels

    table, labels = labelled if labelled is not None else read_labels(split_dir, cfg.normalize_labels)
    if "label_error" in table.column_names and cfg.drop_invalid:
        errs = table.column("label_error").to_pylist()
        labels = [lab for lab, e in zip(labels, errs) if not e]
    if cfg.model.kind == "ar":
        return TokenVocab.build(labels, min_count=cfg.vocab_min_count)
    return SATVocab.build(labels, extended=cfg.extended_modifiers, min_count=cfg.vocab_min_count)


def _rng_state(device: torch.device) -> dict:
    """Every RNG state as tensors and plain types, so the checkpoint loads with weights_only=True."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"torch": torch.get_rng_state(),
             "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "gauss": float(gauss)}}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def param_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train(cfg: TrainConfig, resume: bool = True, quick_eval=None) -> Path:
    """Train per `cfg`; returns the checkpoint path. Resumes from out/ckpt.pt when present and `resume`.

    quick_eval(model, vocab, step) -> dict, if given, runs every cfg.eval_every steps on rank 0.
    """
    cfg.augment.validate()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = _device(cfg)
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} is not divisible by {world} processes")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    is_main = rank == 0
    out = Path(cfg.out)
    ckpt_path = out / "ckpt.pt"
    use_bf16 = cfg.bf16 if cfg.bf16 is not None else device.type == "cuda"
    use_compile = cfg.compile if cfg.compile is not None else device.type == "cuda"
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    state = load_checkpoint(ckpt_path) if resume and ckpt_path.exists() else None
    train_dir = Path(cfg.data) / cfg.train_split
    labelled = read_labels(train_dir, cfg.normalize_labels)  # read and normalized once, for vocab and data
    if state is not None:
        vocab = vocab_from_dict(state["vocab"])
    else:
        torch.manual_seed(cfg.seed)
        np.random.seed(cfg.seed)
        vocab = build_vocab(cfg, train_dir, labelled)
    mcfg = cfg.model
    if mcfg.kind == "ar":
        mcfg.num_tokens = len(vocab.tokens)
    else:
        mcfg.num_symbols, mcfg.num_modifiers = vocab.num_symbols, vocab.num_modifiers
    if state is not None and from_dict(state["train_config"]).model != mcfg:
        raise ValueError(f"{ckpt_path}: the checkpoint's model config differs from this run's; "
                         f"use another --out or --fresh")

    if state is not None and is_main:
        saved = state["train_config"]
        changed = {k: (saved.get(k), getattr(cfg, k)) for k in SCHEDULE_KEYS if saved.get(k) != getattr(cfg, k)}
        if changed:
            what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
            log(f"[train] note: resuming {ckpt_path} at step {state['step']} with a changed schedule ({what}); "
                f"the learning rate follows the new schedule from here (use --fresh to start over)")
    data = load_split_data(train_dir, vocab, mcfg.max_len, drop_invalid=cfg.drop_invalid,
                           forest_depths=mcfg.forest_depths, normalized=cfg.normalize_labels, labelled=labelled)
    if not len(data.rows):
        raise ValueError(f"{cfg.data}/{cfg.train_split}: no usable training samples ({dict(data.skipped)})")
    dataset = ShardDataset(data, mcfg.image_size)
    _check_canvas(dataset, Path(cfg.data) / cfg.train_split, tuple(mcfg.image_size))

    model = build_model(mcfg)
    if state is None and mcfg.encoder_init:
        info = init_encoder(model.encoder, mcfg.encoder_init)
        if is_main:
            log(f"[train] encoder starts from {mcfg.encoder_init} ({info['kind']}: {info['loaded']} tensors"
                + (f", {len(info['unused'])} unused" if info["unused"] else "") + ")")
    if state is None and mcfg.decoder_init and mcfg.kind == "diffusion":
        from .pretrain import decoder_from_reader

        info = decoder_from_reader(model, vocab, mcfg.decoder_init)
        if is_main:
            log(f"[train] decoder starts from {mcfg.decoder_init}'s AR decoder ({info['blocks']} block tensors, "
                f"{info['symbols']} symbols, {info['modifiers']} modifiers)")
    model = model.to(device)
    ema = copy.deepcopy(model).eval() if cfg.ema > 0 else None
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, fused=fused)
    step, epoch, batch_in_epoch = 0, 0, 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if ema is not None and state.get("ema"):
            ema.load_state_dict(state["ema"])
        step, epoch, batch_in_epoch = state["step"], state["epoch"], state["batch_in_epoch"]
        _set_rng_state(state["rng"][rank] if isinstance(state["rng"], list) else state["rng"], device)
    train_module = model
    if use_compile:
        train_module = torch.compile(model)
    if world > 1:
        train_module = torch.nn.parallel.DistributedDataParallel(
            train_module, device_ids=[device.index] if device.type == "cuda" else None)

    batches_per_epoch = len(epoch_batches(len(dataset), cfg.batch_size, cfg.seed, 0, rank, world))
    # a time budget alone (max_minutes, no max_steps) runs until the clock says stop, cosine on the clock;
    # resuming such a run continues its clock (train_seconds is checkpointed) but is not bit-exact
    by_time = bool(cfg.max_minutes and not cfg.max_steps)
    total = cfg.max_steps or (10**12 if by_time else int(math.ceil(cfg.epochs * batches_per_epoch)))
    fpi = flops_per_image(mcfg, train=True)
    peak = _peak_flops(device)
    if is_main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(to_dict(cfg), indent=1))
        skipped = dict(data.skipped)
        (out / "data_skipped.json").write_text(json.dumps({"counts": skipped, "examples": data.skipped_examples},
                                                          indent=1))
        log(f"[train] {mcfg.kind} model, {count_params(model) / 1e6:.2f}M parameters, device {device}"
            f"{' bf16' if use_bf16 else ''}{' compiled' if use_compile else ''}, world {world}")
        log(f"[train] {len(dataset)} training samples from {cfg.data}/{cfg.train_split}"
            f" (left out: {skipped or 'none'}); vocab {_vocab_size(vocab)}; "
            + (f"{cfg.max_minutes} minutes" if by_time else f"{total} steps")
            + (f" (resuming at step {step})" if step else ""))
    metrics_f = open(out / "metrics.jsonl", "a") if is_main else None
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if use_bf16 else nullcontext()
    t_start = time.time()
    spent_before = state.get("train_seconds", 0.0) if state is not None else 0.0

    def train_seconds() -> float:
        return spent_before + time.time() - t_start
    t_log, seen_log = time.time(), 0
    running: dict[str, float] = {}
    n_running = 0
    stop = bool(cfg.max_minutes) and spent_before >= cfg.max_minutes * 60  # a finished timed run stays finished
    loader_gen = torch.Generator().manual_seed(cfg.seed)  # keeps DataLoader off the global RNG
    while step < total and not stop:
        batches = epoch_batches(len(dataset), cfg.batch_size, cfg.seed, epoch, rank, world)
        loader = torch.utils.data.DataLoader(dataset, batch_sampler=batches[batch_in_epoch:], collate_fn=collate,
                                             num_workers=cfg.num_workers, generator=loader_gen,
                                             persistent_workers=False, pin_memory=device.type == "cuda")
        for batch in loader:
            lr = lr_at(cfg, step, total, train_seconds() / (60 * cfg.max_minutes) if by_time else None)
            for group in opt.param_groups:
                group["lr"] = lr
            images = batch["image"].to(device, non_blocking=True)
            tensors = {k: v.to(device, non_blocking=True) for k, v in batch.items() if isinstance(v, torch.Tensor)}
            if mcfg.kind == "diffusion" and mcfg.loss.kl_warmup_steps:
                tensors["kl_scale"] = torch.tensor(min(1.0, step / mcfg.loss.kl_warmup_steps))
            gen = torch.Generator(device=device).manual_seed(cfg.seed * 1_000_003 + step * 131 + rank)
            if cfg.augment.prob > 0:  # its own stream, so the masks are the same with or without it
                aug_gen = torch.Generator(device=device).manual_seed(cfg.seed * 1_000_033 + step * 137 + rank + 1)
                images = augment_batch(images, cfg.augment, aug_gen)
            model.train()
            with autocast:
                parts = train_module(images, tensors, gen)
            opt.zero_grad(set_to_none=True)
            parts["loss"].backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip) if cfg.grad_clip else None
            opt.step()
            if ema is not None:  # decay warms up (1+s)/(10+s) so early EMA weights are not the random init
                decay = min(cfg.ema, (1 + step) / (10 + step))
                with torch.no_grad():
                    for pe, pm in zip(ema.parameters(), model.parameters()):
                        pe.lerp_(pm, 1 - decay)
                    for be, bm in zip(ema.buffers(), model.buffers()):
                        be.copy_(bm)
            step += 1
            batch_in_epoch += 1
            seen_log += images.shape[0] * world
            for k, v in parts.items():
                running[k] = running.get(k, 0.0) + float(v.detach())
            n_running += 1
            if is_main and (step % cfg.log_every == 0 or step == total):
                dt = time.time() - t_log
                ips = seen_log / max(dt, 1e-9)
                rec = {"step": step, "epoch": epoch, "lr": lr, **{k: v / n_running for k, v in running.items()},
                       "grad_norm": float(grad_norm) if grad_norm is not None else None,
                       "images_per_s": ips, "elapsed_s": train_seconds()}
                if peak:
                    rec["mfu"] = fpi * ips / peak
                else:
                    rec["achieved_gflops"] = fpi * ips / 1e9
                metrics_f.write(json.dumps(rec) + "\n")
                metrics_f.flush()
                log(f"step {step}{'' if by_time else f'/{total}'} loss {rec['loss']:.4f} ce {rec['ce']:.4f}"
                    + (f" kl {rec['kl']:.4f}" if "kl" in rec else "")
                    + (f" reader {rec['reader_ce']:.4f}" if "reader_ce" in rec else "")
                    + f" lr {lr:.2e} {ips:.1f} img/s" + (f" mfu {rec['mfu']:.1%}" if "mfu" in rec else ""))
                running, n_running, t_log, seen_log = {}, 0, time.time(), 0
            if cfg.max_minutes and train_seconds() > cfg.max_minutes * 60:
                stop = True
            last = step >= total or stop
            if is_main and (last or (cfg.ckpt_every and step % cfg.ckpt_every == 0)):
                _save(ckpt_path, cfg, vocab, model, ema, opt, step, epoch, batch_in_epoch, device, world,
                      train_seconds())
            if is_main and quick_eval is not None and cfg.eval_every and step % cfg.eval_every == 0 and not last:
                rec = {"step": step, "eval": quick_eval(ema or model, vocab, step)}
                metrics_f.write(json.dumps(rec) + "\n")
                metrics_f.flush()
            if last:
                break
        else:
            epoch += 1
            batch_in_epoch = 0
    if stop and is_main:
        log(f"[train] stopped at step {step} after max_minutes={cfg.max_minutes}")
    if cfg.ddp_check:
        (out / f"params.rank{rank}").write_text(param_digest(model))
    if metrics_f:
        metrics_f.close()
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return ckpt_path


RENDER_KEYS = ("size", "stroke_width", "margin", "antialias")
OPTIONAL_RENDER_KEYS = ("binarize", "max_glyph")  # absent from older summaries


def render_settings(data_root: Path) -> dict | None:
    """How the shards' images were made (datasets_prep writes them to summary.json), so prediction
    renders a new ink exactly the same way; None for shards that do not say."""
    try:
        opts = json.loads((Path(data_root) / "summary.json").read_text())["options"]
        return {k: opts[k] for k in RENDER_KEYS} | {k: opts[k] for k in OPTIONAL_RENDER_KEYS if k in opts}
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _check_canvas(dataset: ShardDataset, where: Path, size: tuple[int, int]) -> None:
    """One clear error at the start when the shards were made for another canvas than the model's."""
    import io

    from PIL import Image

    cell = dataset.images[int(dataset.data.rows[0])].as_py()
    png = cell["bytes"] if isinstance(cell, dict) else cell
    try:
        with Image.open(io.BytesIO(png)) as im:
            w, h = im.size
    except Exception:  # a corrupt first image is reported by the loader with its sample name
        return
    if (h, w) != size:
        raise ValueError(f"{where}: the shards are {h}x{w} images but model.image_size is {size[0]}x{size[1]}; "
                         f"convert with `--size {size[0]}x{size[1]}` or train with model.image_size={h}x{w}")


def _vocab_size(vocab) -> str:
    if isinstance(vocab, TokenVocab):
        return f"{len(vocab.tokens)} tokens"
    return f"{vocab.num_symbols} symbols x {vocab.num_modifiers} modifiers"


def _save(path, cfg, vocab, model, ema, opt, step, epoch, batch_in_epoch, device, world, seconds) -> None:
    rng = _rng_state(device)
    save_checkpoint(path, {
        "train_config": to_dict(cfg), "vocab": vocab_to_dict(vocab), "model": model.state_dict(),
        "ema": ema.state_dict() if ema is not None else None, "optimizer": opt.state_dict(),
        "step": step, "epoch": epoch, "batch_in_epoch": batch_in_epoch, "rng": rng, "world": world,
        "train_seconds": seconds, "render": render_settings(Path(cfg.data)),
        "torch": str(torch.__version__), "python": sys.version.split()[0],
    })
