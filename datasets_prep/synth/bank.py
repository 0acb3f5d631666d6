"""`python -m datasets_prep.synth.bank`: build a bank of real handwritten symbols from segmented
InkML. The bank's format and loader are in bank_store.py."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .bank_store import ARRAYS, FORMAT, VERSION, Bank, BankError

__all__ = ["ARRAYS", "Bank", "BankError", "FORMAT", "VERSION", "main"]


# ---- the command ---------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m datasets_prep.synth.bank", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build a bank of real handwritten symbols from segmented InkML (CROHME symbol "
                    "traceGroups; MathWriting's symbols.jsonl) for real-hand synthesis.",
        epilog="Exit status: 0 built; 1 built, but some files were skipped (listed in coverage.json); "
               "2 usage or input error, a test split refused, or no symbol found.\n\n"
               "example: python -m datasets_prep.synth.bank --src crohme --input crohme/train --out bank/")
    p.add_argument("--src", choices=("crohme", "mathwriting"), default="crohme",
                   help="crohme: any InkML with symbol traceGroups (every CROHME year); mathwriting: a "
                        "MathWriting root holding symbols.jsonl and train/ (default: %(default)s)")
    p.add_argument("--input", type=Path, nargs="+", required=True, help="folders, archives or files")
    p.add_argument("--out", type=Path, default=Path("bank"), help="bank folder (default: %(default)s)")
    p.add_argument("--allow-test", action="store_true",
                   help="accept inputs that look like a test split (never for a bank you train on)")
    p.add_argument("--limit", type=int, default=None, help="read at most this many files (for trials)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no per-symbol table")
    p.add_argument("--json", action="store_true", help="print the coverage report as JSON")
    return p


def print_report(rep: dict, out=None, table: bool = True) -> None:
    """The coverage report as text (to stdout unless `out`)."""
    out = out or sys.stdout
    print(f"bank: {rep['symbols']} symbols, {rep['samples']:,} samples, {rep['writers']} writers, from "
          f"{rep['files_used']:,} of {rep['files_read']:,} files read in {rep['seconds']:.1f} s", file=out)
    if rep["files_skipped"]:
        kinds = ", ".join(f"{k} {v}" for k, v in rep["files_skipped_by_kind"].items())
        print(f"  skipped {rep['files_skipped']} file(s) that cannot be read ({kinds})", file=out)
    if rep["files_without_segmentation"]:
        print(f"  {rep['files_without_segmentation']} file(s) have no symbol traceGroup", file=out)
    if rep["symbols_dropped"]:
        print(f"  {rep['symbols_dropped']} symbol(s) dropped (missing or shared traces, no truth)", file=out)
    if rep["unmapped"]:
        top = ", ".join(f"{k!r} {v}" for k, v in list(rep["unmapped"].items())[:8])
        print(f"  {sum(rep['unmapped'].values())} symbol(s) with a label that is not one token: {top}", file=out)
    if rep.get("not_drawable"):
        print(f"  {len(rep['not_drawable'])} token(s) the layout engine cannot place: "
              f"{' '.join(rep['not_drawable'][:20])}", file=out)
    if rep.get("crohme_symbols_missing"):
        print(f"  CROHME symbols without samples (drawn with Hershey glyphs): "
              f"{' '.join(rep['crohme_symbols_missing'])}", file=out)
    if table:
        cells = [f"{s} {v['samples']}/{v['writers']}" for s, v in rep["per_symbol"].items()]
        print("  samples/writers per symbol:", file=out)
        for i in range(0, len(cells), 8):
            print("    " + "  ".join(cells[i:i + 8]), file=out)


def main(argv: list[str] | None = None) -> int:
    from .bank_build import build_bank
    from .testsplit import TestSplitError

    args = _parser().parse_args(argv)
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be >= 1", file=sys.stderr)
        return 2
    missing = [str(p) for p in args.input if not p.exists()]
    if missing:
        print(f"error: input not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        bank, rep = build_bank(args.src, args.input, allow_test=args.allow_test, limit=args.limit,
                               progress=not args.quiet)
    except (TestSplitError, BankError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if bank.num_samples == 0:
        print(f"error: no segmented symbol found in {', '.join(map(str, args.input))} "
              f"({rep['files_read']} files read)", file=sys.stderr)
        return 2
    bank.save(args.out)
    rep["seconds"] = round(time.perf_counter() - t0, 2)
    rep["out"] = str(args.out)
    from tokenizer.files import atomic_write
    atomic_write(args.out / "coverage.json", json.dumps(rep, ensure_ascii=False, indent=1) + "\n")
    if args.json:
        print(json.dumps(rep, ensure_ascii=False, indent=1))
    else:
        print_report(rep, table=not args.quiet)
        print(f"wrote {args.out}/glyphs.npz, index.json, coverage.json")
        for line in rep["problems"][:5]:
            print(f"  {line}", file=sys.stderr)
    return 1 if rep["files_skipped"] else 0


if __name__ == "__main__":
    sys.exit(main())

