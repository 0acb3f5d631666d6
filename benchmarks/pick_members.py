"""Pick an ensemble's members on a validation split, the rule the shipped ensembles were chosen by:
score each candidate alone with one decoder, add them in the order of their own scores, score each
prefix of two or more as an ensemble, and keep the best (the smaller on a tie within half a point, since
each member costs one reader's time). The test splits are never read here.

    python benchmarks/pick_members.py runs/a runs/b runs/c --data shards/crohme-96x384 --split valid \\
        --sampler mask-predict --T 10 --out runs/gryphone-ens.json
writes the chosen ensemble file (its members named relative to it: --out sits in a folder above every
candidate; the prefixes it tried are written beside it as NAME-kK.json), prints its path on stdout and
the table it chose from on stderr; --json keeps the table.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from model import DecodeSpec, load
from model.ensemble_spec import SAT_SAMPLERS, TOKEN_SAMPLERS, write_ensemble
from model.load import run_checkpoint
from train.ensemble import relative_members
from train.eval import evaluate_splits

TIE = 0.005


def score(ckpt: Path, data: Path, split: str, spec: DecodeSpec, limit: int) -> float:
    rec = load(ckpt).recognizer
    return evaluate_splits(rec, data, [split], [spec], limit=limit)[split]["metrics"][spec.name]["em"]


def choose(scores: dict[int, float]) -> int:
    """The member count to keep: the best score, the fewest members among those within TIE of it."""
    best = max(scores.values())
    return min(k for k, s in scores.items() if s >= best - TIE)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("candidates", nargs="+", type=Path, help="checkpoints or run folders (two or more)")
    ap.add_argument("--data", required=True, type=Path, help="shard root")
    ap.add_argument("--split", default="valid")
    ap.add_argument("--sampler", choices=TOKEN_SAMPLERS + SAT_SAMPLERS, default="greedy")
    ap.add_argument("--T", type=int, default=10)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--out", required=True, type=Path, help="the chosen ensemble file (.json)")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N samples (smoke runs)")
    ap.add_argument("--json", type=Path, default=None, help="write the table here")
    args = ap.parse_args(argv)
    if len(args.candidates) < 2:
        ap.error("two or more candidates")
    spec = DecodeSpec(args.sampler, T=args.T, beam=args.beam if args.sampler == "beam" else 1)
    alone = {str(c): score(run_checkpoint(c), args.data, args.split, spec, args.limit) for c in args.candidates}
    order = sorted(args.candidates, key=lambda c: -alone[str(c)])   # stable: ties keep the command line's order
    names = relative_members(order, args.out)
    ensembles: dict[int, float] = {1: alone[str(order[0])]}
    for k in range(2, len(order) + 1):
        path = write_ensemble(args.out.with_name(f"{args.out.stem}-k{k}.json"), names[:k], args.sampler,
                              spec.beam, T=args.T)
        ensembles[k] = score(path, args.data, args.split, spec, args.limit)
    k = choose(ensembles)
    write_ensemble(args.out, names[:k], args.sampler, spec.beam, T=args.T)
    table = {"split": args.split, "decoder": spec.name, "alone": alone, "order": names,
             "ensembles": {str(n): s for n, s in ensembles.items()}, "chosen": k}
    for c in order:
        print(f"alone  {alone[str(c)] * 100:6.2f}  {c}", file=sys.stderr)
    for n, s in ensembles.items():
        print(f"first {n}  {s * 100:6.2f}{'  <- chosen' if n == k else ''}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
