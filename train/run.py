"""Train a recognizer (GryphOne by default; the AR baseline, PosFormer or HVT with model.kind=...), then
evaluate, plot and predict.

    python -m train.run                          # the demo: synthesize -> shards -> train -> eval -> predict
    python -m train.run --config crohme-cpu      # the CPU reference run on CROHME shards
    python -m train.run --config crohme-ship     # the run behind the shipped weights (docs/training.md)
    python -m train.run --config paper --data shards/mathwriting
    torchrun --nproc_per_node 8 -m train.run --config paper      # DDP
    python -m train.run --config demo model.kind=ar              # the AR baseline on the same encoder

Outputs in --out: ckpt.pt (resumed automatically; --fresh to start over), metrics.jsonl, config.json,
eval.json, MODEL_CARD.md, curves.png, refinement.png, data_skipped.json (and TensorBoard event files
beside metrics.jsonl with log.tensorboard=true).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


from datasets_prep.render_spec import RenderSpecError
from datasets_prep.shards import ShardError
from model import CheckpointError, DecodeSpec, RecognizerConfigError, load

from . import config as config_module
from . import predict
from .config import PRESETS, TrainConfig, apply_overrides, preset, to_dict
from .demo_data import prepare_demo_data
from .eval import default_specs, evaluate_splits, format_table
from .model_card import write_model_card
from .plots import plot_curves, read_metrics
from .tb_log import ScalarLog
from .pretrain import pretrain_applies, run_pretrain
from .refinement import refinement_picture
from .synth_data import prepare_synth
from .trainer import resolve_render, run_device, train


def _quick_eval(cfg: TrainConfig):
    """A small seeded eval during training (first eval split, eval.limit samples, largest T); with
    eval.markup, BLEU-4 too (the text metrics: image EM is left to the final evaluation)."""

    def run(model, step):
        spec = DecodeSpec(model.default_sampler, T=max(cfg.eval.T))
        was_training = model.training
        model.eval()
        res = evaluate_splits(model, Path(cfg.data.root), cfg.eval.splits[:1], [spec], limit=cfg.eval.limit,
                              markup="text" if cfg.eval.markup else "")
        model.train(was_training)
        metrics = res[cfg.eval.splits[0]]["metrics"]
        m = next(iter(metrics.values()))
        bleu = f" BLEU-4 {100 * m['markup_bleu4']:.1f}" if "markup_bleu4" in m else ""
        print(f"  eval@{step} {cfg.eval.splits[0]}[:{cfg.eval.limit}] {spec.name}: ExpRate {100 * m['em']:.1f} "
              f"CER {100 * m['cer']:.1f}{bleu}", flush=True)
        return metrics

    return run


def final_report(cfg: TrainConfig, ckpt: Path) -> dict:
    """Full evaluation on every eval split, the curves, and (GryphOne) one refinement picture."""
    out = Path(cfg.out)
    loaded = load(ckpt, run_device(cfg))
    rec = loaded.recognizer
    specs = default_specs(rec, cfg.eval.T, cfg.eval.samplers, seeds=cfg.eval.seeds, beams=cfg.eval.beams)
    results = evaluate_splits(rec, Path(cfg.data.root), cfg.eval.splits, specs, markup=cfg.eval.markup)
    for split, res in results.items():
        print(format_table(split, res["metrics"]), flush=True)
    report = {"step": loaded.step, "results": results}
    (out / "eval.json").write_text(json.dumps(report, indent=1))
    if cfg.log.tensorboard:  # the final evaluation beside the training curves, at the last step
        tb = ScalarLog(out)
        for split, res in results.items():
            tb.add(f"final/{split}", res["metrics"], loaded.step)
        tb.close()
    write_model_card(cfg, loaded, report, out, _stage_minutes(out / "pretrain" / "metrics.jsonl"))
    curves = plot_curves(out / "metrics.jsonl", out / "curves.png", stage1=out / "pretrain" / "metrics.jsonl",
                         final=report)
    wrote = "eval.json, MODEL_CARD.md" + (", curves.png" if curves else "")
    if curves is None:
        print("[run] note: no curves.png without matplotlib (pip install matplotlib, the plots extra)")
    if rec.step_samplers:
        refinement_picture(rec, Path(cfg.data.root) / cfg.eval.splits[0], max(cfg.eval.T), out / "refinement.png")
        wrote += ", refinement.png"
    print(f"[run] wrote {out}/{wrote}")
    return results


def _stage_minutes(metrics: Path) -> float:
    """The training minutes a stage's metrics.jsonl ends at (0 when there is none)."""
    rows = read_metrics(metrics) if metrics.is_file() else []
    return max((float(r.get("elapsed_s") or 0.0) for r in rows), default=0.0) / 60


