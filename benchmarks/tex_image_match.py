"""Image exact match with TeX drawing both sides, from `train.eval --json` reports, side by side.

IM2LATEX-100K's "exact match" (im2markup's evaluation) compares pictures, not strings: the reference
and the prediction are both typeset and the two images compared, so `x^{2}` and `x^2`, or a `\\,`
the picture does not need, are the same answer. `train.eval --markup images` draws both sides with
the project's layout engine (no TeX needed, 5-7% of references undrawable); this draws them with TeX
itself (latex + dvipng, `datasets_prep.synth.tex`, Computer Modern unless `--font`), as the published
figures were made. Both sides go through `tokenizer.markup_metrics.same_ink` (ink below gray 128,
blank columns removed, as im2markup's whitespace-free variant does) and must be equal pixel for
pixel. A reference TeX refuses is left out (counted); a prediction TeX refuses counts as a miss.
TeX puts each glyph on whole pixels, so a thin space can move what follows by a column: pixel equality
undercounts. The last column counts the misses whose two sides have one canonical spelling
(`train.eval.canonical`: spacing commands and redundant braces aside), the likeliest such cases.

    python benchmarks/tex_image_match.py NAME=eval.json [NAME=eval.json ...] --split test --decoder beam5
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from exact_by_length import report_parser, tables_of  # noqa: E402

from datasets_prep.synth.tex import DEFAULT_DPI, TexUnavailable, check_tex, render_tex_batch  # noqa: E402
from tokenizer.markup_metrics import exact_match, same_ink  # noqa: E402
from train.eval import canonical  # noqa: E402


def tex_image_table(pairs: Sequence[tuple[str, str]], font: str = "cm", dpi: int = DEFAULT_DPI) -> dict[str, float]:
    """{samples, text exact match %, image exact match % (of the drawable references), scored,
    references TeX refused, predictions TeX refused} for spaced (reference, prediction) pairs."""
    refs = [r for r, _ in pairs]
    hyps = [h for _, h in pairs]
    drawn_refs = render_tex_batch(refs, dpi=dpi, font=font)
    todo = [i for i, r in enumerate(hyps) if r.split() != refs[i].split()]  # equal tokens draw equal pictures
    drawn_hyps = dict(zip(todo, render_tex_batch([hyps[i] for i in todo], dpi=dpi, font=font)))
    matched = scored = ref_bad = hyp_bad = spelled_alike = 0
    for i, ref in enumerate(drawn_refs):
        if not isinstance(ref, np.ndarray):
            ref_bad += 1
            continue
        scored += 1
        if i not in drawn_hyps:
            matched += 1
            continue
        hyp = drawn_hyps[i]
        if not isinstance(hyp, np.ndarray):
            hyp_bad += 1
            continue
        if same_ink(ref, hyp):
            matched += 1
        elif canonical(refs[i]) == canonical(hyps[i]):
            spelled_alike += 1
    return {"samples": len(pairs), "text_exact_match": 100 * exact_match(refs, hyps),
            "image_exact_match": 100 * matched / scored if scored else 0.0, "scored": scored,
            "ref_undrawable": ref_bad, "hyp_undrawable": hyp_bad, "canonical_pixels_differ": spelled_alike}


def main(argv: list[str] | None = None) -> int:
    ap = report_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--font", default="cm", help="the TeX font both sides are typeset in (default cm)")
    ap.add_argument("--dpi", type=int, default=DEFAULT_DPI, help=f"dvipng resolution (default {DEFAULT_DPI})")
    args = ap.parse_args(argv)
    try:
        check_tex()
    except TexUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tables = tables_of(args, lambda pairs: tex_image_table(pairs, args.font, args.dpi))
    if tables is None:
        return 2
    print(f"| report ({args.split}, {args.decoder}) | samples | exact match (text) | image exact match (TeX) "
          "| scored | references TeX refused | predictions TeX refused | misses spelled alike |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, t in tables.items():
        print(f"| {name} | {t['samples']} | {t['text_exact_match']:.2f} | {t['image_exact_match']:.2f} | "
              f"{t['scored']} | {t['ref_undrawable']} | {t['hyp_undrawable']} | {t['canonical_pixels_differ']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
