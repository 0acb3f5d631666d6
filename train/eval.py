"""Evaluate a checkpoint on shard splits: ExpRate, <=1, <=2, CER, symbol and structure error rates.

Every sample of a split is scored (an unencodable or over-long reference still counts, as a miss the
model cannot avoid); metrics come from `tokenizer.metrics`, computed on decoded LaTeX, against the
references as the run learned them (normalized when its LabelSpec says so), and again after
`tokenizer.normalize` on both sides (`*_canonical`; the table's ExpCanon), so spelling differences
can be told from recognition errors. The stochastic re-mask sampler is run over several seeds and
reported as mean and spread. `--json` keeps every prediction of every decoder and seed with its
`sample_id`, so any other scorer can be run on them and any error traced to its file; `--errors N`
prints the N worst samples. RawInv is the share of raw outputs that did not parse (repaired).

    python -m train.eval --ckpt runs/demo/ckpt.pt --data runs/demo/shards --splits test --T 1,10

Exit status: 0 done; 1 an unusable checkpoint or shard folder (named); 2 bad command line.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import torch

from datasets_prep.names import plain_name
from datasets_prep.shards import ShardError
from model import CheckpointError, DecodeSpec, Recognizer, load
from model.decoding import eval_specs
from model.repair import is_valid
from model.shipped import help_line
from datasets_prep.synth.printed import render_print
from tokenizer import LatexError, normalize, tokenize
from tokenizer.markup_metrics import markup_scores
from tokenizer.metrics import score, token_distance

from .compiled import add_compile_arg, compile_if_asked
from .config import stored_eval_splits
from .threads import add_threads_arg, apply_threads
from .data import ShardDataset, collate, load_split_data, sample_ids

CANONICAL_KEYS = ("em", "exprate_le1", "exprate_le2", "cer")


def canonical(latex: str) -> str:
    """tokenizer.normalize applied to a reference or a prediction alike (unchanged if it cannot parse):
    scores that do not depend on spelling (`x^2` vs `x^{2}`, `\\le` vs `\\leq`)."""
    try:
        return normalize(latex)
    except LatexError:
        return latex


def default_specs(recognizer: Recognizer, Ts=(1, 10, 50), samplers=("remask", "mask-predict"), seeds: int = 3,
                  beams=(1,), valid: bool = True) -> list[DecodeSpec]:
    """The decoders to score (model.decoding.eval_specs): each step sampler at each T (seeded ones over
    `seeds`) for a recognizer that has them, else greedy and each beam width."""
    return eval_specs(recognizer.step_samplers, tuple(Ts), tuple(samplers), seeds, tuple(beams), valid)


def decode_split(recognizer: Recognizer, dataset: ShardDataset, spec: DecodeSpec, batch_size: int = 32,
                 stats: Counter | None = None) -> list[str]:
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=collate)
    hyps: list[str] = []
    for batch in loader:  # one seed for every batch: a sample reads as it would alone (model/sampler_noise.py)
        hyps += recognizer.recognize(batch["image"], spec, stats=stats)
    return hyps


def spaced(latex: str) -> str:
    """A label as im2markup's scripts read it: its tokens joined by single spaces."""
    try:
        return " ".join(tokenize(latex))
    except LatexError:
        return latex


def _metrics(refs: list[str], hyps: list[str], stats: Counter, seconds: float, markup: str = "") -> dict:
    """The HMER metrics; with `markup` ("text" or "images") also the image-to-markup ones (BLEU-4, edit
    score, exact match, and with "images" exact match of the rendered formulas)."""
    metrics = score(refs, hyps)
    if markup:
        metrics.update({f"markup_{k}": v for k, v in markup_scores(
            [spaced(r) for r in refs], [spaced(h) for h in hyps], images=markup == "images",
            render=render_print).items() if k != "n"})
    canon = score([canonical(r) for r in refs], [canonical(h) for h in hyps])
    metrics.update({f"{k}_canonical": v for k, v in canon.items() if k in CANONICAL_KEYS})
    n = max(1, len(hyps))
    metrics["ms_per_image"] = 1000 * seconds / n
    metrics["raw_invalid_rate"] = stats["raw_invalid"] / n    # the argmax output did not parse
    metrics["repaired_rate"] = stats["repaired"] / n          # fixed by a one/two-position edit
    metrics["invalid_rate"] = sum(not is_valid(h) for h in hyps) / n  # what is returned (0 with repair)
    return metrics


