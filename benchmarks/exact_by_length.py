"""Exact match by reference length, from `train.eval --json` reports, side by side.

Printed formulas are long (IM2LATEX's test formulas: 56 tokens on average), and one wrong token of
sixty is a miss: the overall exact match hides where a change helps. This buckets every prediction
of one split and decoder by its reference's length in tokens and prints exact match per bucket, one
column per report, as `train.eval --markup` scores it: both sides spaced into their tokens first (a
report's predictions are LaTeX as written, `x^{2}`; its references as the corpus spaces them), then
whitespace tokens equal, and equal with every space removed (`tokenizer.markup_metrics`).

    python benchmarks/exact_by_length.py NAME=eval.json [NAME=eval.json ...] --split test --decoder beam5
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tokenizer.markup_metrics import exact_match  # noqa: E402
from train.eval import spaced  # noqa: E402

EDGES = (20, 40, 60, 80)
T = TypeVar("T")


def bucket(n: int, edges: tuple[int, ...] = EDGES) -> str:
    lo = 0
    for hi in edges:
        if n < hi:
            return f"{lo}-{hi - 1}"
        lo = hi
    return f">={lo}"


def spaced_pairs(report: dict, split: str, decoder: str) -> list[tuple[str, str]]:
    """(reference, prediction) of one split and decoder (first seed), both spaced into tokens as
    `train.eval --markup` scores them."""
    preds = report["results"][split]["predictions"]
    rows = [p for p in preds if p["decoder"] == decoder]
    if not rows:
        have = sorted({p["decoder"] for p in preds})
        raise KeyError(f"no predictions by decoder {decoder!r} in split {split!r} (have {', '.join(have)})")
    first_seed = rows[0]["seed"]
    return [(spaced(p["ref"]), spaced(p["hyp"])) for p in rows if p["seed"] == first_seed]


def by_length(report: dict, split: str, decoder: str, edges: tuple[int, ...] = EDGES) -> dict[str, tuple[int, float, float]]:
    """{bucket: (samples, exact match %, exact match without spaces %)} for one split and decoder (first seed)."""
    return length_table(spaced_pairs(report, split, decoder), edges)


def length_table(pairs: list[tuple[str, str]], edges: tuple[int, ...] = EDGES) -> dict[str, tuple[int, float, float]]:
    """`by_length`'s table from spaced (reference, prediction) pairs."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for ref, hyp in pairs:
        groups.setdefault(bucket(len(ref.split()), edges), []).append((ref, hyp))
    groups["all"] = pairs
    return {name: (len(g), 100 * exact_match([r for r, _ in g], [h for _, h in g]),
                   100 * exact_match([r for r, _ in g], [h for _, h in g], ignore_spaces=True))
            for name, g in groups.items()}


def report_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every report-reading script here takes: NAME=REPORT ..., --split, --decoder."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("reports", nargs="+", metavar="NAME=REPORT", help="a train.eval --json file, named")
    ap.add_argument("--split", default="test")
    ap.add_argument("--decoder", default="greedy", help="the decoder's name in the report (greedy, beam5, ...)")
    return ap


def tables_of(args: argparse.Namespace, table: Callable[[list[tuple[str, str]]], T]) -> dict[str, T] | None:
    """{NAME: table(spaced pairs)} for each NAME=REPORT; None (the cause printed, naming the file) when
    a report cannot be read or lacks the split or decoder."""
    tables = {}
    for item in args.reports:
        name, _, path = item.rpartition("=")
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
            tables[name or path] = table(spaced_pairs(report, args.split, args.decoder))
        except (OSError, ValueError, KeyError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return None
    return tables


def main(argv: list[str] | None = None) -> int:
    args = report_parser(__doc__.split("\n\n")[0]).parse_args(argv)
    tables = tables_of(args, length_table)
    if tables is None:
        return 2
    order = [bucket(lo) for lo in (0, *EDGES)] + ["all"]
    print("| reference tokens | samples | " + " | ".join(f"{n}: exact / no spaces" for n in tables) + " |")
    print("| --- | ---: |" + " ---: |" * len(tables))
    for b in order:
        counts = {t[b][0] for t in tables.values() if b in t}
        if not counts:
            continue
        cells = [f"{t[b][1]:.1f} / {t[b][2]:.1f}" if b in t else "-" for t in tables.values()]
        print(f"| {b} | {max(counts)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
