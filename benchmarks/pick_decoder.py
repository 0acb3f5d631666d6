"""Pick the decoder a shipped model reads with, from a `train.eval --json` report on a validation split:
the highest mean ExpRate; among decoders within half a point of it, the deterministic one (mask-predict,
greedy) and then the fewest steps, since a user's answer should not depend on a seed or wait on steps
that buy nothing.

    python benchmarks/pick_decoder.py runs/crohme-ship/eval-valid.json --split valid
prints `SAMPLER T` (for the token recognizers `greedy 1` or `beam WIDTH`) and the table it chose from on
stderr.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

TIE = 0.005


def pick(metrics: dict[str, dict]) -> tuple[str, int]:
    best = max(m["em"] for m in metrics.values())
    close = [name for name, m in metrics.items() if m["em"] >= best - TIE]

    def key(name: str):
        stochastic = name.startswith("remask")
        width = re.search(r"(?:-T|beam)(\d+)$", name)  # refinement steps, or beam width: the cost
        steps = int(width.group(1)) if width else 1
        return (stochastic, steps, -metrics[name]["em"])

    name = min(close, key=key)
    token = re.fullmatch(r"(?:ar-)?(greedy|beam(\d+))", name)  # the token recognizers (`ar-` in reports before 2026-12-05)
    if token:
        return ("greedy", 1) if token.group(1) == "greedy" else ("beam", int(token.group(2)))
    sampler, T = re.fullmatch(r"(.+)-T(\d+)", name).groups()
    return sampler, int(T)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a train.eval --json file")
    ap.add_argument("--split", default="valid")
    args = ap.parse_args(argv)
    metrics = json.load(open(args.report))["results"][args.split]["metrics"]
    for name, m in sorted(metrics.items(), key=lambda kv: -kv[1]["em"]):
        print(f"{name:<20} {100 * m['em']:6.2f}", file=sys.stderr)
    sampler, T = pick(metrics)
    print(sampler, T)
    return 0


if __name__ == "__main__":
    sys.exit(main())