def evaluate(recognizer: Recognizer, dataset: ShardDataset, refs: list[str], ids: list[str],
             specs: list[DecodeSpec], batch_size: int = 32, markup: str = "") -> dict:
    """{"metrics": {decoder: {metric: mean, metric_std, "seeds"}}, "predictions": [{sample_id, ref,
    decoder, seed, hyp}, ...] for every decoder and seed}."""
    runs: dict[str, list[dict]] = {}
    predictions: list[dict] = []
    for spec in specs:
        t0 = time.perf_counter()
        stats: Counter = Counter()
        hyps = decode_split(recognizer, dataset, spec, batch_size, stats)
        runs.setdefault(spec.name, []).append(_metrics(refs, hyps, stats, time.perf_counter() - t0, markup))
        predictions += [{"sample_id": i, "decoder": spec.name, "seed": spec.seed, "ref": r, "hyp": h}
                        for i, r, h in zip(ids, refs, hyps)]
    report = {}
    for name, per_seed in runs.items():
        agg: dict[str, float] = {"seeds": len(per_seed)}
        for key in per_seed[0]:
            values = [m[key] for m in per_seed]
            agg[key] = statistics.fmean(values)
            if len(values) > 1:
                agg[key + "_std"] = statistics.stdev(values)
        report[name] = agg
    return {"metrics": report, "predictions": predictions}


def evaluate_splits(recognizer: Recognizer, data_root: Path, splits, specs, batch_size: int = 32,
                    limit: int = 0, markup: str = "") -> dict:
    """Each split scored against its references as the recognizer's LabelSpec prepares them."""
    results = {}
    for split in splits:
        data = load_split_data(Path(data_root) / split, recognizer.targets, recognizer.cfg.max_len,
                               labels=recognizer.labels, keep_all=True)
        if limit:
            data.rows, data.labels = data.rows[:limit], data.labels[:limit]
            data.targets = {k: v[:limit] for k, v in data.targets.items()}
        dataset = ShardDataset(data, recognizer.render.size)
        res = evaluate(recognizer, dataset, data.labels, sample_ids(data), specs, batch_size, markup)
        res["unencodable_references"] = dict(data.skipped)
        results[split] = res
    return results


def worst(predictions: list[dict], n: int) -> list[dict]:
    """The n predictions furthest from their reference (token edit distance), first decoder and seed."""
    first = predictions[0]["decoder"], predictions[0]["seed"]
    rows = [p for p in predictions if (p["decoder"], p["seed"]) == first]
    for p in rows:
        p["distance"] = token_distance(p["ref"], p["hyp"])
    return sorted(rows, key=lambda p: -p["distance"])[:n]


def format_table(split: str, metrics: dict) -> str:
    lines = [f"{split}: {next(iter(metrics.values()))['n']:.0f} samples",
             f"  {'decoder':<18} {'ExpRate':>8} {'±seeds':>7} {'<=1':>7} {'<=2':>7} {'CER':>7} {'SymER':>7}"
             f" {'StrER':>7} {'ExpCanon':>8} {'RawInv':>7} {'ms/img':>7}"]
    for name, m in metrics.items():
        spread = f"{100 * m['em_std']:.2f}" if "em_std" in m else "-"
        lines.append(f"  {name:<18} {100 * m['em']:>8.2f} {spread:>7} {100 * m['exprate_le1']:>7.2f}"
                     f" {100 * m['exprate_le2']:>7.2f} {100 * m['cer']:>7.2f} {100 * m['symbol_error_rate']:>7.2f}"
                     f" {100 * m['structure_error_rate']:>7.2f} {100 * m.get('em_canonical', m['em']):>8.2f}"
                     f" {100 * m.get('raw_invalid_rate', 0):>7.2f} {m['ms_per_image']:>7.1f}")
    for name, m in metrics.items():
        if "markup_bleu4" in m:
            image = (f" ImageEM {100 * m['markup_image_exact_match']:.2f} (of {m['markup_image_scored']:.0f} drawable)"
                     if "markup_image_exact_match" in m else "")
            lines.append(f"  {name:<18} BLEU-4 {100 * m['markup_bleu4']:.2f} EditScore {100 * m['markup_edit_score']:.2f}"
                         f" ExactMatch {100 * m['markup_exact_match']:.2f}{image}")
    return "\n".join(lines)


