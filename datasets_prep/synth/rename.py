"""New printed-formula labels from a corpus: each formula's structure kept, its symbols renamed.

`python -m datasets_prep.synth.rename train_main.txt --out renamed.txt --seed 1`

Why: a printed set drawn from a few thousand formulas teaches a decoder those formulas as a language
model learns sentences; more renderings of the same formulas (benchmarks/print_cpu.sh's REPEAT) stop
paying after a few copies. A renamed copy keeps what test formulas share with train (fractions,
scripts, brackets, operators, their nesting and lengths) and changes what the image alone can tell:
which letter, digit or Greek letter sits in each place. Within one formula a renamed symbol is renamed
the same way everywhere (`f(x) = x^2` may become `g(t) = t^2`, never `g(t) = u^2`), so variables still
repeat as they do in real formulas; digits are redrawn one by one. Replacements come from the same
class (lower- or upper-case Latin, digit, lower- or upper-case Greek) among the symbols the input
itself uses, so no symbol outside the corpus's vocabulary appears. Arguments that are not mathematics
(`\\begin{array}{lcr}`'s column spec, `\\hspace{2pt}`, `\\hskip 2 pt`'s unit, colour names, labels) are left alone,
and a formula that uses a command this module cannot vouch for (`\\def`, `\\newcommand`, ...) is left
out. Labels are space-separated tokens (im2markup's spacing), written back the same way.

Exit status: 0 written, 2 usage or input error.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from .labels import read_label_file

GREEK_LOWER = frozenset("\\" + g for g in (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi "
    "rho varrho sigma varsigma tau upsilon phi varphi chi psi omega").split())
GREEK_UPPER = frozenset("\\" + g for g in "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split())
LOWER, UPPER, DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz"), frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), frozenset("0123456789")
CLASSES = {"lower": LOWER, "upper": UPPER, "digit": DIGIT, "greek": GREEK_LOWER, "Greek": GREEK_UPPER}

# a brace group after these is not mathematics (a spec, a length, a name): its tokens are kept
KEEP_GROUP = frozenset({"\\begin", "\\end", "\\hspace", "\\hspace*", "\\vspace", "\\vspace*", "\\rule", "\\raisebox",
                        "\\color", "\\textcolor", "\\colorbox", "\\fontsize", "\\setlength", "\\label", "\\ref",
                        "\\eqref", "\\tag", "\\mathop", "\\kern", "\\mkern", "\\hskip", "\\mskip", "\\vskip",
                        "\\makebox", "\\framebox", "\\parbox", "\\put", "\\multicolumn", "\\cline", "\\arraystretch"})
KEEP_TWO = frozenset({"\\rule", "\\multicolumn", "\\setlength", "\\fontsize"})  # both groups are lengths or specs
BRACELESS_LENGTH = frozenset({"\\hskip", "\\kern", "\\mkern", "\\mskip", "\\vskip", "\\hspace", "\\hspace*",
                              "\\vspace", "\\vspace*", "\\raisebox", "\\rule"})
TABLE_ENVS = frozenset({"array", "tabular", "alignat", "alignedat", "alignat*", "tabular*"})
REFUSED = frozenset({"\\def", "\\newcommand", "\\renewcommand", "\\let", "\\catcode", "\\input", "\\include",
                     "\\url", "\\href", "\\cite", "\\special", "\\write", "\\csname", "\\verb"})
_LENGTH_NUMBER = re.compile(r"^[-+.,0-9]$")


_CLASS_OF = {symbol: name for name, members in CLASSES.items() for symbol in members}


def symbol_class(token: str) -> str | None:
    """The class a token is renamed within, or None for a token kept as it is."""
    return _CLASS_OF.get(token)


def _group_end(tokens: list[str], i: int) -> int:
    """Index after the brace group opening at tokens[i] ('{'), or i when tokens[i] is no brace."""
    if i >= len(tokens) or tokens[i] != "{":
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j] == "{"
        depth -= tokens[j] == "}"
        if depth == 0:
            return j + 1
    return len(tokens)


def _kept_after(tokens: list[str], i: int) -> int:
    """End of the non-mathematical arguments that follow tokens[i] (i + 1 when there are none)."""
    t, j = tokens[i], i + 1
    if t.startswith("\\begin{") and t.endswith("}"):   # im2markup's one-token \begin{array}
        env, end = t[len("\\begin{"):-1], j
    elif t in KEEP_GROUP and j < len(tokens) and tokens[j] == "{":
        end = _group_end(tokens, j)
        env = "".join(tokens[j + 1: end - 1]) if t == "\\begin" else None
        if t in KEEP_TWO:
            end = _group_end(tokens, end)
    elif t in BRACELESS_LENGTH:                        # \hskip -2.5 pt: the number, then the unit's two letters
        end = j
        while end < len(tokens) and _LENGTH_NUMBER.match(tokens[end]):
            end += 1
        return min(len(tokens), end + 2)
    else:
        return j
    return _group_end(tokens, end) if env in TABLE_ENVS else end   # a table's column spec


def kept_positions(tokens: list[str]) -> set[int]:
    """Indices of tokens inside arguments that are not mathematics: never renamed."""
    kept: set[int] = set()
    i = 0
    while i < len(tokens):
        end = _kept_after(tokens, i)
        kept.update(range(i + 1, end))
        i = end
    return kept


def renameable(tokens: list[str]) -> list[tuple[int, str]]:
    """(index, class) of every token that may be renamed: a class member outside kept arguments."""
    kept = kept_positions(tokens)
    return [(i, cls) for i, t in enumerate(tokens) if i not in kept and (cls := symbol_class(t)) is not None]


def rename(label: str, rng: np.random.Generator, prob: float = 0.5,
           pools: dict[str, list[str]] | None = None) -> str | None:
    """One renamed copy of a space-tokenized label, or None when it uses a command listed in REFUSED.

    Each distinct letter or Greek letter is renamed with probability `prob` (the same replacement at
    every occurrence), each digit redrawn with probability `prob`; replacements come from `pools`
    (class -> symbols; default: the whole class)."""
    tokens = label.split()
    if any(t in REFUSED for t in tokens):
        return None
    pools = pools or {name: sorted(members) for name, members in CLASSES.items()}
    mapping: dict[str, str] = {}
    for i, cls in renameable(tokens):
        t = tokens[i]
        if not pools.get(cls):
            continue
        if cls == "digit":
            tokens[i] = str(rng.choice(pools[cls])) if rng.random() < prob else t
        else:
            if t not in mapping:
                mapping[t] = str(rng.choice(pools[cls])) if rng.random() < prob else t
            tokens[i] = mapping[t]
    return " ".join(tokens)


def corpus_pools(labels: list[str]) -> dict[str, list[str]]:
    """Each class's symbols that occur in the labels (outside kept arguments), sorted."""
    seen: dict[str, set[str]] = {name: set() for name in CLASSES}
    for label in labels:
        tokens = label.split()
        for i, cls in renameable(tokens):
            seen[cls].add(tokens[i])
    return {name: sorted(s) for name, s in seen.items()}


