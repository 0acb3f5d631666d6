"""What a beam's other finished hypotheses hold, and whether a reranker without the reference reaches it.

A token recognizer's beam search ends with up to `width` finished hypotheses and returns the best
scored. This decodes a split with that search (model.search.beam over the recognizer's `token_steps`
hook, as `train.eval` decodes beam N) and keeps every finished hypothesis, then reports exact match
(both sides spaced into tokens, as `train.eval --markup` scores them):

- **top**: the hypothesis the search returns; **oracle**: any finished hypothesis equals the reference
  (the most a reranker over this beam could reach);
- **valid first**: the best-scored hypothesis that is valid LaTeX (model.repair.is_valid), else the top;
- **length penalty**: the pick under another length normalization, log p / length ** alpha for each
  alpha of `--penalties`, repaired to parse as `train.eval` repairs (exact match and BLEU-4). The search
  keeps the same finished hypotheses whatever alpha is (it ranks open rows by their raw log-probability
  and stops at `width` finished ones), so one decode answers every alpha;
- **render and compare** (with `--fonts`): every hypothesis drawn (TeX in each named font, or `engine`
  for the layout engine), fitted to the canvas as an input image is, and compared with the input
  (mean absolute difference `l1`, soft intersection over union `iou` or normalized cross-correlation
  `ncc`, after a Gaussian blur of `sigma` px; the best over the fonts); the pick maximizes
  score + lambda x similarity, for every setting of the grid. The grid is scored on the same images, so its
  best cell is an optimistic bound, not a held-out figure.

    python benchmarks/beam_rerank.py --ckpt print-ar --data shards/printed-64x512 --split valid \\
        --limit 160 --beam 5 --fonts cm,times,palatino --threads 1 --json rerank.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402

from datasets_prep.image_intake import fit_to_canvas, ink_darkness  # noqa: E402
from datasets_prep.synth.tex import TexUnavailable, check_tex, preamble, render_tex_batch  # noqa: E402
from model import load  # noqa: E402
from model.repair import delete_until_valid, is_valid  # noqa: E402
from model.search import beam  # noqa: E402
from tokenizer.markup_metrics import bleu4, exact_match  # noqa: E402
from train.data import ShardDataset, load_split_data  # noqa: E402
from train.eval import spaced  # noqa: E402

SIGMAS = (0.0, 1.0, 2.0)
KINDS = ("l1", "iou", "ncc")
LAMBDAS = (0.5, 1.0, 2.0, 5.0, 1000.0)
PENALTIES = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5)


class Hyp(NamedTuple):
    """One finished hypothesis: its search score (log p / length ** length_penalty), its LaTeX, its
    log-probability and its length (the tokens after the start, the stop included, as the search counts)."""

    score: float
    text: str
    logp: float
    length: int


def split_batches(recognizer, root: Path, split: str, limit: int = 0, size: int = 16):
    """(n, batches): the split's first `limit` images (0: all) as the recognizer reads them, n in all,
    in batches of (references, images [b, 1, H, W])."""
    data = load_split_data(root / split, recognizer.targets, recognizer.cfg.max_len, labels=recognizer.labels,
                           keep_all=True)
    n = min(limit or len(data.labels), len(data.labels))
    dataset = ShardDataset(data, recognizer.render.size)
    return n, ((data.labels[start: min(n, start + size)],
                torch.stack([dataset[j]["image"] for j in range(start, min(n, start + size))]))
               for start in range(0, n, size))


def scores(refs: list[str], texts: list[str], repair: bool = True) -> dict:
    """Exact matches and corpus BLEU-4 of `texts` against spaced `refs`, each text repaired to parse as
    `train.eval`'s decoders repair (model.decoding.finish_tokens) unless `repair` is False, then spaced."""
    picks = [spaced(t if not repair or is_valid(t) else delete_until_valid(t)) for t in texts]
    return {"exact": round(len(refs) * exact_match(refs, picks)), "bleu4": round(100 * bleu4(refs, picks), 2)}


def token_recognizer(ckpt: str):
    """The PyTorch token recognizer `ckpt` names, in eval mode; None (said on stderr) for anything else."""
    rec = load(ckpt).recognizer
    if not isinstance(rec, torch.nn.Module) or rec.label_kind != "token":
        print(f"{ckpt}: not a PyTorch token recognizer (AR, PosFormer, HVT or their ensemble): "
              f"no token beam search to rerank", file=sys.stderr)
        return None
    return rec.eval()


