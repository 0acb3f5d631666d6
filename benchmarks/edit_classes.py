"""Which tokens a reader gets wrong, by kind, from `train.eval --json` reports, side by side.

Exact match on printed formulas is low while BLEU-4 is high: most wrong predictions are a few tokens
off. This aligns every prediction of one split and decoder with its reference (token Levenshtein, both
sides spaced as `train.eval --markup` scores them), files each inserted, deleted or substituted token
under a kind (braces, spacing commands, scripts, delimiters, font commands, accents, letters and
digits, other symbols; a substitution under its reference token's kind) and prints each kind's share
of all edits. It also counts the wrong predictions whose every edit is a brace or a spacing command:
those mostly draw as the reference does (`{ x }` for `x`, a missing `\\,`), though not always
(`x ^ { a } b` against `x ^ { a b }` is braces only), so the count is an upper bound on what a
reader loses to the corpus's unseeable spellings.

    python benchmarks/edit_classes.py NAME=eval.json [NAME=eval.json ...] --split test --decoder beam5
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from exact_by_length import report_parser, tables_of  # noqa: E402

SPACING = {"~", "\\", "\\,", "\\;", "\\:", "\\!", "\\quad", "\\qquad", "\\hspace", "\\hspace*", "\\hfill",
           "\\enspace", "\\thinspace", "\\negthinspace", "\\vspace", "\\kern", "\\hskip", "\\mkern"}
SCRIPTS = {"^", "_", "\\prime", "'", "\\limits", "\\nolimits"}
DELIMITERS = {"(", ")", "[", "]", "|", "\\|", "\\{", "\\}", "\\langle", "\\rangle", "\\lbrack", "\\rbrack",
              "\\vert", "\\Vert", "\\lfloor", "\\rfloor", "\\lceil", "\\rceil", "/", "."}
SIZED = re.compile(r"^\\(left|right|middle|[bB]igg?[lrm]?)(?![A-Za-z])")  # not \leftarrow, \bigcup
FONTS = {"\\cal", "\\bf", "\\rm", "\\it", "\\sf", "\\tt", "\\mathrm", "\\mathbf", "\\mathcal", "\\mathit",
         "\\mathsf", "\\mathtt", "\\mathbb", "\\mathfrak", "\\boldsymbol", "\\bm", "\\operatorname",
         "\\textstyle", "\\displaystyle", "\\scriptstyle", "\\scriptscriptstyle", "\\mbox", "\\text",
         "\\textrm", "\\textbf", "\\textit", "\\large", "\\Large", "\\small", "\\footnotesize"}
ACCENTS = {"\\bar", "\\hat", "\\tilde", "\\dot", "\\ddot", "\\vec", "\\check", "\\breve", "\\acute", "\\grave",
           "\\overline", "\\underline", "\\widetilde", "\\widehat", "\\overrightarrow", "\\overleftarrow"}
KINDS = ("braces", "spacing", "scripts", "delimiters", "fonts", "accents", "letters/digits", "other")
UNSEEN = {"braces", "spacing"}


def kind(token: str) -> str:
    """The kind an edited token is filed under (KINDS)."""
    if token in ("{", "}"):
        return "braces"
    if token in SPACING:
        return "spacing"
    if token in SCRIPTS:
        return "scripts"
    if token in DELIMITERS or SIZED.match(token):
        return "delimiters"
    if token in FONTS:
        return "fonts"
    if token in ACCENTS:
        return "accents"
    if len(token) == 1 and token.isalnum():
        return "letters/digits"
    return "other"


def edits(ref: list[str], hyp: list[str]) -> list[tuple[str, str, str]]:
    """One minimal token alignment's edits: ("sub", ref token, hyp token), ("del", ref token, ""),
    ("ins", "", hyp token). Their count is the Levenshtein distance."""
    n, m = len(ref), len(hyp)
    dist = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        dist[i][0] = i
    for j in range(m + 1):
        dist[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            dist[i][j] = min(dist[i - 1][j] + 1, dist[i][j - 1] + 1, dist[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    out, i, j = [], n, m
    while i or j:
        if i and j and dist[i][j] == dist[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            if ref[i - 1] != hyp[j - 1]:
                out.append(("sub", ref[i - 1], hyp[j - 1]))
            i, j = i - 1, j - 1
        elif i and dist[i][j] == dist[i - 1][j] + 1:
            out.append(("del", ref[i - 1], ""))
            i -= 1
        else:
            out.append(("ins", "", hyp[j - 1]))
            j -= 1
    return out[::-1]


def tally(pairs: list[tuple[str, str]]) -> dict:
    """Edits per kind, predictions exact, and wrong predictions whose every edit is a brace or spacing."""
    per_kind: Counter = Counter()
    exact = unseen_only = 0
    for ref, hyp in pairs:
        ops = edits(ref.split(), hyp.split())
        if not ops:
            exact += 1
            continue
        kinds = [kind(r or h) for _, r, h in ops]
        per_kind.update(kinds)
        unseen_only += all(k in UNSEEN for k in kinds)
    return {"samples": len(pairs), "exact": exact, "braces_spacing_only": unseen_only,
            "edits": sum(per_kind.values()), "per_kind": dict(per_kind)}


def main(argv: list[str] | None = None) -> int:
    args = report_parser(__doc__.split("\n\n")[0]).parse_args(argv)
    tables = tables_of(args, tally)
    if tables is None:
        return 2
    print("| edited token's kind | " + " | ".join(f"{n}: edits (share)" for n in tables) + " |")
    print("| --- |" + " ---: |" * len(tables))
    for k in KINDS:
        cells = [f"{t['per_kind'].get(k, 0)} ({100 * t['per_kind'].get(k, 0) / max(1, t['edits']):.1f}%)"
                 for t in tables.values()]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("| all edits | " + " | ".join(str(t["edits"]) for t in tables.values()) + " |")
    print("| exact predictions | " + " | ".join(f"{t['exact']} of {t['samples']}" for t in tables.values()) + " |")
    print("| wrong only in braces / spacing | "
          + " | ".join(f"{t['braces_spacing_only']} ({100 * t['braces_spacing_only'] / max(1, t['samples']):.1f}%)"
                       for t in tables.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
