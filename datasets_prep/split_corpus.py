"""`python -m datasets_prep.split_corpus`: cut a LaTeX corpus into train/valid/test by formula, leak-free.

    python -m datasets_prep.split_corpus corpus.txt --out splits/ --valid 0.05 --test 0.05
    python -m datasets_prep.split_corpus im2latex.txt --extra captions.txt hme.tsv --out splits/

Why by formula: a printed (or synthesized) set drawn from one corpus has one image per formula, so a
random split of the images leaks whenever a formula occurs twice, or in two spellings (`x^2`,
`x ^ { 2 }`). Here every line goes to the split chosen by a hash of its formula's normalized form
(`tokenizer.normalize`; the whitespace-collapsed line where normalize refuses it), so all spellings of
one formula land together, and `python -m tokenizer.check valid.txt test.txt --against train.txt`
(which matches exactly and after the same normalization) finds no overlap. The hash is seeded and
independent of line order: the same corpus gives the same split on any machine, and a line added
later does not move the others. `--extra` corpora join train only (valid and test stay the main
corpus's distribution), less every line whose formula is in valid or test. Writes `<out>/{train,valid,test}.txt` (the formulas, corpus order
kept within each split, `name<TAB>` prefixes dropped) and `<out>/train_main.txt` (train's lines from the
main corpus alone, the first lines of train.txt: what a run draws again to see more formulas like valid
and test's, benchmarks/print_cpu.sh's REPEAT), and prints the counts.

Exit status: 0 written, 2 usage or input error.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

SPLITS = ("train", "valid", "test")


def formula_key(latex: str) -> str:
    """What two lines must share to count as one formula: the normalized form (else the collapsed line)."""
    from tokenizer import LatexError, normalize

    text = " ".join(latex.split())
    try:
        return normalize(text)
    except LatexError:
        return text


def assign(key: str, valid: float, test: float, seed: int = 0) -> str:
    """The split of a formula key: a seeded hash mapped to [0, 1), test first, then valid."""
    h = hashlib.blake2b(f"{seed}\0{key}".encode(), digest_size=8).digest()
    u = int.from_bytes(h, "big") / 2**64
    return "test" if u < test else "valid" if u < test + valid else "train"


def split_labels(labels: Iterable[str], valid: float = 0.05, test: float = 0.05, seed: int = 0) -> dict[str, list[str]]:
    """Labels -> {split: labels in input order}; blank labels are left out."""
    if not (0 <= valid and 0 <= test and valid + test < 1):
        raise ValueError("--valid and --test must be >= 0 and sum to less than 1")
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for latex in labels:
        if latex.strip():
            out[assign(formula_key(latex), valid, test, seed)].append(" ".join(latex.split()))
    return out


def add_extra(splits: dict[str, list[str]], extra: Iterable[str]) -> int:
    """Append extra labels to splits["train"], less those whose formula is in valid or test; returns
    how many were left out for that."""
    held = {formula_key(x) for s in SPLITS[1:] for x in splits[s]}
    dropped = 0
    for latex in extra:
        if not latex.strip():
            continue
        line = " ".join(latex.split())
        if formula_key(line) in held:
            dropped += 1
        else:
            splits["train"].append(line)
    return dropped


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m datasets_prep.split_corpus", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="Exit status: 0 written, 2 usage or input error.")
    p.add_argument("corpus", type=Path, help="one formula a line, or name<TAB>latex")
    p.add_argument("--out", type=Path, required=True, help="folder for train.txt, valid.txt, test.txt")
    p.add_argument("--valid", type=float, default=0.05, help="share of distinct formulas for valid")
    p.add_argument("--test", type=float, default=0.05, help="share of distinct formulas for test")
    p.add_argument("--seed", type=int, default=0, help="hash seed: another seed, another split")
    p.add_argument("--extra", type=Path, nargs="+", default=[], metavar="CORPUS",
                   help="more corpora for train only, less any formula of valid or test")
    args = p.parse_args(argv)
    from tokenizer.files import atomic_write

    from .synth.labels import read_label_file

    try:
        labels = [lab for _, lab in read_label_file(args.corpus)]
        splits = split_labels(labels, args.valid, args.test, args.seed)
        extra = [lab for path in args.extra for _, lab in read_label_file(path)]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not labels:
        print(f"error: {args.corpus}: no formulas in the file", file=sys.stderr)
        return 2
    distinct = Counter(assign(formula_key(x), args.valid, args.test, args.seed) for x in set(labels))
    main_train = list(splits["train"])
    dropped = add_extra(splits, extra)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, lines in [*splits.items(), ("train_main", main_train)]:
        atomic_write(args.out / f"{name}.txt", "".join(f"{x}\n" for x in lines))
    print(f"{args.corpus}: {len(labels)} formulas -> " + ", ".join(
        f"{s} {len(splits[s])} ({distinct[s]} distinct lines)" for s in SPLITS) + f" in {args.out}")
    if args.extra:
        print(f"--extra: {len(extra) - dropped} formulas joined train, {dropped} left out as formulas of valid or test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
