"""The converter now vs at an earlier revision, side by side on the same files (one worker each).

    python benchmarks/ab_converter.py --old e669a18 [--input ../shared/data/crohme/test2014] [--rounds 3]

Checks out --old into a temporary git worktree, then alternates runs of `convert()` from each tree
(separate processes, so each imports its own code) on the same input, and compares CPU time (user +
sys of the child), which the shared machine's load disturbs less than wall time. A refactor of the
data path must keep the ratio new/old at or above 0.95.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = ("import sys; sys.path.insert(0, {tree!r}); from datasets_prep.inkml import convert; "
        "convert('crohme', [{inp!r}], {out!r}, workers=1, overwrite=True, size=(96, 384))")


def run(tree: Path, inp: str, out: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CODE.format(tree=str(tree), inp=inp, out=out)], check=True, cwd=tree)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="git revision to compare against")
    ap.add_argument("--input", default=str(REPO.parent / "shared/data/crohme/test2014"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.input = str(Path(args.input).resolve())
    n = sum(1 for p in Path(args.input).rglob("*") if p.suffix.lower() == ".inkml")
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.old], check=True,
                       capture_output=True)
        try:
            cpu = {"old": [], "new": []}
            for r in range(args.rounds):
                for name, tree in (("old", old), ("new", REPO)) if r % 2 == 0 else (("new", REPO), ("old", old)):
                    c, w = run(tree, args.input, str(Path(tmp) / f"out-{name}"))
                    cpu[name].append(c)
                    print(f"round {r} {name}: {n / c:.0f} files per CPU-second ({w:.1f} s wall)", file=sys.stderr)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], capture_output=True)
    best = {k: min(v) for k, v in cpu.items()}
    print(f"| tree | files per CPU-second (best of {args.rounds}) |\n| --- | --- |")
    for k in ("old", "new"):
        print(f"| {k} ({args.old if k == 'old' else 'working tree'}) | {n / best[k]:.0f} |")
    print(f"\nnew/old speed ratio: {best['old'] / best['new']:.3f} ({n} files, {args.input})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
