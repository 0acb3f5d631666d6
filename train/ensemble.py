"""Join trained recognizers into one reader: an ensemble file (model/ensemble_spec.py) that `--ckpt`
takes wherever a checkpoint goes (eval, predict, serve, export_onnx, ship).

    python -m train.ensemble runs/ar-seed0 runs/ar-seed1 runs/posformer --out runs/ensemble.json
    python -m train.ensemble runs/gryphone-a runs/gryphone-b --out runs/gryphone-ens.json --sampler mask-predict
    python -m train.eval --ckpt runs/ensemble.json --data shards/crohme-96x384 --splits valid

Token recognizers (the AR baseline, PosFormer, HVT, mixed as you like): at every step the members'
log-probabilities of the next token are averaged, and greedy and beam search run on that average.
GryphOne models: at every refinement step the members' log-probabilities of each position's symbol
and modifier are averaged, and the samplers (remask, remask-keep, mask-predict) run on that average.
The two sorts do not mix. Members are checkpoints, run folders or train.export_onnx folders (one
sort), sharing one vocabulary and one canvas (trained on the same shards); they must sit inside the
ensemble file's folder, which it names them relative to. --digests records each member checkpoint's
SHA-256, checked on every load.

Exit status: 0 written; 1 a member cannot join (the file is not kept); 2 bad command line.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from model import CheckpointError, load
from model.ensemble_spec import MAX_T, SAT_SAMPLERS, TOKEN_SAMPLERS, write_ensemble
from model.load import run_checkpoint
from model.spec_files import sha256_file


def relative_members(members: list[Path], out: Path) -> list[str]:
    """Each member as a path relative to `out`'s folder; ValueError for one outside it."""
    folder = out.resolve().parent
    names = []
    for m in members:
        m = run_checkpoint(m)
        where = m.resolve()
        if not where.is_relative_to(folder):
            raise ValueError(f"{m}: outside {folder}, the folder of --out (an ensemble names its members "
                             "relative to itself: write it in a folder above them)")
        names.append(where.relative_to(folder).as_posix())
    return names


def _digest(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.ensemble", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("members", nargs="+", type=Path, help="checkpoints, run folders or export folders")
    ap.add_argument("--out", required=True, type=Path, help="the ensemble file to write (.json)")
    ap.add_argument("--sampler", choices=TOKEN_SAMPLERS + SAT_SAMPLERS, default=None,
                    help="its default decoder (default: greedy for token recognizers, mask-predict for GryphOne)")
    ap.add_argument("--beam", type=int, default=5, help="the beam width with --sampler beam (default: %(default)s)")
    ap.add_argument("--T", type=int, default=10, help="GryphOne's refinement steps (default: %(default)s)")
    ap.add_argument("--digests", action="store_true", help="record each member checkpoint's SHA-256")
    args = ap.parse_args(argv)
    if args.out.suffix != ".json":
        ap.error(f"--out {args.out}: an ensemble file ends in .json")
    if not 1 <= args.beam <= 64:
        ap.error("--beam must be 1..64")
    if not 1 <= args.T <= MAX_T:
        ap.error(f"--T must be 1..{MAX_T}")
    missing = [str(m) for m in args.members if not m.exists()]
    if missing:
        ap.error(f"no such member: {', '.join(missing)}")
    tmp = args.out.with_name(f".{args.out.stem}.{os.getpid()}.tmp.json")  # beside it: the same relative names
    try:
        names = relative_members(args.members, args.out)
        digests = [_digest(run_checkpoint(m)) if args.digests else None for m in args.members]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        sampler = args.sampler or ("mask-predict" if load(args.members[0]).recognizer.step_samplers else "greedy")
        write_ensemble(tmp, names, sampler, args.beam if sampler == "beam" else 1, digests, T=args.T)
        loaded = load(tmp)   # the members join, or the reason they do not
        tmp.replace(args.out)
    except (CheckpointError, ValueError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        print(f"error: {str(exc).replace(str(tmp), str(args.out))}", file=sys.stderr)
        return 1
    kinds = ", ".join(loaded.recognizer.cfg.member_kinds)
    print(f"wrote {args.out}: {len(names)} members ({kinds}), {sampler}; "
          f"read it with: python -m train.predict --ckpt {args.out} FILE...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
