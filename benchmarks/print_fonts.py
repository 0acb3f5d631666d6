"""How a printed-formula model reads fonts and sizes it never saw: the test formulas drawn again by
matplotlib's mathtext in several font sets and at two resolutions, beside TeX's own images of the same
formulas, each converted to shards and scored by `train.eval` (BLEU-4, edit score, exact match).

Why: the shipped printed model is trained on TeX's Computer Modern; users paste formulas typeset by
Word, MathJax or a PDF viewer at whatever size. mathtext is not TeX (it draws a subset of LaTeX, in
its own layout), so this is a probe of robustness, not a second test set: only formulas mathtext
draws in every font set are kept, and the TeX row is scored on that same subset.

    python benchmarks/print_fonts.py --images printed-tex/img/test --ckpt print-ar --out runs/print-fonts
    python benchmarks/print_fonts.py ... --fontsets cm stix dejavusans --dpi 100 200 --limit 200
    python benchmarks/print_fonts.py ... --ckpt one-font=runs/a/ckpt.pt three-fonts=runs/b/ckpt.pt

Writes OUT/img/<variant>/ (PNG + labels.tsv), OUT/shards (the first model's canvas; reused by a later
call with the same images, variants and limit), OUT/eval-<i>.json per checkpoint, and prints one
Markdown table (several checkpoints: one column each). Needs matplotlib (the `plots` extra).
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FONTSETS = ("cm", "stix", "stixsans", "dejavuserif", "dejavusans")


def compact(label: str) -> str:
    """The label written compactly (`F_{\\mu}`, not im2markup's `F _ { \\mu }`): mathtext reads a
    script after a space as text. ValueError (LatexError) when it does not lex."""
    from tokenizer.lexer import detokenize, tokenize

    return detokenize(tokenize(label))


def mathtext_png(latex: str, fontset: str, dpi: int, size: float = 12.0) -> bytes:
    """One compact formula (`compact`) drawn by mathtext, cropped to its ink plus a small margin;
    ValueError if it cannot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"mathtext.fontset": fontset}):
        fig = plt.figure(figsize=(0.01, 0.01))
        try:
            fig.text(0, 0, f"${latex}$", fontsize=size)
            buf = io.BytesIO()
            fig.savefig(buf, dpi=dpi, bbox_inches="tight", pad_inches=0.05, format="png")
        except Exception as exc:  # mathtext's parser raises ValueError, its layout others
            raise ValueError(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        finally:
            plt.close(fig)
    return buf.getvalue()


def read_labels(folder: Path) -> list[tuple[str, str]]:
    rows = []
    for line in (folder / "labels.tsv").read_text(encoding="utf-8").splitlines():
        name, _, label = line.partition("\t")
        if label:
            rows.append((name, label))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", required=True, type=Path, help="a synth folder: PNGs and labels.tsv (TeX's test split)")
    ap.add_argument("--ckpt", nargs="+", default=["print-ar"],
                    help="checkpoints, export folders or shipped names, NAME=PATH to name a column (default: print-ar)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--fontsets", nargs="+", default=list(FONTSETS), choices=FONTSETS)
    ap.add_argument("--dpi", nargs="+", type=int, default=[100, 200], help="mathtext resolutions (12 pt text)")
    ap.add_argument("--limit", type=int, default=0, help="first N formulas only (0: all)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: needs matplotlib (pip install -e '.[plots]')", file=sys.stderr)
        return 2
    from model import load

    named = [c.split("=", 1) if "=" in c else [c, c] for c in args.ckpt]
    size = load(named[0][1]).render.size
    variants = [(f, d) for f in args.fontsets for d in args.dpi]
    splits = {"tex": None, **{f"{f}_{d}": (f, d) for f, d in variants}}
    shards = args.out / "shards"
    made = {"images": str(args.images.resolve()), "variants": variants, "limit": args.limit, "size": list(size)}
    stamp = args.out / "probe.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == json.loads(json.dumps(made)):
        kept = len(read_labels(args.out / "img" / "tex"))
        print(f"reusing the {kept} formulas drawn in {args.out} before", file=sys.stderr)
    else:
        kept = draw(args.images, args.out / "img", variants, splits, args.limit)
        shutil.rmtree(shards, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "datasets_prep.images", "--src", "folder", "--input", str(args.out / "img"),
                        "--out", str(shards), "--size", f"{size[0]}x{size[1]}", "--quiet"], check=True, cwd=ROOT)
        stamp.write_text(json.dumps(made))
    results = {}
    for i, (name, ckpt) in enumerate(named):
        report = args.out / f"eval-{i}.json"
        subprocess.run([sys.executable, "-m", "train.eval", "--ckpt", ckpt, "--data", str(shards), "--splits",
                        ",".join(splits), "--markup", "text", "--beams", "1", "--threads", str(args.threads),
                        "--json", str(report)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        results[name] = json.loads(report.read_text())["results"]
    print(f"\n{kept} test formulas that mathtext draws in every variant; greedy\n")
    if len(named) == 1:
        print(f"`{named[0][0]}`\n\n| drawn by | BLEU-4 | edit score | exact match | CER |\n| --- | ---: | ---: | ---: | ---: |")
    else:
        print("| drawn by | " + " | ".join(f"{n} BLEU-4 / edit / CER" for n, _ in named) + " |\n| --- |"
              + " ---: |" * len(named))
    for split, variant in splits.items():
        what = "TeX (the test split's own images)" if variant is None else f"mathtext `{variant[0]}`, {variant[1]} dpi"
        cells = []
        for name, _ in named:
            m = results[name][split]["metrics"]["greedy"]
            if len(named) == 1:
                cells += [f"{100 * m['markup_bleu4']:.2f}", f"{100 * m['markup_edit_score']:.2f}",
                          f"{100 * m['markup_exact_match']:.2f}", f"{100 * m['cer']:.2f}"]
            else:
                cells.append(f"{100 * m['markup_bleu4']:.2f} / {100 * m['markup_edit_score']:.2f} / {100 * m['cer']:.2f}")
        print(f"| {what} | " + " | ".join(cells) + " |")
    return 0


def draw(images: Path, img: Path, variants: list, splits: dict, limit: int) -> int:
    """Every formula of `images` mathtext draws in every variant, written as one synth folder per
    variant plus `tex` (TeX's own images of the same formulas); returns how many were kept."""
    rows = read_labels(images)[: limit or None]
    drawn: dict[str, dict[tuple[str, int], bytes]] = {}
    refused: dict[str, str] = {}
    t0 = time.time()
    for name, label in rows:
        try:
            latex = compact(label)
            drawn[name] = {v: mathtext_png(latex, *v) for v in variants}
        except ValueError as exc:
            refused[name] = str(exc)[:200]
    kept = [(n, lab) for n, lab in rows if n in drawn]
    print(f"mathtext drew {len(kept)} of {len(rows)} formulas in every variant ({time.time() - t0:.0f} s); "
          f"{len(refused)} refused", file=sys.stderr)
    shutil.rmtree(img, ignore_errors=True)
    for split, variant in splits.items():
        (img / split).mkdir(parents=True)
        for name, _ in kept:
            target = img / split / f"{name}.png"
            if variant is None:
                shutil.copyfile(images / f"{name}.png", target)
            else:
                target.write_bytes(drawn[name][tuple(variant)])
        (img / split / "labels.tsv").write_text("".join(f"{n}\t{lab}\n" for n, lab in kept), encoding="utf-8")
    (img.parent / "refused.json").write_text(json.dumps(refused, indent=1))
    return len(kept)


if __name__ == "__main__":
    sys.exit(main())
