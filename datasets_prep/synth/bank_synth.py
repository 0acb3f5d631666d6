"""Write real-hand synthetic inks (`python -m datasets_prep.synth --bank DIR`), with leakage kept visible.

Like batch.generate, ink i depends only on (seed, split, format, i), its label and the bank, through
its own random streams. Labels come from a file (cycled; optionally recombined, see recombine.py),
or from the random grammar of synth/labels.py; a label equal to an --exclude label (a CROHME test
label) is dropped before drawing, counted, and the report says how many. The run's report,
<out>/<split>/synth_report.json, also counts where the glyphs came from: the expression's writer,
another writer, or Hershey (per symbol).
"""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from tokenizer.files import atomic_write

from ..names import plain_name
from .batch import FORMATS, _split_salt, file_text, sample_id, write_inks
from .handwriting import HandBank, synthesize_hand_batch
from .labels import random_label
from .leakage import ExcludeSet
from .recombine import bank_covers, recombine

REDRAWS = 20  # random or recombined labels drawn again when excluded or not covered by the bank
REPORT = "synth_report.json"


class _Labels:
    """Label i of a run, with the exclusions and the bank filter applied and counted."""

    def __init__(self, labels: list[str] | None, exclude: ExcludeSet, keep_excluded: bool, recombine_p: float,
                 covers, seed: int, salt: int, depth: int, length: int):
        self.exclude, self.keep, self.p, self.covers = exclude, keep_excluded, recombine_p, covers
        self.seed, self.salt, self.depth, self.length = seed, salt, depth, length
        self.excluded = 0            # label draws dropped (or, with keep_excluded, kept) as test labels
        self.excluded_labels: Counter = Counter()
        self.uncovered = 0           # labels dropped because the bank lacks one of their symbols
        self.recombined = 0
        self.labels = None
        if labels is not None:
            kept = []
            for lab in labels:
                if lab in exclude:
                    self.excluded += 1
                    self.excluded_labels[lab] += 1
                    if not keep_excluded:
                        continue
                if covers is not None and not covers(lab):
                    self.uncovered += 1
                    continue
                kept.append(lab)
            if not kept:
                raise ValueError("no label left to draw after --exclude and the bank filter "
                                 f"({self.excluded} excluded, {self.uncovered} not covered by the bank)")
            self.labels = kept

    def _ok(self, lab: str) -> bool:
        if lab in self.exclude:
            self.excluded += 1
            self.excluded_labels[lab] += 1
            if not self.keep:
                return False
        if self.covers is not None and not self.covers(lab):
            self.uncovered += 1
            return False
        return True

    def __call__(self, i: int) -> str:
        rng = np.random.default_rng([self.seed, self.salt, i, 2])
        if self.labels is not None:
            if self.p > 0 and rng.random() < self.p:
                for _ in range(REDRAWS):
                    a, b = rng.integers(len(self.labels), size=2)
                    lab = recombine(self.labels[a], self.labels[b], rng)
                    if lab is not None and self._ok(lab):
                        self.recombined += 1
                        return lab
            return self.labels[i % len(self.labels)]
        lab = random_label(rng, depth=self.depth, length=self.length)
        for _ in range(REDRAWS):
            if self._ok(lab):
                return lab
            lab = random_label(rng, depth=self.depth, length=self.length)
        return lab  # pragma: no cover - twenty excluded random labels in a row


