"""What a device call would send, and whether it fits the device tool's 64 MiB, before the call.

The device tool copies the checkout: its tracked files that are on disk, the untracked files git does
not ignore, and the ignored paths a call names in `carry`; a tree over 64 MiB is refused before any
machine starts (and the start-up minutes still count). The shipped weights alone (`model/weights`,
~94 MB) put a full checkout over that limit, so every prepared device call (benchmarks/gpu_check.sh,
benchmarks/gpu_print.sh) runs from a checkout that keeps them out of the working tree for the call:

    git sparse-checkout set --no-cone '/*' '!/model/weights/'   # the weights leave the working tree
    python benchmarks/device_tree.py --carry .carry              # fits? (exit 0) and what is largest
    ... the device call ...
    git sparse-checkout disable                                  # the weights come back from git

Nothing a device call runs reads the shipped weights: the checks start from random weights, the
training runs from their own data. `--aside PATH` shows the size as if PATH had left already.

    python benchmarks/device_tree.py [--carry PATH ...] [--aside PATH ...] [--limit-mib 64]
Exit 0: it fits; 1: over the limit; 2: not a git checkout, or a carry path that is not there.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path

LIMIT_MIB = 64


def _git_files(root: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", *args], check=True,
                         capture_output=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _inside(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def travel_files(root: Path, carry: list[str] = (), aside: list[str] = ()) -> dict[str, int]:
    """{relative path: bytes} of what a call from `root` would send: tracked files present on disk,
    untracked files git does not ignore, and every file under each `carry` path; none under `aside`."""
    aside = [a.strip("/") for a in aside]
    names = _git_files(root) + _git_files(root, "--others", "--exclude-standard")
    sizes: dict[str, int] = {}
    for name in names:
        path = root / name
        if _inside(name, aside) or path.is_symlink() or not path.is_file():
            continue
        sizes[name] = path.stat().st_size
    for entry in carry:
        base = root / entry
        if not base.exists():
            raise FileNotFoundError(f"carry path {entry!r} is not in {root}")
        for path in [base] if base.is_file() else sorted(base.rglob("*")):
            if path.is_file() and not path.is_symlink():
                sizes[str(path.relative_to(root))] = path.stat().st_size
    return sizes


def largest_folders(sizes: dict[str, int], depth: int = 2, n: int = 8) -> list[tuple[str, int]]:
    """The `n` folders (first `depth` levels of the path) holding the most bytes."""
    folders: Counter = Counter()
    for name, size in sizes.items():
        parts = name.split("/")
        folders["/".join(parts[:min(depth, len(parts) - 1)]) or "."] += size
    return folders.most_common(n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Would a device call from this checkout fit the 64 MiB it may send?")
    ap.add_argument("--root", type=Path, default=Path("."), help="the checkout (default: here)")
    ap.add_argument("--carry", nargs="*", default=[], help="ignored paths the call names in carry")
    ap.add_argument("--aside", nargs="*", default=[], help="paths to count as already out of the tree")
    ap.add_argument("--limit-mib", type=float, default=LIMIT_MIB, help="the tool's limit (default 64)")
    args = ap.parse_args(argv)
    try:
        sizes = travel_files(args.root, args.carry, args.aside)
    except subprocess.CalledProcessError as exc:
        print(f"error: {args.root}: not a git checkout ({exc.stderr.decode().strip()})", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    total, limit = sum(sizes.values()), args.limit_mib * 2 ** 20
    for folder, size in largest_folders(sizes):
        print(f"{size / 2 ** 20:9.1f} MiB  {folder}")
    verdict = "fits" if total <= limit else "is OVER the limit: keep the largest folders out (see --help)"
    print(f"{len(sizes)} files, {total / 2 ** 20:.1f} MiB of {args.limit_mib:g} MiB: the call {verdict}")
    return 0 if total <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
