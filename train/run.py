"""Train GryphOne (or the autoregressive baseline), then evaluate, plot and predict.

    python -m train.run                          # the demo: synthesize -> shards -> train -> eval -> predict
    python -m train.run --config crohme-cpu      # the CPU reference run on CROHME shards
    python -m train.run --config paper --data shards/mathwriting
    torchrun --nproc_per_node 8 -m train.run --config paper      # DDP
    python -m train.run --config demo model.kind=ar              # the AR baseline on the same encoder

Outputs in --out: ckpt.pt (resumed automatically; --fresh to start over), metrics.jsonl, config.json,
eval.json, curves.png, refinement.png, data_skipped.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .checkpoint import CheckpointError
from .config import PRESETS, TrainConfig, apply_overrides, preset
from .data import ShardError


def _quick_eval(cfg: TrainConfig):
    """A small seeded eval during training (first eval split, eval_limit samples, largest T)."""
    from .eval import evaluate_splits
    from .inference import DecoderSpec

    def run(model, vocab, step):
        from tokenizer import TokenVocab

        spec = DecoderSpec("greedy") if isinstance(vocab, TokenVocab) else DecoderSpec("remask", T=max(cfg.eval_T))
        was_training = model.training
        model.eval()
        res = evaluate_splits(model, vocab, cfg.model, Path(cfg.data), cfg.eval_splits[:1], [spec],
                              limit=cfg.eval_limit, normalized=cfg.normalize_labels)
        model.train(was_training)
        metrics = res[cfg.eval_splits[0]]["metrics"]
        m = next(iter(metrics.values()))
        print(f"  eval@{step} {cfg.eval_splits[0]}[:{cfg.eval_limit}] {spec.name}: ExpRate {100 * m['em']:.1f} "
              f"CER {100 * m['cer']:.1f}", flush=True)
        return metrics

    return run


def final_report(cfg: TrainConfig, ckpt: Path) -> dict:
    """Full evaluation on every eval split, the curves, and one refinement picture."""
    from .eval import default_specs, evaluate_splits, format_table
    from .inference import load_model
    from .plots import plot_curves

    out = Path(cfg.out)
    model, vocab, mcfg, state = load_model(ckpt)
    specs = default_specs(vocab, cfg.eval_T, cfg.eval_samplers, seeds=cfg.eval_seeds)
    results = evaluate_splits(model, vocab, mcfg, Path(cfg.data), cfg.eval_splits, specs,
                              normalized=cfg.normalize_labels)
    for split, res in results.items():
        print(format_table(split, res["metrics"]), flush=True)
    (out / "eval.json").write_text(json.dumps({"step": state["step"], "results": results}, indent=1))
    plot_curves(out / "metrics.jsonl", out / "curves.png")
    from tokenizer import TokenVocab

    if not isinstance(vocab, TokenVocab):
        refinement_picture(model, vocab, mcfg, cfg, out / "refinement.png")
    print(f"[run] wrote {out}/eval.json, curves.png" + ("" if isinstance(vocab, TokenVocab) else ", refinement.png"))
    return results


def refinement_picture(model, vocab, mcfg, cfg: TrainConfig, out_png: Path, candidates: int = 64) -> Path:
    """Draw the refinement of the first eval-split sample (of `candidates`) whose prediction changes
    most across the sampler's steps, preferring one that ends right: a sample already right at step 1
    shows nothing."""
    from .data import ShardDataset, collate, load_split_data
    from .inference import DecoderSpec, recognize
    from .plots import plot_refinement

    data = load_split_data(Path(cfg.data) / cfg.eval_splits[0], vocab, mcfg.max_len, keep_all=True,
                           normalized=cfg.normalize_labels)
    dataset = ShardDataset(data, mcfg.image_size)
    batch = collate([dataset[i] for i in range(min(candidates, len(dataset)))])
    T = max(cfg.eval_T)
    history: list = []
    recognize(model, vocab, batch["image"], DecoderSpec("remask", T=T), history=history)

    def step_latex(i: int) -> list[str]:
        return [vocab.decode(s[i].tolist(), m[i].tolist()) for s, m, _ in history]

    def preference(i: int) -> tuple[bool, bool, bool, int]:
        """Changes and ends right > changes > ends right > most changes: a weak model's few right
        answers are often settled at step 1, and a picture with no change shows nothing."""
        texts = step_latex(i)
        right, n = texts[-1] == batch["latex"][i], sum(a != b for a, b in zip(texts, texts[1:]))
        return right and n > 0, n > 0, right, n

    best = max(range(len(batch["latex"])), key=preference)
    steps = []
    for s, m, conf in history:
        row = []
        for k, (sid, mid) in enumerate(zip(s[best].tolist(), m[best].tolist())):
            if sid == vocab.PAD:
                break
            sym = vocab.symbols[sid] if 3 <= sid < vocab.num_symbols else "?"
            pre, post = vocab.modifiers[mid] if 3 <= mid < vocab.num_modifiers else ((), ())
            row.append(("".join(pre) + sym + "".join(post), float(conf[best, k])))
        steps.append({"cells": row, "latex": vocab.decode(s[best].tolist(), m[best].tolist())})
    image = (255 - batch["image"][best, 0].numpy() * 255).astype(np.uint8)
    return plot_refinement(image, steps, batch["latex"][best], out_png,
                           title=f"random re-mask sampler, T={T}: one test expression, step by step")


def _demo_predict(cfg: TrainConfig, ckpt: Path, n: int = 3) -> None:
    """Run the predict CLI's code path on a few held-out InkML files of the demo set."""
    from . import predict

    files = sorted((Path(cfg.data).parent / "ink" / "test").glob("*.inkml"))[:n]
    if files:
        print(f"[run] python -m train.predict --ckpt {ckpt} {' '.join(str(f) for f in files)}")
        predict.main(["--ckpt", str(ckpt), *map(str, files)])