def _positive_ints(text: str, what: str) -> list[int]:
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{what} must be integers >= 1, got {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m train.eval", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=None,
                    help=f"checkpoint written by train.run, an export folder or a shipped model's name ({help_line('read')})")
    ap.add_argument("--data", required=True, help="shard root (datasets_prep.inkml --out)")
    ap.add_argument("--splits", default=None, help="comma-separated splits (default: the run's eval splits)")
    ap.add_argument("--T", default=[1, 10, 50], type=lambda t: _positive_ints(t, "--T"),
                    help="diffusion steps to evaluate, comma-separated (default: 1,10,50)")
    ap.add_argument("--samplers", default="remask,mask-predict",
                    help="comma-separated: remask, remask-keep, mask-predict (default: %(default)s)")
    ap.add_argument("--no-repair", action="store_true",
                    help="score the raw argmax outputs (default: outputs that do not parse are repaired)")
    ap.add_argument("--seeds", type=lambda t: _positive_ints(t, "--seeds")[0], default=3,
                    help="sampler seeds for the random re-mask decoder (default: 3)")
    ap.add_argument("--beams", default=[1], type=lambda t: _positive_ints(t, "--beams"),
                    help="autoregressive recognizers: beam widths (1 = greedy)")
    ap.add_argument("--l2r-beam", action="store_true",
                    help="also score each beam > 1 left to right only (beamN-l2r): a bidirectional reader's "
                         "reranking off, to measure what it gives")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N samples of each split")
    ap.add_argument("--batch-size", type=lambda t: _positive_ints(t, "--batch-size")[0], default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    add_compile_arg(ap, "; ms/img then includes the compilation: time a long split")
    add_threads_arg(ap)
    ap.add_argument("--no-ema", action="store_true", help="use the raw weights even when the run kept an EMA")
    ap.add_argument("--json", default=None, help="write the full report (metrics and every prediction) to this file")
    ap.add_argument("--markup", choices=["text", "images"], default=None,
                    help="also the image-to-markup metrics (im2markup's BLEU-4, edit score, exact match); "
                         "images: and exact match of the rendered formulas, drawn by the project's print renderer")
    ap.add_argument("--errors", type=int, default=0, metavar="N",
                    help="print the N worst samples per split (sample id, reference, prediction)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    apply_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    if args.json and (Path(args.json).is_dir() or not Path(args.json).parent.resolve().is_dir()):
        ap.error(f"--json {args.json}: must be a file in an existing folder")
    try:
        loaded = load(args.ckpt, args.device, use_ema=not args.no_ema)
        rec = loaded.recognizer
        compile_if_asked(ap, args, rec)
        samplers = [s for s in args.samplers.split(",") if s]
        bad = [s for s in samplers if s not in rec.step_samplers] if rec.step_samplers else []
        if bad:
            ap.error(f"--samplers {','.join(bad)}: {rec.kind} decodes with {', '.join(rec.samplers)}")
        splits = args.splits.split(",") if args.splits else list(stored_eval_splits(loaded.state["train_config"]))
        for split in splits:
            plain_name(split)  # `../x` would read a split outside --data
        specs = default_specs(rec, args.T, samplers, args.seeds, args.beams, valid=not args.no_repair)
        if args.l2r_beam:
            specs += [replace(s, bidirectional=False) for s in specs if s.sampler == "beam" and s.beam > 1]
        results = evaluate_splits(rec, Path(args.data), splits, specs, args.batch_size, args.limit, args.markup or "")
    except (CheckpointError, ShardError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for split, res in results.items():
        print(format_table(split, res["metrics"]))
        if res["unencodable_references"]:
            print(f"  references the model cannot produce (scored as given): {res['unencodable_references']}")
        for p in worst(res["predictions"], args.errors) if args.errors else []:
            print(f"  {p['sample_id']}  distance {p['distance']}\n    ref {p['ref']}\n    hyp {p['hyp']}")
    if args.json:
        try:
            Path(args.json).write_text(json.dumps({"ckpt": str(loaded.path), "step": loaded.step, "results": results},
                                                  indent=1))
        except OSError as exc:
            print(f"error: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
