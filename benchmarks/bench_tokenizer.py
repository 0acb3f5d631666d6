"""Throughput of the full corpus check vs a bare regex tokenization of the same lines, in one run.

    python benchmarks/bench_tokenizer.py [FILES...] [--repeat 5] [--stages]

Defaults to every corpus in ../shared/data/latex. Prints lines/s for both and their ratio; each
figure is the best CPU time of --repeat interleaved rounds (the machine is shared: CPU time, the best
run and interleaving all keep other processes' load out of the comparison).
"""
from __future__ import annotations

import argparse
import re
import sys
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


def load_lines(paths: list[Path]) -> list[Line]:
    lines: list[Line] = []
    for p in paths:
        with open(p, "rb") as f:
            lines.extend(r for r in read_corpus(f, str(p)) if isinstance(r, Line))
    return lines


def best_times(repeat: int, fns: dict) -> dict:
    """Best CPU time (this process) of each function over `repeat` rounds, interleaved so that load on
    a shared machine hits every function alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stages", action="store_true", help="also time each stage of the check on its own")
    args = ap.parse_args()
    files = args.files or sorted((REPO / ".." / "shared" / "data" / "latex").resolve().glob("*"))
    if not files:
        print("no corpus files given and ../shared/data/latex is absent", file=sys.stderr)
        return 2
    lines = load_lines(files)
    texts = [ln.latex for ln in lines]
    n = len(lines)
    findall = BARE.findall

    def bare():
        for s in texts:
            findall(s)

    def lex():
        for s in texts:
            try:
                tokenize(s)
            except ValueError:
                pass

    def verdict():
        for s in texts:
            label_verdict(s)

    def per_line():  # CorpusCheck.add on every line: the reference path
        c = CorpusCheck()
        for ln in lines:
            c.add(ln)

    def full():  # what `python -m tokenizer.check` does: blocks of BLOCK_LINES lines through add_many
        c = CorpusCheck()
        for i in range(0, n, BLOCK_LINES):
            c.add_many(lines[i:i + BLOCK_LINES])

    t = best_times(args.repeat, {"bare": bare, "lex": lex, "verdict": verdict, "per_line": per_line,
                                 "full": full})
    rate = {k: n / v for k, v in t.items()}
    print(f"{n} lines from {len(files)} files, best of {args.repeat} interleaved rounds")
    print(f"bare regex tokenization : {rate['bare']:>10,.0f} lines/s")
    print(f"tokenize()              : {rate['lex']:>10,.0f} lines/s  ({rate['lex'] / rate['bare']:.2f} x bare)")
    print(f"label_verdict()         : {rate['verdict']:>10,.0f} lines/s  ({rate['verdict'] / rate['bare']:.2f} x bare)")
    print(f"per-line check (add)    : {rate['per_line']:>10,.0f} lines/s  ({rate['per_line'] / rate['bare']:.2f} x bare)")
    print(f"full check              : {rate['full']:>10,.0f} lines/s  ({rate['full'] / rate['bare']:.2f} x bare; "
          f"target >= 0.20)")
    if args.stages:
        print_stages(texts, args.repeat)
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
    t = best_times(repeat, stages)
    for name, seconds in t.items():
        print(f"  stage {name:22s}: {seconds / len(texts) * 1e6:6.2f} us/line")


if __name__ == "__main__":
    sys.exit(main())
