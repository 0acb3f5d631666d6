"""The demo's data, made by the project itself: synthetic inks -> shards, so a fresh clone can train.

The committed fixtures (fixtures/, written by `datasets_prep.synth --fixtures`) are too few to learn
from, so the demo generates a larger synthetic set on demand with the same generator, in both the
InkML form a user would have and the shard form the trainer reads.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from datasets_prep.render import parse_size

from datasets_prep.render_spec import RenderSpec

DEMO_SPLITS = {"train": (3000, 1), "test": (200, 2)}  # split -> (count, seed)
DEMO_RENDER = RenderSpec((64, 256))  # the converter's drawing defaults on a 64x256 canvas


DEMO_ATOMS = list("0123456789") + ["x", "y", "n"]
DEMO_OPS = ["+", "-", "="]


def demo_labels(count: int, seed: int) -> list[str]:
    """Short expressions over digits, x, y, n and + - =, with superscripts, subscripts and fractions.

    A deliberately small world (16 symbols) so a CPU model learns symbol identity within minutes; the
    full CROHME symbol set (datasets_prep.synth.random_label) needs far longer than a demo.
    """
    rng = np.random.default_rng(seed)

    def atom() -> str:
        base = "".join(str(rng.choice(DEMO_ATOMS)) for _ in range(int(rng.integers(1, 3))))
        kind = rng.random()
        if kind < 0.15:
            return f"{base}^{{{rng.choice(DEMO_ATOMS)}}}"
        if kind < 0.25:
            return f"{base}_{{{rng.choice(DEMO_ATOMS)}}}"
        if kind < 0.35:
            return f"\\frac{{{rng.choice(DEMO_ATOMS)}}}{{{rng.choice(DEMO_ATOMS)}}}"
        return base

    labels = []
    for _ in range(count):
        terms = [atom() for _ in range(int(rng.integers(2, 5)))]
        ops = [str(rng.choice(DEMO_OPS)) for _ in terms[1:]]
        labels.append("".join(t + o for t, o in zip(terms, ops + [""])))
    return labels


def prepare_demo_data(root: Path, image_size: tuple[int, int] = DEMO_RENDER.size, splits: dict = DEMO_SPLITS,
                      log=print) -> Path:
    """Write root/ink/<split>/*.inkml and root/shards/<split>; idempotent (reuses a finished set)."""
    from datasets_prep.inkml import convert
    from datasets_prep.synth import generate

    root = Path(root)
    shards = root / "shards"
    marker = root / "demo_data.json"
    wanted = {"splits": {k: list(v) for k, v in splits.items()}, "image_size": list(image_size)}
    if marker.exists() and json.loads(marker.read_text()) == wanted and (shards / "dataset_dict.json").exists():
        log(f"[demo] reusing the synthetic set in {root}")
        return shards
    for split, (count, seed) in splits.items():
        labels = demo_labels(count, seed)
        summary = generate(count, root / "ink", labels=labels, seed=seed, fmt="mathwriting", split=split)
        log(f"[demo] synthesized {split}: {summary.get('written', count)} inks")
    convert("mathwriting", inputs=[root / "ink"], out=shards, size=tuple(image_size), overwrite=True,
            progress=False)
    marker.write_text(json.dumps(wanted))
    return shards


def main(argv: list[str] | None = None) -> int:
    """Write another test set of the demo's world (a seed the demo never uses) to score a demo run on."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m train.demo_data", description=main.__doc__)
    ap.add_argument("--out", required=True, type=Path, help="folder for ink/ and shards/")
    ap.add_argument("--count", type=int, default=500, help="inks (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=7, help="label and writer seed (default: %(default)s; the demo "
                                                        f"uses {sorted(s for _, s in DEMO_SPLITS.values())})")
    ap.add_argument("--size", default="x".join(map(str, DEMO_RENDER.size)),
                    help="canvas HxW (default: %(default)s, the demo's)")
    args = ap.parse_args(argv)
    if args.seed in {s for _, s in DEMO_SPLITS.values()}:
        ap.error(f"seed {args.seed} is one the demo trains or tests on")
    prepare_demo_data(args.out, parse_size(args.size), splits={"test": (args.count, args.seed)})
    print(f"wrote {args.out}/shards/test; score a run with: python -m train.eval --ckpt runs/demo/ckpt.pt "
          f"--data {args.out}/shards --splits test --T 1,10")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
