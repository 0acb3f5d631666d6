"""Real-hand synthesis, measured: glyph-bank build time and coverage on CROHME train, synthesis speed,
and a contact sheet of real inks beside their real-hand and Hershey synthetic twins.

    python benchmarks/bench_bank.py                          # build + synth 2,000 + sheet
    python benchmarks/bench_bank.py --sheet docs/real_hand_synth.png

Data: $GRYPHONE_TEST_DATA or ../shared/data (crohme/train, latex/crohme2014_*_captions.txt).
Rates are wall time and this process's CPU time (the VM is shared; CPU time is the steadier figure).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def contact(bank_dir: Path, data: Path, dest: Path, rows: int, seed: int) -> None:
    """Real CROHME train inks (left), the same label in real-hand synthesis (middle) and in Hershey
    synthesis (right)."""
    from datasets_prep.contact import contact_sheet
    from datasets_prep.readers import read_inkml
    from datasets_prep.render import render_ink
    from datasets_prep.sources.crohme import label
    from datasets_prep.synth import SynthError, synthesize
    from datasets_prep.synth.handwriting import HandBank, synthesize_hand

    hb = HandBank.load(bank_dir)
    files = sorted((data / "crohme" / "train").rglob("*.inkml"))
    rng = np.random.default_rng(seed)
    images, captions = [], []
    size = (72, 260)
    for k in rng.permutation(len(files)):
        if len(images) >= 3 * rows:
            break
        try:
            real = read_inkml(files[k].read_bytes(), str(files[k]))
            latex, _ = label(real)
            hand = synthesize_hand(latex, np.random.default_rng([seed, int(k)]), hb)
            font = synthesize(latex, np.random.default_rng([seed, int(k)]))
        except (SynthError, Exception):  # noqa: BLE001 - a sheet skips what it cannot show
            continue
        if not 3 <= len(latex.split()) <= 30:
            continue
        images += [render_ink(real, size), render_ink(hand, size), render_ink(font, size)]
        captions += [f"real ({files[k].parent.name}): {latex}", f"real-hand synth ({hand.annotations['writer']})",
                     "Hershey synth"]
    sheet = contact_sheet(images, captions, cols=3, caption_lines=1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(dest, optimize=True)
    print(f"contact sheet: {dest} ({dest.stat().st_size / 1024:.0f} KB, {len(images) // 3} rows)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path,
                    default=Path(os.environ.get("GRYPHONE_TEST_DATA") or REPO / ".." / "shared" / "data"))
    ap.add_argument("--bank", type=Path, default=None, help="bank folder (default: a temporary one, built here)")
    ap.add_argument("--n", type=int, default=2000, help="expressions to synthesize")
    ap.add_argument("--sheet", type=Path, default=None, help="write the contact sheet here")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from datasets_prep.synth.bank_build import build_bank
    from datasets_prep.synth.bank_synth import generate_hand
    from datasets_prep.synth.handwriting import HandBank, synthesize_hand_batch
    from datasets_prep.synth.labels import read_label_file
    from datasets_prep.synth.leakage import ExcludeSet

    tmp = Path(tempfile.mkdtemp(prefix="gryphone_bank_"))
    bank_dir = args.bank or tmp / "bank"
    if args.bank is None or not (bank_dir / "index.json").exists():
        (bank, rep), wall, cpu = _timed(lambda: build_bank("crohme", [args.data / "crohme" / "train"]))
        bank.save(bank_dir)
        print(f"bank build: {rep['files_read']:,} files -> {rep['symbols']} symbols, {rep['samples']:,} samples, "
              f"{rep['writers']} writers; {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"({rep['files_read'] / wall:.0f} files/s wall); skipped {rep['files_skipped']}, unmapped "
              f"{sum(rep['unmapped'].values())}; glyphs.npz {(bank_dir / 'glyphs.npz').stat().st_size / 1e6:.1f} MB")
    hb, wall, _ = _timed(lambda: HandBank.load(bank_dir))
    print(f"bank load: {wall:.2f} s")
    latex = args.data / "latex"
    labels = [lab for _, lab in read_label_file(latex / "crohme2014_train_captions.txt")]
    exclude = ExcludeSet.from_files([latex / "crohme2014_test_captions.txt"])
    chunk = labels[:args.n]
    rngs = [np.random.default_rng(i) for i in range(len(chunk))]
    inks, wall, cpu = _timed(lambda: synthesize_hand_batch(chunk, rngs, hb))
    pts = np.mean([i.num_points for i in inks if hasattr(i, "num_points")])
    print(f"synthesize_hand_batch, {len(chunk)} CROHME train captions, in memory: "
          f"{len(chunk) / wall:.0f} inks/s wall, "
          f"{len(chunk) / cpu:.0f} inks/s CPU ({pts:.0f} points/ink)")
    rep, wall, cpu = _timed(lambda: generate_hand(args.n, tmp / "synth", hb, labels=labels, exclude=exclude))
    print(f"generate_hand -> MathWriting InkML on disk, {rep['written']} inks: {rep['written'] / wall:.0f} inks/s wall, "
          f"{rep['written'] / cpu:.0f} inks/s CPU; glyphs {rep['glyphs']}, bank share {rep['bank_glyph_share']}; "
          f"excluded {rep['excluded']} label lines equal to a test caption ({rep['excluded_distinct']} distinct)")
    if args.sheet:
        contact(bank_dir, args.data, args.sheet, args.rows, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
