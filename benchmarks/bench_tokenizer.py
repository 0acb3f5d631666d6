"""Throughput of the full corpus check vs a bare regex tokenization of the same lines, in one run.

    python benchmarks/bench_tokenizer.py [FILES...] [--rounds 15] [--stages] [--against REV]

Defaults to every corpus in ../shared/data/latex. The lines are cut into the units the CLI checks at
once (per file, blocks of BLOCK_LINES lines: add_many's unit, so repeats are found as the CLI finds
them). Every round times each function on each unit in turn, alternating the order between rounds, and
each function's figure is the sum over units of its best CPU time on that unit: load on this shared
machine comes in bursts of seconds, so interleaving at the unit level and taking minima per unit
keeps it out of the comparison far better than timing whole passes. Fast functions are repeated
within a sample so that every sample lasts about as long (see interleaved_minima). The per-round
ratios are printed too, to show the spread. --against REV adds the full check of the tokenizer package
as it was at git revision REV, timed the same way in the same run (a speed-up as a ratio).
"""
from __future__ import annotations

import argparse
import importlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokenizer.check import BLOCK_LINES, CorpusCheck  # noqa: E402
from tokenizer.corpus import Line, read_corpus  # noqa: E402
from tokenizer.lexer import tokenize  # noqa: E402
from tokenizer.verdict import label_verdict  # noqa: E402

BARE = re.compile(r"\\[a-zA-Z]+|\\.|\S")
"""A bare regex tokenizer: control words, control symbols, single characters."""


def load_units(paths: list[Path]) -> list[list[Line]]:
    """The lines of each file, in blocks of BLOCK_LINES (what check_sources hands add_many)."""
    units: list[list[Line]] = []
    for p in paths:
        with open(p, "rb") as f:
            lines = [r for r in read_corpus(f, str(p)) if isinstance(r, Line)]
        units += [lines[i:i + BLOCK_LINES] for i in range(0, len(lines), BLOCK_LINES)]
    return units