def rename_corpus(labels: list[str], seed: int = 0, prob: float = 0.5) -> tuple[list[str], int]:
    """(one renamed copy of each label that can be renamed, in order; how many were left out)."""
    rng = np.random.default_rng(seed)
    pools = corpus_pools(labels)
    renamed = [rename(label, rng, prob, pools) for label in labels]
    out = [r for r in renamed if r is not None]
    return out, len(renamed) - len(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m datasets_prep.synth.rename", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="Exit status: 0 written, 2 usage or input error.")
    p.add_argument("labels", type=Path, help="label file: one space-tokenized formula a line (name<TAB>latex also read)")
    p.add_argument("--out", type=Path, required=True, help="where the renamed labels go (one a line)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same file)")
    p.add_argument("--prob", type=float, default=0.5, help="chance that each symbol is renamed")
    args = p.parse_args(argv)
    if not 0.0 <= args.prob <= 1.0:
        print("error: --prob must be in [0, 1]", file=sys.stderr)
        return 2
    try:
        labels = [label for _, label in read_label_file(args.labels)]
    except ValueError as e:   # names the file (and the line)
        print(f"error: {e}", file=sys.stderr)
        return 2
    out, left_out = rename_corpus(labels, args.seed, args.prob)
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(x + "\n" for x in out), encoding="utf-8")
    except OSError as e:
        print(f"error: {args.out}: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {len(out)} formulas ({left_out} left out for a command listed in REFUSED)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