def base_parser(doc: str, ckpt_help: str) -> argparse.ArgumentParser:
    """The options every beam benchmark here takes: the recognizer, the split, the beam, threads."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt", required=True, help=ckpt_help)
    p.add_argument("--data", required=True, type=Path, help="shards root (holding the split folder)")
    p.add_argument("--split", default="valid")
    p.add_argument("--limit", type=int, default=0, help="the split's first N images (0: all)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    return p


def finished_hypotheses(recognizer, images: torch.Tensor, width: int) -> list[list[Hyp]]:
    """Each image's finished hypotheses, best scored first."""
    steps = recognizer.token_steps(images)
    lp = float(getattr(recognizer.cfg, "length_penalty", 1.0))
    vocab = recognizer.labels.vocab
    out = []
    for i in range(steps.images):
        hyps = beam(steps.image(i, width), width, steps.max_len, steps.device, length_penalty=lp)
        out.append([Hyp(s, vocab.decode(ids.tolist()), s * (len(ids) - 1) ** lp, len(ids) - 1)
                    for s, ids in sorted(hyps, key=lambda h: -h[0])])
    return out


def length_sweep(rows: list[dict], penalties: tuple[float, ...] = PENALTIES) -> dict:
    """For each alpha, each row's pick by log p / length ** alpha, repaired to parse as `train.eval`'s
    decoders repair (model.decoding.finish_tokens): exact matches and corpus BLEU-4, both sides spaced
    into tokens once."""
    refs = [spaced(r["ref"]) for r in rows]
    return {f"{alpha:g}": scores(refs, [max(r["hyps"], key=lambda h: h.logp / h.length ** alpha).text for r in rows])
            for alpha in penalties}


def same(ref: str, hyp: str) -> bool:
    """Exact match as `train.eval --markup` scores it: both sides spaced into tokens first."""
    return exact_match([spaced(ref)], [spaced(hyp)]) == 1.0


