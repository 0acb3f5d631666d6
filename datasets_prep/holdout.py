"""Cut a validation split from a training split by writer, beside it in the same shard folder.

    python -m datasets_prep.holdout shards/crohme-96x384 --from train --fit fit --valid valid --fraction 0.06

Why: recipes, checkpoints and decoders must be chosen on data the test splits never see, and a
validation split that shares writers with training flatters a model (it has learned their hands).
The writer of a row comes from its InkML annotations (`writer`), else from its file name with the
trailing number dropped (MathBrush's `2009210-947-12` -> `2009210-947`), namespaced by its folder
(`synth.bank_build.writer_of`). Whole writers are drawn at random (seeded) until the validation
split holds `fraction` of the rows. The source split stays as it was; `fit` and `valid` are new
splits, and `holdout.json` records the writers of each so the glyph bank can leave the validation
writers out (train/synth_data.py).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .names import plain_name
from .shards import DICT_FILE, ShardError, load_split, split_names, write_dataset_dict, write_json, write_split
from .synth.bank_build import writer_of

HOLDOUT_FILE = "holdout.json"


def row_writers(table: pa.Table) -> list[str]:
    """The writer of every row (see the module docstring)."""
    out = []
    for ann, path in zip(table.column("annotations").to_pylist(), table.column("path").to_pylist()):
        try:
            parsed = json.loads(ann) if ann else {}
        except ValueError:
            parsed = {}
        parsed = {k: v for k, v in parsed.items() if isinstance(v, str)} if isinstance(parsed, dict) else {}
        out.append(writer_of(parsed, path or ""))
    return out


def choose_writers(writers: list[str], fraction: float, seed: int) -> set[str]:
    """Whole writers, drawn in a seeded order, until their rows reach `fraction` of all rows."""
    counts: dict[str, int] = defaultdict(int)
    for w in writers:
        counts[w] += 1
    order = sorted(counts)
    random.Random(seed).shuffle(order)
    want, got, chosen = fraction * len(writers), 0, set()
    for w in order:
        if got >= want:
            break
        chosen.add(w)
        got += counts[w]
    return chosen


def holdout(root: Path, source: str = "train", fit: str = "fit", valid: str = "valid",
            fraction: float = 0.06, seed: int = 0) -> dict:
    """Write `fit` and `valid` beside `source` under `root`; returns (and writes) holdout.json."""
    for name in (source, fit, valid):
        plain_name(name)
    if len({source, fit, valid}) != 3:
        raise ValueError(f"--from, --fit and --valid must be three different names ({source}, {fit}, {valid})")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"--fraction must lie in (0, 1), not {fraction}")
    table = load_split(root / source)
    writers = row_writers(table)
    chosen = choose_writers(writers, fraction, seed)
    mask = pa.array([w in chosen for w in writers])
    parts = {fit: table.filter(pc.invert(mask)), valid: table.filter(mask)}
    if parts[fit].num_rows == 0 or parts[valid].num_rows == 0:
        raise ValueError(f"{root / source}: {len(set(writers))} writer(s); cannot hold out {fraction:.0%} "
                         "by writer and keep both splits non-empty")
    for name, part in parts.items():
        write_split(root, name, part)
    names = split_names(root) if (root / DICT_FILE).exists() else [source]
    write_dataset_dict(root, [*[n for n in names if n not in (fit, valid)], fit, valid])
    record = {"source": source, "fit": fit, "valid": valid, "fraction": fraction, "seed": seed,
              "rows": {fit: parts[fit].num_rows, valid: parts[valid].num_rows},
              "writers": {fit: len(set(writers) - chosen), valid: len(chosen)},
              "valid_writers": sorted(chosen)}
    write_json(root / HOLDOUT_FILE, record)
    return record


def read_holdout(root: Path) -> dict | None:
    """holdout.json of a shard folder, or None where there is none (or it is unreadable)."""
    try:
        rec = json.loads((Path(root) / HOLDOUT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m datasets_prep.holdout", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="a shard folder (datasets_prep.inkml --out)")
    ap.add_argument("--from", dest="source", default="train", help="the split to cut (default: train; kept as is)")
    ap.add_argument("--fit", default="fit", help="the new training split (default: fit)")
    ap.add_argument("--valid", default="valid", help="the new validation split (default: valid)")
    ap.add_argument("--fraction", type=float, default=0.06, help="share of rows to hold out (default: 0.06)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        rec = holdout(args.data, args.source, args.fit, args.valid, args.fraction, args.seed)
    except (ShardError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.data}/{rec['fit']}: {rec['rows'][rec['fit']]} rows, {rec['writers'][rec['fit']]} writers; "
          f"{args.data}/{rec['valid']}: {rec['rows'][rec['valid']]} rows, {rec['writers'][rec['valid']]} writers "
          f"(none shared; {args.data}/{HOLDOUT_FILE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
