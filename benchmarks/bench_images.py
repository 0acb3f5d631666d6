"""Image datasets through the converter: export real CROHME as CoMER's data.zip and TAMER's
images.pkl, then import each with `datasets_prep.images`, timed, with the round trip's pixel error.

    python benchmarks/bench_images.py [--input ../shared/data/crohme/train] [--size 224x224] [--workers 2]

Prints a markdown table: files/s and files per CPU-second (this process and its workers) for the
InkML conversion, each export and each import, and the mean absolute pixel difference between the
original shards and the re-imported ones (the crop re-fit is a resampling).
"""
from __future__ import annotations

import argparse
import io
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets_prep.export import export, export_names  # noqa: E402
from datasets_prep.images import convert as convert_images  # noqa: E402
from datasets_prep.inkml import convert as convert_ink  # noqa: E402
from datasets_prep.shards import load_split  # noqa: E402


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn):
    c0, t0 = cpu(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, cpu() - c0


def pixel_error(a_dir: Path, b_dir: Path) -> float:
    a, b = load_split(a_dir), load_split(b_dir)
    names = export_names(a.column("sample_id").to_pylist())
    where = {n: i for i, n in enumerate(b.column("sample_id").to_pylist())}
    diffs = []
    for i, n in enumerate(names):
        if n not in where:
            continue
        ia = np.asarray(Image.open(io.BytesIO(a.column("image")[i]["bytes"].as_py())), np.float32)
        ib = np.asarray(Image.open(io.BytesIO(b.column("image")[where[n]]["bytes"].as_py())), np.float32)
        diffs.append(np.abs(ia - ib).mean() / 255)
    return float(np.mean(diffs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=str(REPO.parent / "shared/data/crohme/train"))
    ap.add_argument("--size", default="224x224")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        s, wall, c = timed(lambda: convert_ink("crohme", [args.input], t / "ink", size=args.size,
                                               workers=args.workers, split="train"))
        n = s["totals"]["rows"]
        rows.append(("InkML -> shards (datasets_prep.inkml)", n, wall, c))
        for to in ("comer", "tamer"):
            _, wall, c = timed(lambda: export(t / "ink", t / to, to))
            rows.append((f"shards -> {to} (datasets_prep.export)", n, wall, c))
            src = t / to / "data.zip" if to == "comer" else t / to
            s2, wall, c = timed(lambda: convert_images(to, [src], t / f"back-{to}", size=args.size,
                                                        workers=args.workers))
            rows.append((f"{to} -> shards (datasets_prep.images)", s2["totals"]["rows"], wall, c))
            rows.append((f"  round-trip mean |pixel difference| ({to})", pixel_error(t / "ink" / "train",
                                                                                   t / f"back-{to}" / "train"), None, None))
    print(f"| step ({args.input}, {args.size}, {args.workers} workers) | files | wall s | files/s | files per CPU-s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n, wall, c in rows:
        if wall is None:
            print(f"| {name} | {n:.4f} | | | |")
        else:
            print(f"| {name} | {n} | {wall:.1f} | {n / wall:.0f} | {n / c:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
