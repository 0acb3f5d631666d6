"""Synthesizer throughput on one core, and a contact sheet to look at.

    python benchmarks/bench_synth.py [--n 3000] [--repeats 3] [--sheet PATH]

Measures (single process, CPU time, timed in chunks of ~300 items; best and median chunk): random_label/s;
synthesize()/s on random labels (depth 2, length 8), synthesize_batch()/s on the same, and
synthesize()/s on the CROHME 2014 training captions when ../shared/data is present;
synthesize + MathWriting InkML text/s; and generate() to a temporary folder (files on disk)/s.
Each ink gets its own numpy Generator, as in generate(), and that cost is included.
Writes a contact sheet of rendered inks (datasets_prep.render when available) to --sheet.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets_prep.synth import generate, random_label, synthesize, synthesize_batch  # noqa: E402
from datasets_prep.synth.inkml_write import mathwriting_inkml  # noqa: E402


def best_rate(fn, n: int, repeats: int, chunk: int = 300) -> str:
    """Items/s of fn(lo, hi) over n items, timed in chunks of `chunk` items, `repeats` passes: the
    best chunk (as timeit does; on a shared machine it is the closest to an unloaded core) and the
    median chunk, by CPU time of this process."""
    times = []
    for _ in range(repeats):
        for lo in range(0, n, chunk):
            hi = min(lo + chunk, n)
            c = time.process_time()
            fn(lo, hi)
            times.append((time.process_time() - c) / (hi - lo))
    times.sort()
    return f"best {1 / times[0]:7.0f} /s, median {1 / times[len(times) // 2]:7.0f} /s"


def sheet(labels: list[str], path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    inks = [synthesize(lab, rng) for lab in labels]
    try:
        from datasets_prep.contact import contact_sheet
        from datasets_prep.render import render_ink
        images = [render_ink(ink, size=(112, 448)) for ink in inks]
        img = contact_sheet(images, labels, cols=3)
    except ImportError:  # the renderer is another part of the project; draw with PIL instead
        from PIL import Image, ImageDraw
        W, H = 448, 130
        img = Image.new("L", (W * 3, H * ((len(inks) + 2) // 3)), 255)
        d = ImageDraw.Draw(img)
        for i, (ink, lab) in enumerate(zip(inks, labels)):
            ox, oy = (i % 3) * W, (i // 3) * H
            x0, y0, x1, y1 = ink.bbox()
            k = min((W - 20) / max(x1 - x0, 1), (H - 34) / max(y1 - y0, 1))
            for s in ink.strokes:
                d.line([(ox + 10 + (x - x0) * k, oy + 8 + (y - y0) * k) for x, y in s[:, :2]], fill=0, width=2)
            d.text((ox + 4, oy + H - 18), lab[:70], fill=90)
    img.save(path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="inks per measurement")
    ap.add_argument("--repeats", type=int, default=3, help="passes over the n items (timed in chunks)")
    ap.add_argument("--sheet", type=Path, default=Path(tempfile.gettempdir()) / "gryphone_synth_contact.png")
    args = ap.parse_args()
    n, rep = args.n, args.repeats
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {load:.2f}; Python "
          f"{platform.python_version()}, numpy {np.__version__}; one process")

    rng = np.random.default_rng(0)
    labels = [random_label(rng, depth=2, length=8) for _ in range(n)]
    vis = np.mean([len(lab) for lab in labels])
    r = best_rate(lambda lo, hi: [random_label(np.random.default_rng(i), depth=2, length=8) for i in range(lo, hi)],
                  n, rep)
    print(f"random_label (depth 2, length 8):        {r}  (labels; mean {vis:.0f} chars)")
    for lab in labels[:50]:  # warm the glyph caches
        synthesize(lab, rng)
    r = best_rate(lambda lo, hi: [synthesize(labels[i], np.random.default_rng(i)) for i in range(lo, hi)], n, rep)
    pts = np.mean([synthesize(lab, rng).num_points for lab in labels[:300]])
    print(f"synthesize, random labels:               {r}  (inks; mean {pts:.0f} points/ink)")

    def batched(lo, hi):
        for a in range(lo, hi, 64):
            b = min(a + 64, hi)
            synthesize_batch(labels[a:b], [np.random.default_rng(i) for i in range(a, b)])
    r = best_rate(batched, n, rep, chunk=320)
    print(f"synthesize_batch (64 a pass), random:    {r}  (inks)")

    captions = REPO / ".." / "shared" / "data" / "latex" / "crohme2014_train_captions.txt"
    if captions.is_file():
        caps = [line.split("\t", 1)[1] for line in captions.read_text().splitlines()[:n]]
        r = best_rate(lambda lo, hi: [synthesize(caps[i], np.random.default_rng(i)) for i in range(lo, hi)],
                      len(caps), rep)
        pts = np.mean([synthesize(c, rng).num_points for c in caps[:300]])
        print(f"synthesize, CROHME 2014 train captions:  {r}  (inks; mean {pts:.0f} points/ink)")

    def to_text(lo, hi):
        for i in range(lo, hi):
            ink = synthesize(labels[i], np.random.default_rng(i))
            mathwriting_inkml(ink, sample_id="0" * 16, split="train", label=ink.annotations["label"])
    r = best_rate(to_text, n, rep)
    print(f"synthesize + MathWriting InkML text:     {r}  (inks)")

    with tempfile.TemporaryDirectory() as tmp:
        r = best_rate(lambda lo, hi: generate(hi - lo, Path(tmp), seed=lo), n, rep, chunk=320)
    print(f"generate() to disk (random labels):      {r}  (inks)")

    show = [r"\frac{a+b}{2}", r"\sqrt[3]{x^{2}+1}", r"\sum_{i=1}^{n}i^{2}", r"\int_{0}^{\infty}e^{-x}dx",
            r"\lim_{x\rightarrow0}\frac{\sin x}{x}=1", r"\left(\frac{1}{2}\right)^{n}",
            r"\begin{pmatrix}a&b\\c&d\end{pmatrix}", r"\hat{x}+\bar{y}=\vec{v}", r"f^{\prime}(x)\geq\alpha\beta"]
    path = sheet(show + labels[:12], args.sheet)
    print(f"contact sheet: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
