"""Evaluate a checkpoint on shard splits: CER, EM, ExpRate <=1/<=2, symbol and structure error rates.

Every sample of a split is scored (an unencodable or over-long reference still counts, as a miss the
model cannot avoid); metrics come from `tokenizer.metrics`, computed on decoded LaTeX, raw and again
after `tokenizer.normalize` on both sides (`*_normalized`; the table's ExpNorm), so spelling
differences can be told from recognition errors. The stochastic re-mask sampler is run over several
seeds and reported as mean and spread. `--json` keeps every prediction beside its reference, so any
other scorer can be run on them. RawInv is the share of raw outputs that did not parse (repaired).

    python -m train.eval --ckpt runs/demo/ckpt.pt --data runs/demo/shards --splits test --T 1,10
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from tokenizer import LatexError, TokenVocab, normalize
from tokenizer.metrics import score

from .checkpoint import CheckpointError
from .data import ShardDataset, ShardError, collate, load_split_data
from .inference import DecoderSpec, load_model, recognize
from .valid_decode import is_valid


NORMALIZED_KEYS = ("em", "exprate_le1", "exprate_le2", "cer")


def _normalized(latex: str) -> str:
    """tokenizer.normalize applied to a reference or a prediction alike (unchanged if it cannot parse):
    scores that do not depend on spelling (`x^2` vs `x^{2}`, `\\le` vs `\\leq`)."""
    try:
        return normalize(latex)
    except LatexError:
        return latex


def default_specs(vocab, Ts=(1, 10, 50), samplers=("remask", "mask-predict"), seeds: int = 3,
                  beams=(1,), valid: bool = True) -> list[DecoderSpec]:
    if isinstance(vocab, TokenVocab):
        return [DecoderSpec("greedy" if b <= 1 else "beam", beam=b, valid=valid) for b in beams]
    specs = []
    for sampler in samplers:
        for T in Ts:
            n = seeds if (sampler.startswith("remask") and T > 1) else 1
            specs += [DecoderSpec(sampler, T=T, seed=s, valid=valid) for s in range(n)]
    return specs


def decode_split(model, vocab, dataset: ShardDataset, spec: DecoderSpec, batch_size: int = 32,
                 stats: Counter | None = None) -> list[str]:
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=collate)
    hyps: list[str] = []
    for i, batch in enumerate(loader):
        hyps += recognize(model, vocab, batch["image"], dataclasses.replace(spec, seed=spec.seed * 100_003 + i),
                          stats=stats)
    return hyps


def evaluate(model, vocab, dataset: ShardDataset, refs: list[str], specs: list[DecoderSpec],
             batch_size: int = 32) -> dict:
    """{decoder name: {metric: mean, metric_std: spread, "seeds": n, "ms_per_image": ...}} plus samples."""
    runs: dict[str, list[dict]] = {}
    examples: dict[str, list[dict]] = {}
    for spec in specs:
        t0 = time.perf_counter()
        stats: Counter = Counter()
        hyps = decode_split(model, vocab, dataset, spec, batch_size, stats)
        elapsed = time.perf_counter() - t0
        metrics = score(refs, hyps)
        normed = score([_normalized(r) for r in refs], [_normalized(h) for h in hyps])
        metrics.update({f"{k}_normalized": v for k, v in normed.items() if k in NORMALIZED_KEYS})
        metrics["ms_per_image"] = 1000 * elapsed / max(1, len(refs))
        n = max(1, len(hyps))
        metrics["raw_invalid_rate"] = stats["raw_invalid"] / n    # the argmax output did not parse
        metrics["repaired_rate"] = stats["repaired"] / n          # fixed by a one/two-position edit
        metrics["invalid_rate"] = sum(not is_valid(h) for h in hyps) / n  # what is returned (0 with repair)
        runs.setdefault(spec.name, []).append(metrics)
        if spec.name not in examples:
            examples[spec.name] = [{"ref": r, "hyp": h} for r, h in zip(refs, hyps)]
    report = {}
    for name, per_seed in runs.items():
        agg: dict[str, float] = {"seeds": len(per_seed)}
        for key in per_seed[0]:
            values = [m[key] for m in per_seed]
            agg[key] = statistics.fmean(values)
            if len(values) > 1:
                agg[key + "_std"] = statistics.stdev(values)
        report[name] = agg
    return {"metrics": report, "examples": examples}


def format_table(split: str, metrics: dict) -> str:
    lines = [f"{split}: {next(iter(metrics.values()))['n']:.0f} samples",
             f"  {'decoder':<18} {'ExpRate':>8} {'±seeds':>7} {'<=1':>7} {'<=2':>7} {'CER':>7} {'SymER':>7}"
             f" {'StrER':>7} {'ExpNorm':>7} {'RawInv':>7} {'ms/img':>7}"]
    for name, m in metrics.items():
        spread = f"{100 * m['em_std']:.2f}" if "em_std" in m else "-"
        lines.append(f"  {name:<18} {100 * m['em']:>8.2f} {spread:>7} {100 * m['exprate_le1']:>7.2f}"
                     f" {100 * m['exprate_le2']:>7.2f} {100 * m['cer']:>7.2f} {100 * m['symbol_error_rate']:>7.2f}"
                     f" {100 * m['structure_error_rate']:>7.2f} {100 * m.get('em_normalized', m['em']):>7.2f}"
                     f" {100 * m.get('raw_invalid_rate', 0):>7.2f}"
                     f" {m['ms_per_image']:>7.1f}")
    return "\n".join(lines)


def evaluate_splits(model, vocab, mcfg, data_root: Path, splits, specs, batch_size=32, limit: int = 0,
                    normalized: bool = False) -> dict:
    """normalized: score against tokenizer.normalize(reference), for models trained on normalized labels."""
    results = {}
    for split in splits:
        data = load_split_data(data_root / split, vocab, mcfg.max_len, keep_all=True, normalized=normalized)
        if limit:
            data.rows, data.labels = data.rows[:limit], data.labels[:limit]
            data.targets = {k: v[:limit] for k, v in data.targets.items()}
        dataset = ShardDataset(data, mcfg.image_size)
        res = evaluate(model, vocab, dataset, data.labels, specs, batch_size)
        res["unencodable_references"] = {k: v for k, v in data.skipped.items()}
        results[split] = res
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.eval", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, help="checkpoint written by train.run")
    ap.add_argument("--data", required=True, help="shard root (datasets_prep.inkml --out)")
    ap.add_argument("--splits", default=None, help="comma-separated splits (default: the run's eval splits)")
    ap.add_argument("--T", default="1,10,50", help="diffusion steps to evaluate, comma-separated (default: %(default)s)")
    ap.add_argument("--samplers", default="remask,mask-predict",
                    help="comma-separated: remask, remask-keep, mask-predict (default: %(default)s)")
    ap.add_argument("--no-repair", action="store_true",
                    help="score the raw argmax outputs (default: outputs that do not parse are repaired)")
    ap.add_argument("--seeds", type=int, default=3, help="sampler seeds for the random re-mask decoder")
    ap.add_argument("--beams", default="1", help="AR checkpoints: beam widths (1 = greedy)")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N samples of each split")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-ema", action="store_true", help="use the raw weights even when the run kept an EMA")
    ap.add_argument("--json", default=None, help="write the full report (metrics and every prediction) here")
    args = ap.parse_args(argv)
    try:
        model, vocab, mcfg, state = load_model(args.ckpt, args.device, use_ema=not args.no_ema)
        splits = args.splits.split(",") if args.splits else list(state["train_config"]["eval_splits"])
        specs = default_specs(vocab, [int(t) for t in args.T.split(",")], args.samplers.split(","), args.seeds,
                              [int(b) for b in args.beams.split(",")], valid=not args.no_repair)
        normalized = bool(state["train_config"].get("normalize_labels", False))
        results = evaluate_splits(model, vocab, mcfg, Path(args.data), splits, specs, args.batch_size, args.limit,
                                  normalized)
    except (CheckpointError, ShardError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for split, res in results.items():
        print(format_table(split, res["metrics"]))
        if res["unencodable_references"]:
            print(f"  references the model cannot produce (scored as given): {res['unencodable_references']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"ckpt": args.ckpt, "step": state["step"], "results": results},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
