"""How much a bidirectional reader's right-to-left reading should count when a beam is reranked.

`model.search.bidirectional_best` (CoMER's rule) takes the candidates of a left-to-right and a
right-to-left beam and picks the best (log p_l2r + log p_r2l) / (2 x length). This decodes a split once,
keeps every candidate with both log-probabilities, then picks again for each weight w of the reversed
reading, (log p_l2r + w log p_r2l) / ((1 + w) x length), over two candidate sets: the left-to-right beam's
alone, and both beams'. w = 0 over the left-to-right set is the plain beam; w = 1 over both is what
`train.eval` scores as beam N. Picks are repaired to parse as `train.eval` repairs them and scored by
exact match and BLEU-4 (both sides spaced into tokens, as `train.eval --markup`); `oracle` counts the
images whose reference is among the set's candidates. `--greedy` reads each direction greedily alone
instead (no repair): how well the reversed reading reads by itself.

    python benchmarks/bidi_sweep.py --ckpt runs/ens.json --data shards/printed-64x512 --split valid \\
        --beam 5 --threads 1 --json sweep.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

from beam_rerank import base_parser, scores, split_batches, token_recognizer  # noqa: E402
from model.search import BOS, EOS, PAD, beam, both_ways, flip_r2l  # noqa: E402
from train.eval import spaced  # noqa: E402

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
SETS = ("l2r", "both")


def two_way_steps(recognizer, images: torch.Tensor):
    """The recognizer's token steps for `images`, which must read right to left too (ValueError if not)."""
    steps = recognizer.token_steps(images)
    if steps.r2l is None:
        raise ValueError("the recognizer reads one way only: no member learned right to left (model.bidirectional)")
    return steps


def candidates(recognizer, images: torch.Tensor, width: int) -> list[list[dict]]:
    """Each image's distinct candidates from both beams: text, which beams found it, log p each way, length."""
    steps = two_way_steps(recognizer, images)
    vocab, out = recognizer.labels.vocab, []
    for i in range(steps.images):
        cands, found_l2r, fwd, bwd = both_ways(steps, i, width)
        lengths = (cands != PAD).sum(1) - 1
        out.append([{"text": vocab.decode(c.tolist()), "l2r": bool(a), "fwd": float(f), "bwd": float(b),
                     "length": int(n)} for c, a, f, b, n in zip(cands, found_l2r, fwd, bwd, lengths)])
    return out


def greedy_both_ways(recognizer, images: torch.Tensor) -> list[tuple[str, str]]:
    """Each image read greedily left to right and right to left (flipped back): (l2r text, r2l text)."""
    steps = two_way_steps(recognizer, images)
    vocab, out = recognizer.labels.vocab, []
    for i in range(steps.images):
        ahead = beam(steps.image(i, 1), 1, steps.max_len, steps.device)[0][1]
        back = flip_r2l(beam(steps.r2l.image(i, 1), 1, steps.max_len, steps.device, start=EOS, stop=BOS)[0][1])
        out.append((vocab.decode(ahead.tolist()), vocab.decode(back.tolist())))
    return out


def sweep(rows: list[dict], weights: tuple[float, ...] = WEIGHTS) -> dict:
    """rows: {ref, cands} -> {set: {oracle, w: {exact, bleu4}}}: each weight's pick, repaired and scored."""
    refs = [spaced(r["ref"]) for r in rows]
    out = {}
    for name in SETS:
        pools = [[c for c in r["cands"] if name == "both" or c["l2r"]] for r in rows]
        res = {"oracle": sum(any(spaced(c["text"]) == ref for c in pool) for ref, pool in zip(refs, pools))}
        for w in weights:
            res[f"{w:g}"] = scores(refs, [max(pool, key=lambda c: (c["fwd"] + w * c["bwd"]) / ((1 + w) * c["length"]))
                                          ["text"] for pool in pools])
        out[name] = res
    return out


def build_parser() -> argparse.ArgumentParser:
    p = base_parser(__doc__, "a token recognizer with a bidirectional reader, or their ensemble")
    p.add_argument("--greedy", action="store_true", help="read each direction greedily alone instead")
    p.add_argument("--json", type=Path, help="write the table and every image's candidates here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    rec = token_recognizer(args.ckpt)
    if rec is None:
        return 2
    n, batches = split_batches(rec, args.data, args.split, args.limit)
    rows, t0 = [], time.perf_counter()
    try:
        with torch.no_grad():
            for refs, images in batches:
                if args.greedy:
                    rows += [{"ref": ref, "l2r": a, "r2l": b} for ref, (a, b) in zip(refs, greedy_both_ways(rec, images))]
                else:
                    rows += [{"ref": ref, "cands": c} for ref, c in zip(refs, candidates(rec, images, args.beam))]
    except ValueError as exc:
        print(f"{args.ckpt}: {exc}", file=sys.stderr)
        return 2
    if args.greedy:
        refs = [spaced(r["ref"]) for r in rows]
        table = {d: scores(refs, [r[d] for r in rows], repair=False) for d in ("l2r", "r2l")}
        for d, m in table.items():
            print(f"{args.split}[:{n}] greedy {d}: BLEU-4 {m['bleu4']:.2f}, exact {100 * m['exact'] / n:.2f}%")
        if args.json:
            args.json.write_text(json.dumps({"n": n, "greedy": table, "rows": rows}, indent=1))
        return 0
    table = sweep(rows)
    print(f"| {args.split}[:{n}], beam {args.beam}: weight of the reversed reading | "
          + " | ".join(f"w {w:g}" for w in WEIGHTS) + " | oracle |")
    print("| --- |" + " ---: |" * (len(WEIGHTS) + 1))
    for name in SETS:
        cells = [f"{table[name][f'{w:g}']['bleu4']:.2f} / {100 * table[name][f'{w:g}']['exact'] / n:.1f}%"
                 for w in WEIGHTS]
        print(f"| {name} beam candidates (BLEU-4 / exact) | " + " | ".join(cells)
              + f" | {100 * table[name]['oracle'] / n:.1f}% |")
    print(f"decode {time.perf_counter() - t0:.0f} s, {sum(len(r['cands']) for r in rows)} candidates")
    if args.json:
        args.json.write_text(json.dumps({"n": n, "table": table, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
