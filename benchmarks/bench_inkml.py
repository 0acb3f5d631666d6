"""InkML -> PNG -> shard throughput, side by side with the common peer approach, in one run.

    python benchmarks/bench_inkml.py [--input ../shared/data/crohme/train] [--every 4] [--rounds 3]

Reference (how most public HMER converters do it): xml.etree parse, per-point float() parsing, an
SVG <path> string rasterized by cairosvg to PNG in memory (no file writes, which flatters it).
Ours: what a worker of `datasets_prep.inkml` does per chunk, end to end: read, parse, label cleaning
+ tokenizer verdict, cairo render, PNG encode, the Arrow shard write and the accounting. Both run on
the same files, interleaved in small batches so both see the same load (the machine is shared), and
are compared by CPU time (wall time is printed too). Then the whole CLI path, convert(), on the
whole input with 1 and 2 workers for scaling, and a per-stage breakdown of one core's time.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets_prep.inkml import convert  # noqa: E402
from datasets_prep.readers import InkError, read_inkml  # noqa: E402
from datasets_prep.sources import target_label  # noqa: E402
from datasets_prep.render import png_bytes, rasterize  # noqa: E402
from datasets_prep.sources import Item  # noqa: E402
from datasets_prep.worker import Options, convert_chunk  # noqa: E402

NS = "{http://www.w3.org/2003/InkML}"


def reference_convert(data: bytes, size: int = 224, margin: float = 8.0, width: float = 2.0) -> bytes:
    """The peer approach, one file: stdlib XML, float() per value, SVG string -> cairosvg PNG."""
    import cairosvg

    root = ET.fromstring(data)
    strokes = []
    for trace in root.iter(NS + "trace"):
        pts = []
        for point in trace.text.strip().split(","):
            vals = point.split()
            pts.append((float(vals[0]), float(vals[1])))
        strokes.append(pts)
    xs = [x for s in strokes for x, _ in s]
    ys = [y for s in strokes for _, y in s]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    avail = size - 2 * margin - width
    scale = min(avail / max(x1 - x0, 1e-9), avail / max(y1 - y0, 1e-9))
    ox, oy = size / 2 - scale * (x0 + x1) / 2, size / 2 - scale * (y0 + y1) / 2
    paths = []
    for s in strokes:
        d = "M" + " L".join(f"{x * scale + ox:.2f} {y * scale + oy:.2f}" for x, y in s)
        if len(s) == 1:
            d += " l0 0"
        paths.append(f'<path d="{d}"/>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}">'
           f'<rect width="100%" height="100%" fill="white"/><g fill="none" stroke="black" '
           f'stroke-width="{width}" stroke-linecap="round" stroke-linejoin="round">{"".join(paths)}</g></svg>')
    return cairosvg.svg2png(bytestring=svg.encode())


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the pool's workers, once shut down). On a
    shared machine this is the fairer per-core measure: it excludes time spent waiting for a core."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_reference(files: list[Path]) -> tuple[float, float, int]:
    t, c = time.perf_counter(), cpu_seconds()
    n = 0
    for p in files:
        data = p.read_bytes()
        if not data:
            continue
        reference_convert(data)
        n += 1
    return time.perf_counter() - t, cpu_seconds() - c, n


def run_ours(src_dir: Path, workers: int, limit_files: list[Path] | None = None) -> tuple[float, float, int]:
    tmp = Path(tempfile.mkdtemp(prefix="bench_inkml_"))
    try:
        if limit_files is not None:  # the same subset as the reference, as links in one folder
            sub = tmp / src_dir.name
            for p in limit_files:
                dst = sub / p.relative_to(src_dir)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(p, dst)
            src_dir = sub
        t, c = time.perf_counter(), cpu_seconds()
        s = convert("crohme", [src_dir], tmp / "out", workers=workers)
        return time.perf_counter() - t, cpu_seconds() - c, s["totals"]["inputs"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_chunk(src_dir: Path, files: list[Path], tmp: Path, index: int) -> tuple[float, float, int]:
    """Ours on a batch, the way a worker does it: every file to a row or quarantine, one shard written."""
    opts = Options(src="crohme")
    items = [Item("train", p.relative_to(src_dir).as_posix(), file=str(p)) for p in files]
    t, c = time.perf_counter(), cpu_seconds()
    convert_chunk("train", index, items, str(tmp), opts)
    return time.perf_counter() - t, cpu_seconds() - c, len(items)


def stage_breakdown(files: list[Path], src: str = "crohme", clock=time.perf_counter) -> dict[str, float]:
    """Seconds per stage on one core, in-process (excludes shard writing and process overhead);
    `clock=time.process_time` counts CPU time instead of wall time."""
    from tokenizer import label_verdict

    acc = dict.fromkeys(["read file", "parse InkML", "label+verdict", "render (cairo)", "PNG encode"], 0.0)
    for p in files:
        t0 = clock()
        data = p.read_bytes()
        t1 = clock()
        try:
            ink = read_inkml(data, str(p))
        except InkError:
            continue
        t2 = clock()
        latex, _ = target_label(ink, src)
        label_verdict(latex)
        t3 = clock()
        r = rasterize(ink)
        t4 = clock()
        png_bytes(r.image)
        t5 = clock()
        for k, a, b in zip(acc, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)):
            acc[k] += b - a
    return acc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=str(REPO.parent / "shared/data/crohme/train"), help="folder of InkML")
    ap.add_argument("--every", type=int, default=4, help="side-by-side subset: every k-th file")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the subset")
    ap.add_argument("--batch", type=int, default=50, help="files per interleaved batch")
    ap.add_argument("--no-scaling", action="store_true", help="skip the 1 vs 2 worker run on the whole input")
    args = ap.parse_args()
    src = Path(args.input).resolve()
    if not src.is_dir():
        print(f"error: {src} is not a folder", file=sys.stderr)
        return 2
    files = sorted((p for p in src.rglob("*") if p.suffix.lower() == ".inkml"),
                   key=lambda p: p.relative_to(src).as_posix())
    subset = files[:: args.every]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}; input {src} ({len(files)} files, "
          f"side-by-side subset {len(subset)})")
    for p in subset[:50]:  # warm the page cache and the imports for both sides
        if p.stat().st_size:
            reference_convert(p.read_bytes())
    run_ours(src, 1, subset[:50])
    for p in subset:
        p.read_bytes()

    # Interleaved in small batches so both sides see the same load on this shared machine.
    tot = {"ref wall": 0.0, "ref cpu": 0.0, "ours wall": 0.0, "ours cpu": 0.0}
    ratios, n_ref, n_ours = [], 0, 0
    tmp = Path(tempfile.mkdtemp(prefix="bench_inkml_"))
    try:
        for r in range(args.rounds):
            for i in range(0, len(subset), args.batch):
                batch = subset[i:i + args.batch]
                t_ref, c_ref, k_ref = run_reference(batch)
                t_ours, c_ours, k_ours = run_chunk(src, batch, tmp, i)
                tot["ref wall"] += t_ref
                tot["ref cpu"] += c_ref
                tot["ours wall"] += t_ours
                tot["ours cpu"] += c_ours
                n_ref += k_ref
                n_ours += k_ours
                ratios.append((c_ref / max(k_ref, 1)) / (c_ours / max(k_ours, 1)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios.sort()
    print(f"side by side, 1 core, {len(subset)} files x {args.rounds} rounds, interleaved in batches of {args.batch}: "
          f"reference {n_ref / tot['ref wall']:.0f} files/s ({n_ref / tot['ref cpu']:.0f} per CPU-second), "
          f"ours {n_ours / tot['ours wall']:.0f} files/s ({n_ours / tot['ours cpu']:.0f} per CPU-second); "
          f"ratio {tot['ref cpu'] / n_ref / (tot['ours cpu'] / n_ours):.1f}x by CPU time "
          f"({tot['ref wall'] / n_ref / (tot['ours wall'] / n_ours):.1f}x wall), per-batch CPU ratios "
          f"p10 {ratios[len(ratios) // 10]:.1f}x / median {ratios[len(ratios) // 2]:.1f}x / "
          f"p90 {ratios[len(ratios) * 9 // 10]:.1f}x")

    br = stage_breakdown(subset)
    total = sum(br.values())
    print("where one core's time goes (in-process, no shard writing): "
          + ", ".join(f"{k} {v / total:.0%} ({v / len(subset) * 1e6:.0f} us)" for k, v in br.items()))

    if not args.no_scaling:
        t1, c1, n1 = run_ours(src, 1)
        t2, c2, n2 = run_ours(src, 2)
        print(f"whole input ({n1} files): 1 worker {n1 / t1:.0f} files/s ({n1 / c1:.0f} per CPU-second), "
              f"2 workers {n2 / t2:.0f} files/s ({n2 / c2:.0f} per CPU-second), speed-up {t1 / t2:.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (the machine is shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
