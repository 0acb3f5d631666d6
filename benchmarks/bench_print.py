"""Printed formulas: how much of a corpus the tokenizer takes and the print renderer draws, how fast
printed sets are written, and a contact sheet of printed renders.

    python benchmarks/bench_print.py [--corpus ../shared/data/latex/im2latex100k_val_norm.txt]
                                     [--count 1000] [--repeats 3] [--sheet docs/printed_contact.png]

Coverage, over every non-blank line of --corpus: lines that lex as written, that lex after the
trailing-control-space repair (datasets_prep.sources.im2latex.im2latex_label), that validate
(tokenizer.label_verdict), and that the print renderer draws (datasets_prep.synth.printed), with the
undrawable ones counted by reason. Speed: write_printed() on the first --count lines into a temporary
folder (render + PNG encode + files on disk, one process), --repeats times: wall and CPU seconds,
formulas (input lines) per second. The sheet renders the formulas in SHEET below (written for this
file, so that nothing derived from the shared corpora is committed) and stays under 200 KB.
"""
from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets_prep.sources.im2latex import im2latex_label  # noqa: E402
from datasets_prep.synth import SynthError  # noqa: E402
from datasets_prep.synth.print_set import write_printed  # noqa: E402
from datasets_prep.synth.printed import render_print  # noqa: E402
from tokenizer import LatexError, label_verdict, tokenize  # noqa: E402

SHEET = [
    r"\frac { \partial \phi } { \partial t } = D \nabla ^ { 2 } \phi + { \cal O } ( \epsilon ^ { 2 } )",
    r"Z = \int { \cal D } A \, \exp \left( - \frac { 1 } { 4 g ^ { 2 } } \int d ^ { 4 } x \, F _ { \mu \nu } F ^ { \mu \nu } \right)",
    r"\sum _ { n = 1 } ^ { \infty } \frac { 1 } { n ^ { 2 } } = \frac { \pi ^ { 2 } } { 6 }",
    r"M = \left( \begin{array} { c c } { a } & { b } \\ { c } & { d } \end{array} \right) , \quad \det M \neq 0",
    r"{ } ^ { ( 4 ) } R _ { \alpha \beta } - \frac { 1 } { 2 } g _ { \alpha \beta } R = 8 \pi G T _ { \alpha \beta }",
    r"x _ { \pm } = \frac { - b \pm \sqrt { b ^ { 2 } - 4 a c } } { 2 a }",
    r"\langle \psi | \hat { H } | \psi \rangle \geq E _ { 0 } , \qquad \mathrm { T r } \, \rho = 1",
    r"\lim _ { x \rightarrow 0 } \frac { \sin x } { x } = 1 , ~ \bar { z } \in { \bf C }",
]


def coverage(lines: list[str]) -> dict:
    raw_lex = repaired_lex = valid = drawn = 0
    reasons: Counter = Counter()
    for line in lines:
        try:
            tokenize(line)
            raw_lex += 1
        except LatexError:
            pass
        latex = im2latex_label(line)[0]
        try:
            tokenize(latex)
            repaired_lex += 1
        except LatexError:
            continue
        valid += label_verdict(latex) is None
        try:
            render_print(latex)
            drawn += 1
        except SynthError as e:
            reasons[re.sub(r" \(at token \d+\)$", "", e.reason)] += 1
    return {"lines": len(lines), "lex": raw_lex, "lex_repaired": repaired_lex, "valid": valid, "drawn": drawn,
            "reasons": reasons}


def tex_side_by_side(lines: list[str], repeats: int) -> None:
    """Wall seconds of render_tex per formula and of render_tex_batch over the same formulas, in
    alternating rounds (TeX runs in child processes: wall time is what a user waits), and whether
    every image (or refusal) is the same."""
    import numpy as np

    from datasets_prep.synth.errors import SynthError
    from datasets_prep.synth.tex import render_tex, render_tex_batch

    def alone():
        out = []
        for x in lines:
            try:
                out.append(render_tex(x))
            except SynthError as e:
                out.append(e)
        return out

    best = {"alone": float("inf"), "batch": float("inf")}
    for r in range(repeats):
        for name, fn in (("alone", alone), ("batch", lambda: render_tex_batch(lines)))[::1 if r % 2 == 0 else -1]:
            t = time.perf_counter()
            got = fn()
            best[name] = min(best[name], time.perf_counter() - t)
            if name == "alone":
                one = got
            else:
                many = got
    same = sum(isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
               or isinstance(a, SynthError) and isinstance(b, SynthError) and a.reason == b.reason
               for a, b in zip(one, many))
    n = len(lines)
    print(f"TeX, {n} formulas, best of {repeats}: one at a time {best['alone']:.1f} s ({n / best['alone']:.1f} formulas/s), "
          f"64 a document {best['batch']:.1f} s ({n / best['batch']:.1f} formulas/s), "
          f"{best['alone'] / best['batch']:.1f}x; same image or refusal for {same} of {n}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path,
                   default=REPO.parent / "shared" / "data" / "latex" / "im2latex100k_val_norm.txt")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sheet", type=Path, default=None)
    p.add_argument("--tex", type=int, default=0, metavar="N",
                   help="also time TeX on the first N formulas: one at a time against 64 a document, "
                        "alternating, images compared")
    args = p.parse_args()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"commit {commit}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.sheet is not None:
        from datasets_prep.contact import contact_sheet
        images = [render_print(x) for x in SHEET]
        captions = [" ".join(x.split()[:12]) + " ..." for x in SHEET]
        contact_sheet(images, captions, cols=2).save(args.sheet, optimize=True)
        print(f"sheet: {args.sheet} ({args.sheet.stat().st_size / 1024:.0f} KB)")
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus}: coverage and speed skipped")
        return 0
    lines = [x.decode("utf-8") for x in args.corpus.read_bytes().split(b"\n") if x.strip()]
    c = coverage(lines)
    n = c["lines"]
    print(f"{args.corpus.name}: {n} formulas; lex as written {c['lex']} ({c['lex'] / n:.2%}); after the "
          f"control-space repair {c['lex_repaired']} ({c['lex_repaired'] / n:.2%}); valid {c['valid']} "
          f"({c['valid'] / n:.2%}); drawn by the print renderer {c['drawn']} ({c['drawn'] / n:.2%})")
    print("undrawable by reason: " + ", ".join(f"{r} {k}" for r, k in c["reasons"].most_common(12)))
    if args.tex:
        tex_side_by_side(lines[:args.tex], args.repeats)
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            s = write_printed(lines[:args.count], tmp)
        print(f"write_printed, first {min(args.count, n)} formulas: {s['written']} drawn, {s['seconds']:.2f} s wall "
              f"({s['formulas_per_s']} formulas/s), {s['cpu_seconds']:.2f} s CPU "
              f"({min(args.count, n) / s['cpu_seconds']:.0f} formulas per CPU-second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