def blur(a: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of a 2D array (kernel to 4 sigma, edges mirrored: scipy.ndimage.gaussian_filter's
    defaults, without scipy); sigma 0 returns `a` itself."""
    if not sigma:
        return a
    r = int(4.0 * sigma + 0.5)
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    k /= k.sum()
    for axis in (0, 1):
        padded = np.pad(a, [(r, r) if ax == axis else (0, 0) for ax in (0, 1)], mode="symmetric")
        n = a.shape[axis]
        a = sum(w * np.take(padded, np.arange(i, i + n), axis=axis) for i, w in enumerate(k))
    return a


def similarity(a: np.ndarray, b: np.ndarray | None, kind: str) -> float:
    """How alike two canvases (ink = 1, blurred alike) are; -inf for a hypothesis that could not be drawn."""
    if b is None:
        return float("-inf")
    if kind == "l1":
        return -float(np.abs(a - b).mean())
    if kind == "iou":
        return float(np.minimum(a, b).sum() / max(1e-6, float(np.maximum(a, b).sum())))
    if kind == "ncc":
        a, b = a - a.mean(), b - b.mean()
        return float((a * b).sum() / np.sqrt(float((a * a).sum() * (b * b).sum()) + 1e-9))
    raise ValueError(f"unknown similarity {kind!r} (choose from {', '.join(KINDS)})")


def drawn(texts: list[str], fonts: list[str], size: tuple[int, int], margin: float) -> list[list[np.ndarray | None]]:
    """Each text drawn in each font and fitted to the canvas ([text][font]; None where it cannot be drawn)."""
    per_font = []
    for font in fonts:
        if font == "engine":
            from datasets_prep.synth.printed import render_print
            grays = []
            for t in texts:
                try:
                    grays.append(render_print(t))
                except ValueError as exc:
                    grays.append(exc)
        else:
            grays = render_tex_batch(texts, font=font)
        per_font.append([None if isinstance(g, Exception) else fit_to_canvas(ink_darkness(g), size, margin)
                         for g in grays])
    return [list(col) for col in zip(*per_font)] if per_font else [[] for _ in texts]


def tally(rows: list[dict]) -> dict:
    """rows: {ref, hyps [Hyp], image, canvases [[per font]] (optional)} -> exact-match counts."""
    out = {"n": len(rows), "top": 0, "oracle": 0, "valid_first": 0, "top_invalid": 0, "top_invalid_valid_alternative": 0}
    oks = []   # per row: which hypotheses are the reference
    for r in rows:
        texts = [h.text for h in r["hyps"]]
        ok = [same(r["ref"], t) for t in texts]
        valid = [is_valid(t) for t in texts]
        out["top"] += ok[0]
        out["oracle"] += any(ok)
        out["valid_first"] += ok[valid.index(True)] if True in valid else ok[0]
        out["top_invalid"] += not valid[0]
        out["top_invalid_valid_alternative"] += (not valid[0]) and any(valid)
        oks.append(ok)
    if rows and rows[0].get("canvases"):
        cells = {}
        for sigma in SIGMAS:   # each image and drawing blurred once per sigma, scored once per kind
            blurred = [(blur(r["image"], sigma), [[None if c is None else blur(c, sigma) for c in cs]
                                                  for cs in r["canvases"]]) for r in rows]
            for kind in KINDS:
                sims = [[max((similarity(image, c, kind) for c in cs), default=float("-inf")) for cs in canvases]
                        for image, canvases in blurred]
                for lam in LAMBDAS:
                    cells[f"sigma {sigma:g}, {kind}, lambda {lam:g}"] = sum(
                        ok[int(np.argmax([h.score + lam * m for h, m in zip(r["hyps"], row)]))]
                        for r, ok, row in zip(rows, oks, sims))
        out["render_compare"] = cells
        out["render_compare_best"] = max(cells.values())
    return out


def build_parser() -> argparse.ArgumentParser:
    p = base_parser(__doc__, "a token recognizer: checkpoint, run folder, ensemble or shipped name")
    p.add_argument("--fonts", default="", help="comma-separated: TeX fonts (cm, times, palatino) and/or 'engine'; "
                                               "empty: no render-and-compare")
    p.add_argument("--penalties", default=",".join(f"{a:g}" for a in PENALTIES),
                   help="comma-separated length-penalty exponents alpha to pick by (log p / length ** alpha)")
    p.add_argument("--json", type=Path, help="write the counts here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    fonts = [f for f in args.fonts.split(",") if f]
    try:
        penalties = tuple(float(a) for a in args.penalties.split(",") if a)
    except ValueError:
        print(f"--penalties {args.penalties}: not a comma-separated list of numbers", file=sys.stderr)
        return 2
    try:  # before any decoding: an unknown font or a missing TeX is said at once
        for font in fonts:
            if font != "engine":
                preamble(font)
                check_tex()
    except (TexUnavailable, ValueError) as exc:
        print(f"--fonts {args.fonts}: {exc}", file=sys.stderr)
        return 2
    rec = token_recognizer(args.ckpt)
    if rec is None:
        return 2
    n, batches = split_batches(rec, args.data, args.split, args.limit)
    rows, t0 = [], time.perf_counter()
    with torch.no_grad():
        for refs, images in batches:
            for k, hyps in enumerate(finished_hypotheses(rec, images, args.beam)):
                rows.append({"ref": refs[k], "hyps": hyps, "image": images[k, 0].numpy()})
    decode_s = time.perf_counter() - t0
    render_s = 0.0
    if fonts:
        t0 = time.perf_counter()
        texts = [h.text for r in rows for h in r["hyps"]]
        canv = iter(drawn(texts, fonts, tuple(rec.render.size), rec.render.margin))
        for r in rows:
            r["canvases"] = [next(canv) for _ in r["hyps"]]
        render_s = time.perf_counter() - t0
    counts = tally(rows)
    counts["length_penalty"] = length_sweep(rows, penalties)
    counts.update(decode_s=round(decode_s, 1), render_s=round(render_s, 1),
                  candidates=sum(len(r["hyps"]) for r in rows), fonts=fonts)
    pct = lambda k: f"{counts[k]} ({100 * counts[k] / max(1, counts['n']):.1f}%)"  # noqa: E731
    print(f"| {args.split}[:{n}], beam {args.beam} | exact |\n| --- | ---: |")
    for key in ("top", "oracle", "valid_first") + (("render_compare_best",) if fonts else ()):
        print(f"| {key.replace('_', ' ')} | {pct(key)} |")
    print("\n| length penalty alpha | exact | BLEU-4 |\n| --- | ---: | ---: |")
    for alpha, m in counts["length_penalty"].items():
        print(f"| {alpha} | {m['exact']} ({100 * m['exact'] / max(1, counts['n']):.1f}%) | {m['bleu4']:.2f} |")
    print(f"top invalid: {counts['top_invalid']}, of which with a valid alternative: "
          f"{counts['top_invalid_valid_alternative']}; decode {decode_s:.0f} s, drawing {render_s:.0f} s "
          f"for {counts['candidates']} hypotheses x {len(fonts)} font(s)")
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