def tokenizer_at(rev: str, into: Path):
    """The package tokenizer/ as it was at git revision rev, importable as `tokenizer_at_rev`."""
    pkg = into / "tokenizer_at_rev"
    pkg.mkdir()
    names = subprocess.run(["git", "ls-tree", "--name-only", rev, "tokenizer/"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        (pkg / Path(name).name).write_bytes(
            subprocess.run(["git", "show", f"{rev}:{name}"], cwd=REPO, check=True, capture_output=True).stdout)
    sys.path.insert(0, str(into))
    return importlib.import_module("tokenizer_at_rev.check")


def interleaved_minima(rounds: int, fns: dict, units: list) -> tuple[dict, list[dict]]:
    """Per function: the sum over units of its best CPU time there (per call); and each round's totals.

    Each sample of a function on a unit repeats it until the sample is about as long as the slowest
    function's sample there (the repeats are fixed by a first, untimed round): a burst of load is then
    as likely to spoil a sample of the fast bare regex as one of the full check, so their minima are
    comparable. Without it the minimum of the short samples is the luckier one, biased for the bare side.
    """
    repeats: list[dict] = []
    for unit in units:
        took = {}
        for name, fn in fns.items():
            t0 = time.process_time()
            fn(unit)
            took[name] = max(time.process_time() - t0, 1e-6)
        slowest = max(took.values())
        repeats.append({name: max(1, round(slowest / t)) for name, t in took.items()})
    best = {name: [float("inf")] * len(units) for name in fns}
    per_round = []
    for r in range(rounds):
        order = list(fns.items()) if r % 2 == 0 else list(reversed(fns.items()))
        totals = dict.fromkeys(fns, 0.0)
        for j, unit in enumerate(units):
            for name, fn in order:
                k = repeats[j][name]
                t0 = time.process_time()
                for _ in range(k):
                    fn(unit)
                dt = (time.process_time() - t0) / k
                totals[name] += dt
                best[name][j] = min(best[name][j], dt)
        per_round.append(totals)
    return {name: sum(b) for name, b in best.items()}, per_round


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--stages", action="store_true", help="also time each stage of the per-line check")
    ap.add_argument("--against", metavar="REV", help="also time the full check of tokenizer/ at git revision REV")
    args = ap.parse_args()
    files = args.files or sorted((REPO / ".." / "shared" / "data" / "latex").resolve().glob("*"))
    if not files:
        print("no corpus files given and ../shared/data/latex is absent", file=sys.stderr)
        return 2
    units = [(unit, [ln.latex for ln in unit]) for unit in load_units(files)]
    n = sum(len(u) for u, _ in units)
    findall = BARE.findall

    def bare(unit):
        for s in unit[1]:
            findall(s)

    def lex(unit):
        for s in unit[1]:
            try:
                tokenize(s)
            except ValueError:
                pass

    def verdict(unit):
        for s in unit[1]:
            label_verdict(s)

    def per_line(unit):  # CorpusCheck.add on every line: the reference path
        c = CorpusCheck()
        for ln in unit[0]:
            c.add(ln)

    def full(unit):  # what `python -m tokenizer.check` does with each block
        CorpusCheck().add_many(unit[0])

    fns = {"bare": bare, "lex": lex, "verdict": verdict, "per_line": per_line, "full": full}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            old = tokenizer_at(args.against, Path(tmp))
            old_units = {id(u): [old.Line(ln.source, ln.lineno, ln.name, ln.latex, ln.continuation) for ln in u]
                         for u, _ in units}
            fns["against"] = lambda unit: old.CorpusCheck().add_many(old_units[id(unit[0])])
        t, rounds = interleaved_minima(args.rounds, fns, units)
    rate = {k: n / v for k, v in t.items()}
    print(f"{n} lines from {len(files)} files in {len(units)} blocks; sums of per-block best CPU times over "
          f"{args.rounds} interleaved rounds")
    print(f"bare regex tokenization : {rate['bare']:>10,.0f} lines/s")
    for key, label in (("lex", "tokenize()"), ("verdict", "label_verdict()"), ("per_line", "per-line check (add)")):
        print(f"{label:24s}: {rate[key]:>10,.0f} lines/s  ({rate[key] / rate['bare']:.3f} x bare)")
    print(f"full check              : {rate['full']:>10,.0f} lines/s  ({rate['full'] / rate['bare']:.3f} x bare; "
          f"target >= 0.20)")
    if args.against:
        print(f"full check at {args.against:10s}: {rate['against']:>10,.0f} lines/s  "
              f"({rate['against'] / rate['bare']:.3f} x bare); this tree is {t['against'] / t['full']:.2f}x faster")
    ratios = sorted(r["bare"] / r["full"] for r in rounds)
    print(f"  per-round ratio full/bare: min {ratios[0]:.3f}, median {statistics.median(ratios):.3f}, "
          f"max {ratios[-1]:.3f}")
    if args.stages:
        print_stages([s for _, texts in units for s in texts], args.rounds)
    return 0


def print_stages(texts: list[str], repeat: int) -> None:
    """CPU time of each stage of the per-line check, each over all lines (µs/line)."""
    from tokenizer.grammar import check_valid, validate
    from tokenizer.lexer import detokenize, squeeze_whitespace
    from tokenizer.sat import split_streams

    toks = []
    for s in texts:
        try:
            toks.append(tokenize(s))
        except ValueError:
            pass
    dets = [detokenize(t) for t in toks]

    def over(fn, data):
        def run():
            for x in data:
                try:
                    fn(x)
                except ValueError:
                    pass
        return run

    stages = {
        "bare regex": over(BARE.findall, texts), "tokenize": over(tokenize, texts),
        "detokenize": over(detokenize, toks), "re-lex detokenized": over(tokenize, dets),
        "squeeze original": over(squeeze_whitespace, texts), "squeeze detokenized": over(squeeze_whitespace, dets),
        "check_valid": over(check_valid, toks), "validate (parser)": over(validate, toks),
        "SAT split": over(split_streams, toks),
    }
    t, _ = interleaved_minima(repeat, {name: (lambda _unit, run=run: run()) for name, run in stages.items()}, [None])
    for name, seconds in t.items():
        print(f"  stage {name:22s}: {seconds / len(texts) * 1e6:6.2f} us/line")


if __name__ == "__main__":
    sys.exit(main())