def _canvas_from_data(cfg: TrainConfig, explicit: bool, is_main: bool) -> None:
    """The model's canvas follows the shards' (their summary.json says how they were made) unless the
    command line set `model.image_size`: then a disagreement is one clear error when training starts."""
    from .trainer import render_settings

    render = render_settings(Path(cfg.data))
    if explicit or not render:
        return
    size = tuple(int(v) for v in render["size"])
    patch = cfg.model.patch
    if size == tuple(cfg.model.image_size) or size[0] % patch or size[1] % patch:
        return
    if is_main:
        print(f"[run] model.image_size follows the shards: {size[0]}x{size[1]} (the preset says "
              f"{cfg.model.image_size[0]}x{cfg.model.image_size[1]}; set model.image_size=HxW to insist)")
    cfg.model.image_size = size


def main(argv: list[str] | None = None) -> int:
    from . import config as config_module

    ap = argparse.ArgumentParser(prog="python -m train.run", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1] + "\n" + config_module.__doc__.split("\n\n", 1)[1]
                                 + "\nExit status: 0 done; 1 an error (named file and cause); 2 bad command line.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="demo", choices=sorted(PRESETS), help="preset (default: demo)")
    ap.add_argument("--data", default=None, help="shard root (datasets_prep.inkml --out)")
    ap.add_argument("--out", default=None, help="run folder")
    ap.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint in --out")
    ap.add_argument("--no-eval", action="store_true", help="train only")
    ap.add_argument("--show-config", action="store_true",
                    help="print the resolved config (every override key with its value) and exit")
    ap.add_argument("overrides", nargs="*", help="key=value config overrides (dotted keys)")
    args = ap.parse_intermixed_args(argv)
    try:
        cfg = apply_overrides(preset(args.config), args.overrides)
    except ValueError as exc:
        ap.error(str(exc))
    if args.data:
        cfg.data = args.data
    if args.out:
        cfg.out = args.out
    if cfg.model.kind == "ar" and args.out is None:
        cfg.out += "-ar"
    if args.show_config:
        from .config import to_dict

        print(json.dumps(to_dict(cfg), indent=1))
        return 0
    is_main = int(os.environ.get("RANK", "0")) == 0
    t0 = time.time()
    try:
        if args.config == "demo" and args.data is None:
            from .demo_data import prepare_demo_data

            if is_main:
                prepare_demo_data(Path(cfg.data).parent, cfg.model.image_size)
        if not (Path(cfg.data) / cfg.train_split).exists():
            print(f"error: no shards at {cfg.data}/{cfg.train_split}; write them with "
                  f"`python -m datasets_prep.inkml --src ... --out {cfg.data}`", file=sys.stderr)
            return 1
        explicit = any(o.split("=", 1)[0].strip() == "model.image_size" for o in args.overrides)
        _canvas_from_data(cfg, explicit, is_main)
        if args.fresh and is_main:
            for name in ("ckpt.pt", "metrics.jsonl", "pretrain/ckpt.pt", "pretrain/metrics.jsonl"):
                (Path(cfg.out) / name).unlink(missing_ok=True)
        from .trainer import train

        times = {"data": time.time() - t0}
        if cfg.model.kind == "diffusion" and (cfg.pretrain.steps or cfg.pretrain.max_minutes) \
                and not cfg.model.encoder_init:
            from .pretrain import run_pretrain

            pre_ckpt, times["pretrain"] = run_pretrain(cfg, resume=not args.fresh)
            cfg.model.encoder_init = str(pre_ckpt)
            if cfg.pretrain.init_decoder:
                cfg.model.decoder_init = str(pre_ckpt)
        t1 = time.time()
        ckpt = train(cfg, resume=not args.fresh, quick_eval=_quick_eval(cfg))
        times["train"] = time.time() - t1
        if is_main and not args.no_eval:
            t2 = time.time()
            final_report(cfg, ckpt)
            if args.config == "demo":
                _demo_predict(cfg, ckpt)
            times["eval"] = time.time() - t2
    except (CheckpointError, ShardError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if is_main:
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
        print(f"[run] done in {time.time() - t0:.0f} s ({parts}); outputs in {cfg.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