def generate_hand(count: int, out: Path, bank: Path | HandBank, *, labels: list[str] | None = None, seed: int = 0,
                  fmt: str = "mathwriting", split: str = "train", exclude: ExcludeSet | None = None,
                  keep_excluded: bool = False, recombine_p: float = 0.0, bank_only: bool = False,
                  depth: int = 2, length: int = 8, progress: bool = False) -> dict:
    """Write `count` real-hand inks to out/<split>/ (count <= 0 with labels: one per label); returns
    the report (also written to out/<split>/synth_report.json). Raises ValueError on bad arguments,
    bank.BankError on a bad bank."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if labels is not None and not labels:
        raise ValueError("labels is an empty list")
    if not 0.0 <= recombine_p <= 1.0:
        raise ValueError("recombine probability must be in [0, 1]")
    plain_name(split)
    t0 = time.perf_counter()
    hb = bank if isinstance(bank, HandBank) else HandBank.load(Path(bank))
    exclude = exclude or ExcludeSet()
    symbols = set(hb.by_symbol)
    covers = (lambda lab: bank_covers(lab, symbols)) if bank_only else None
    salt = _split_salt(split)
    pick = _Labels(labels, exclude, keep_excluded, recombine_p, covers, seed, salt, depth, length)
    if labels is not None and count <= 0:
        count = len(pick.labels)
    if count < 0:
        raise ValueError("count must be >= 0")
    folder = Path(out) / split
    folder.mkdir(parents=True, exist_ok=True)
    glyphs: Counter = Counter()
    hershey: Counter = Counter()
    writers: set[str] = set()

    def chunk(idx: range) -> tuple[list[str], list]:
        return [pick(i) for i in idx], [np.random.default_rng([seed, salt, i, 0]) for i in idx]

    def file(i: int, latex: str, ink) -> tuple[str, str]:
        ann = ink.annotations
        same, other, hers = (int(v) for v in ann["bankGlyphs"].split())
        glyphs.update(writer=same, other_writer=other, hershey=hers)
        hershey.update(ann["hersheySymbols"].split())
        writers.add(ann["writer"])
        sid = sample_id(seed, split, f"bank-{fmt}", i)
        return f"{sid}.inkml", file_text(ink, fmt, sid, split, None if labels is not None else "synthetic",
                                         ui_prefix="bank", writer=f"bank:{ann['writer']}")

    written, nbytes, skipped = write_inks(count, folder, chunk, lambda labs, rngs: synthesize_hand_batch(labs, rngs, hb),
                                          file, f"real-hand {fmt}/{split}" if progress else None)
    seconds = time.perf_counter() - t0
    total_glyphs = sum(glyphs.values())
    report = {
        "written": written, "skipped": skipped, "out": str(folder), "split": split, "format": fmt, "seed": seed,
        "bytes": nbytes, "bank": str(bank) if not isinstance(bank, HandBank) else None,
        "excluded": pick.excluded, "excluded_distinct": len(pick.excluded_labels),
        "excluded_kept": keep_excluded, "exclude_files": exclude.sources, "exclude_labels": len(exclude),
        "not_covered_by_bank": pick.uncovered, "recombined": pick.recombined,
        "glyphs": dict(glyphs), "bank_glyph_share": round((glyphs["writer"] + glyphs["other_writer"])
                                                          / total_glyphs, 4) if total_glyphs else None,
        "hershey_symbols": dict(hershey.most_common()), "writers_used": len(writers),
        "seconds": round(seconds, 2), "inks_per_s": round(written / seconds, 1) if seconds > 0 else None,
    }
    atomic_write(folder / REPORT, json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    skipped_path = folder / "synth_skipped.jsonl"
    if skipped:
        atomic_write(skipped_path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in skipped))
    elif skipped_path.exists():
        skipped_path.unlink()
    return report


def print_report(rep: dict, out) -> None:
    """The real-hand part of the CLI's summary."""
    g = rep["glyphs"]
    print(f"glyphs: {g.get('writer', 0):,} from the expression's writer, {g.get('other_writer', 0):,} from "
          f"another writer, {g.get('hershey', 0):,} Hershey fallbacks; {rep['writers_used']} writers; "
          f"{rep['inks_per_s']} inks/s", file=out)
    if rep["hershey_symbols"]:
        top = ", ".join(f"{k} {v}" for k, v in list(rep["hershey_symbols"].items())[:10])
        print(f"  Hershey fallbacks by symbol: {top}", file=out)
    verb = "kept (--keep-excluded)" if rep["excluded_kept"] else "excluded"
    print(f"test-label leakage: {rep['excluded']} label draw(s) equal to one of {rep['exclude_labels']} "
          f"--exclude labels {verb} ({rep['excluded_distinct']} distinct)", file=out)
    if rep["not_covered_by_bank"]:
        print(f"  {rep['not_covered_by_bank']} label(s) left out: a symbol the bank lacks", file=out)


def run_cli(args, labels: list[str] | None, count: int, report) -> int:
    """`python -m datasets_prep.synth --bank/--exclude ...` (the rest of the options as synth's CLI)."""
    import sys

    from .bank_store import BankError

    try:
        exclude = ExcludeSet.from_files(args.exclude)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.bank is None:  # Hershey glyphs, with the test labels taken out of a label file
        if labels is None:
            print("error: --exclude without --bank needs --labels (random labels are checked only with --bank)",
                  file=sys.stderr)
            return 2
        from .batch import generate
        kept = [lab for lab in labels if lab not in exclude]
        if not kept:
            print(f"error: every label of {args.labels} is an --exclude label", file=sys.stderr)
            return 2
        summary = generate(count if args.count is not None else len(kept), args.out, labels=kept, seed=args.seed,
                           fmt=args.format, split=args.split or "train", progress=not args.quiet)
        summary["excluded"] = len(labels) - len(kept)
        print(f"test-label leakage: {summary['excluded']} label(s) equal to an --exclude label left out",
              file=sys.stderr if args.json else sys.stdout)
        return report(summary, args.json)
    try:
        summary = generate_hand(count, args.out, args.bank, labels=labels, seed=args.seed, fmt=args.format,
                                split=args.split or "train", exclude=exclude, keep_excluded=args.keep_excluded,
                                recombine_p=args.recombine, bank_only=args.bank_symbols_only, depth=args.depth,
                                length=args.length, progress=not args.quiet)
    except (ValueError, OSError) as e:  # BankError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    code = report(summary, args.json)
    if not args.json:
        print_report(summary, sys.stdout)
    return code