def _demo_predict(cfg: TrainConfig, ckpt: Path, n: int = 3) -> None:
    """Run the predict CLI's code path on a few held-out InkML files of the demo set."""
    files = sorted((Path(cfg.data.root).parent / "ink" / "test").glob("*.inkml"))[:n]
    if files:
        print(f"[run] python -m train.predict --ckpt {ckpt} {' '.join(str(f) for f in files)}")
        predict.main(["--ckpt", str(ckpt), *map(str, files)])


def _synth_split(cfg: TrainConfig, is_main: bool) -> Path | None:
    """Rank 0 makes (or finds) the synthetic set; other ranks wait for the path it writes."""
    if cfg.synth.count <= 0:
        return None
    marker = Path(cfg.out) / "synth_split.json"
    if is_main:
        split = prepare_synth(cfg, resolve_render(cfg))
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"split": str(split), "count": cfg.synth.count}))
        return split
    for _ in range(7200):
        if marker.exists() and json.loads(marker.read_text()).get("count") == cfg.synth.count:
            return Path(json.loads(marker.read_text())["split"])
        time.sleep(1)
    raise ValueError(f"{marker}: rank 0 did not finish the synthetic set within 2 hours")


MARKUP_MODES = ("", "text", "images")
"""eval.markup: none, the image-to-markup text metrics, or those plus image exact match."""


def main(argv: list[str] | None = None) -> int:
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
    except (ValueError, RecognizerConfigError) as exc:
        ap.error(str(exc))
    if cfg.eval.markup not in MARKUP_MODES:
        ap.error(f"eval.markup={cfg.eval.markup!r}: choose from {', '.join(map(repr, MARKUP_MODES))}")
    if args.data:
        cfg.data.root = args.data
    if args.out:
        cfg.out = args.out
    if cfg.model.kind != preset(args.config).model.kind and args.out is None:
        cfg.out += f"-{cfg.model.kind}"  # `--config demo model.kind=ar` writes runs/demo-ar, not over runs/demo
    if args.show_config:
        print(json.dumps(to_dict(cfg), indent=1))
        return 0
    is_main = int(os.environ.get("RANK", "0")) == 0
    t0 = time.time()
    try:
        if args.config == "demo" and args.data is None and is_main:
            prepare_demo_data(Path(cfg.data.root).parent)
        if not (Path(cfg.data.root) / cfg.data.train_split).exists():
            print(f"error: no shards at {cfg.data.root}/{cfg.data.train_split}; write them with "
                  f"`python -m datasets_prep.inkml --src ... --out {cfg.data.root}`", file=sys.stderr)
            return 1
        if args.fresh and is_main:
            for name in ("ckpt.pt", "metrics.jsonl", "pretrain/ckpt.pt", "pretrain/metrics.jsonl"):
                (Path(cfg.out) / name).unlink(missing_ok=True)
        synth = _synth_split(cfg, is_main)
        if synth is not None:
            cfg.data.extra = (*cfg.data.extra, str(synth))
        times = {"data": time.time() - t0}
        if pretrain_applies(cfg, log=print if is_main else (lambda msg: None)):
            pre_ckpt, times["pretrain"] = run_pretrain(cfg, resume=not args.fresh)
            cfg.model.encoder_init = str(pre_ckpt)
            if cfg.pretrain.init_decoder and hasattr(cfg.model, "decoder_init"):
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
    except (CheckpointError, ShardError, RenderSpecError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if is_main:
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
        print(f"[run] done in {time.time() - t0:.0f} s ({parts}); outputs in {cfg.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
