"""A smaller copy of a shard folder: chosen splits, each whole or a seeded random sample of its rows.

    python -m datasets_prep.subset shards/printed-64x512 .carry/printed --split train=13000 \
        --split valid --split test --max-mib 58
    python -m datasets_prep.subset shards/printed-64x512 .carry/printed-4lv --split train \
        --split valid --split test --quantize train --max-mib 58

Why: a GPU lease takes at most 64 MiB of data along (benchmarks/device_tree.py), and a quick
experiment, a laptop or a bug report rarely needs every row. A sampled split keeps its rows in their
original order (the sample is a set of row numbers drawn with `--seed`), the rows are copied as they
are (images, labels, ids and the render spec in the schema's metadata: a model reads the copy
exactly as the original), and `subset.json` records where each split came from and how many rows it
kept. The source is never written to. `--quantize` re-encodes the named splits' images with
`--levels` gray levels (datasets_prep.quantize: 4 levels, about a third of the bytes; train with
`degrade.prob` to draw blur and noise again), and subset.json says which.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

from .names import plain_name
from .quantize import DEFAULT_LEVELS, LEVELS, check_levels, quantize_table
from .shards import ShardError, load_split, split_names, write_dataset_dict, write_json, write_split

SUBSET_FILE = "subset.json"
CARRIED_FILES = ("summary.json", "holdout.json")
"""Folder-level records copied beside the splits (what made the shards; a writer holdout)."""


def parse_split(text: str) -> tuple[str, int | None]:
    """'train=13000' -> ('train', 13000); 'valid' -> ('valid', None: the whole split)."""
    name, _, rows = text.partition("=")
    plain_name(name)
    if not rows:
        return name, None
    try:
        n = int(rows)
    except ValueError:
        raise ValueError(f"--split {text!r}: the row count must be a whole number") from None
    if n < 1:
        raise ValueError(f"--split {text!r}: keep at least one row")
    return name, n


def subset(src: Path, out: Path, splits: list[tuple[str, int | None]], seed: int = 0,
           quantize: tuple[str, ...] = (), levels: int = DEFAULT_LEVELS) -> dict:
    """Write the chosen splits of `src` to the new folder `out`; returns (and writes) subset.json.
    The splits named in `quantize` keep `levels` gray levels in their images."""
    src, out = Path(src), Path(out)
    if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
        raise ValueError(f"{out}: the copy must not be written inside its source {src}")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out}: not empty; name a new folder")
    available = split_names(src)
    for name, _ in splits:
        if name not in available:
            raise ValueError(f"{src}: no split {name!r} (it has {', '.join(available)})")
    if len({name for name, _ in splits}) != len(splits):
        raise ValueError("each split may be named once")
    if quantize:
        check_levels(levels)
    unknown = sorted(set(quantize) - {name for name, _ in splits})
    if unknown:
        raise ValueError(f"--quantize {', '.join(unknown)}: not among the copied splits")
    record = {"source": str(src), "seed": seed, "splits": {}}
    if quantize:
        record["quantized"] = {"splits": sorted(quantize), "levels": levels}
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name, rows in splits:
            table = load_split(src / name)
            total = table.num_rows
            if rows is not None and rows < total:
                rng = np.random.default_rng([seed, len(name), *name.encode()])
                table = table.take(np.sort(rng.choice(total, rows, replace=False)))
            if name in quantize:
                table = quantize_table(table, levels, where=str(src / name))
            write_split(out, name, table)
            record["splits"][name] = {"rows": table.num_rows, "of": total}
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # a corrupt source split: no half-written copy left behind
        raise
    for fname in CARRIED_FILES:
        if (src / fname).is_file():
            shutil.copyfile(src / fname, out / fname)
    write_dataset_dict(out, [name for name, _ in splits])
    write_json(out / SUBSET_FILE, record)
    return record


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m datasets_prep.subset", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path, help="a shard folder (holding dataset_dict.json)")
    ap.add_argument("out", type=Path, help="the new folder (must not exist, or be empty)")
    ap.add_argument("--split", action="append", required=True, metavar="NAME[=ROWS]",
                    help="a split to copy: whole, or ROWS of its rows drawn at random; repeatable")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    ap.add_argument("--quantize", default="", metavar="SPLIT[,SPLIT]",
                    help="re-encode these copied splits' images with --levels gray levels (training splits; "
                         "train with degrade.prob to draw blur and noise again)")
    ap.add_argument("--levels", type=int, default=DEFAULT_LEVELS,
                    help=f"gray levels kept by --quantize: {', '.join(map(str, LEVELS))} (default {DEFAULT_LEVELS})")
    ap.add_argument("--max-mib", type=float, default=None,
                    help="refuse (exit 1, the copy removed) when the copy is larger than this")
    args = ap.parse_args(argv)
    try:
        splits = [parse_split(s) for s in args.split]
        quantize = tuple(s for s in args.quantize.split(",") if s)
        record = subset(args.src, args.out, splits, args.seed, quantize, args.levels)
    except (ShardError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    size = folder_bytes(args.out) / 2 ** 20
    for name, r in record["splits"].items():
        q = record.get("quantized", {})
        grays = f" ({q['levels']} gray levels)" if name in q.get("splits", ()) else ""
        print(f"{args.out}/{name}: {r['rows']} of {r['of']} rows{grays}")
    if args.max_mib is not None and size > args.max_mib:
        shutil.rmtree(args.out)
        print(f"error: the copy is {size:.1f} MiB, over --max-mib {args.max_mib:g}: ask for fewer rows "
              f"(removed {args.out})", file=sys.stderr)
        return 1
    print(f"{args.out}: {size:.1f} MiB ({SUBSET_FILE} records the source and the sample)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
