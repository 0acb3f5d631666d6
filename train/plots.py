"""Pictures of a run: training curves, and one expression refined step by step by the diffusion sampler.

The curves are drawn with matplotlib when it is installed (the `plots` extra: axes with ticks and
labels, both training stages, every eval point including the final evaluation, legends outside the
lines), or not at all (the run says so): metrics.jsonl holds every number either way. The refinement
picture needs only Pillow."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75)]


def _font(size: int = 12):
    for name in ("DejaVuSans.ttf", "DejaVuSansMono.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default()


def read_metrics(path: Path) -> list[dict]:
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill; the rest is still plotted
    return rows


EVAL_METRICS = ("em", "cer", "markup_bleu4")
"""What the evaluation panel draws (fractions): ExpRate, CER and, on printed sets, BLEU-4."""


def _series(rows: list[dict]) -> tuple[dict, dict]:
    """(loss parts, quick-eval ExpRate/CER) of one stage's metrics rows, each name -> [(step, value)]."""
    train = [r for r in rows if "loss" in r]
    loss_keys = [k for k in ("loss", "ce", "ce_sym_real", "ce_mod_real", "ce_sym_pad", "kl", "reader_ce")
                 if any(k in r for r in train)]
    losses = {k: [(r["step"], r[k]) for r in train if k in r and r[k] is not None] for k in loss_keys}
    if losses.get("ce") == losses.get("loss"):  # a loss that is its CE alone (the AR reader): one line
        losses.pop("ce", None)
    evals: dict[str, list[tuple[float, float]]] = {}
    for r in (r for r in rows if "eval" in r):
        for name, m in r["eval"].items():
            for metric in EVAL_METRICS:
                if metric in m:
                    evals.setdefault(f"{name} {metric}", []).append((r["step"], m[metric]))
    return losses, evals


def _final_points(final: dict | None, evals: dict) -> dict[str, tuple[float, float]]:
    """The final evaluation (eval.json, first split) as one more point of the decoders the quick evals
    followed (or of its first decoder when there were none)."""
    if not final or not final.get("results"):
        return {}
    metrics = next(iter(final["results"].values()))["metrics"]
    names = {key.rsplit(" ", 1)[0] for key in evals} & set(metrics) or set(list(metrics)[:1])
    return {f"{name} {metric}": (final["step"], metrics[name][metric])
            for name in sorted(names) for metric in EVAL_METRICS if metric in metrics[name]}


def plot_curves(metrics_path: Path, out_png: Path, stage1: Path | None = None,
                final: dict | None = None) -> Path | None:
    """Loss parts (log scale) and quick-eval ExpRate/CER against steps, from metrics.jsonl; `stage1`
    (a two-stage run's pretrain/metrics.jsonl) gets a loss panel of its own; `final` (eval.json) adds
    the final evaluation's point. Drawn with matplotlib (the `plots` extra) or not at all (None): a
    chart without real axes was not worth reading, and metrics.jsonl holds every number."""
    try:
        import matplotlib
    except ImportError:
        return None
    losses, evals = _series(read_metrics(metrics_path))
    first = _series(read_metrics(stage1))[0] if stage1 is not None and Path(stage1).is_file() else {}
    finals = _final_points(final, evals)
    matplotlib.use("Agg")
    return _plot_curves_matplotlib(first, losses, evals, finals, out_png)


def _plot_curves_matplotlib(first: dict, losses: dict, evals: dict, finals: dict, out_png: Path) -> Path:
    import matplotlib.pyplot as plt

    panels = ([("stage 1: AR reader (encoder pretraining)", first, True)] if first else []) + [
        ("stage 2: training loss" if first else "training loss", losses, True),
        ("evaluation: ExpRate, CER (and BLEU-4 on printed sets)", evals, False)]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.4), squeeze=False)
    for ax, (title, series, log_y) in zip(axes[0], panels):
        for i, (name, pts) in enumerate(series.items()):
            pts = [p for p in pts if math.isfinite(p[1]) and (p[1] > 0 or not log_y)]
            scale = 1 if log_y else 100
            if pts:
                ax.plot([p[0] for p in pts], [scale * p[1] for p in pts], marker="" if log_y else "o", ms=3,
                        color=f"C{i}", label=name)
            if name in finals:
                ax.plot([finals[name][0]], [scale * finals[name][1]], marker="*", ms=11, ls="", color=f"C{i}",
                        label=f"{name} (final eval)")
        if log_y:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel("loss (log scale)" if log_y else "percent")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8, frameon=False)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    fig.tight_layout()
    out_png = Path(out_png)
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return out_png


def _conf_color(conf: float) -> tuple[int, int, int]:
    """White for a sure position, through yellow, to red for an unsure one."""
    c = max(0.0, min(1.0, conf))
    return (255, int(140 + 115 * c), int(255 * c ** 2))


def plot_refinement(image: np.ndarray, steps: list[dict], reference: str, out_png: Path, title: str = "",
                    lowest: int = 3) -> Path:
    """The input image, then one row per sampler step: each SAT position as a cell shaded by the model's
    confidence in it (p(symbol) x p(modifier); red = unsure), the `lowest` least-confident cells of the
    step outlined, and the step's decoded LaTeX (green once it equals the reference).

    steps: [{"cells": [(position text, confidence), ...], "latex": str}, ...]."""
    font, small = _font(14), _font(12)
    ink = Image.fromarray(image)
    scale = max(1, 600 // max(1, ink.width))
    ink = ink.resize((ink.width * scale, ink.height * scale), Image.Resampling.NEAREST)
    cell_w, row_h = 54, 30
    n_cells = max((len(st["cells"]) for st in steps), default=1)
    width = max(ink.width + 20, 80 + cell_w * n_cells + 20, 900)
    text_h = 20
    img = Image.new("RGB", (width, ink.height + 60 + (row_h + text_h) * len(steps) + 30), "white")
    img.paste(ink.convert("RGB"), (10, 24))
    draw = ImageDraw.Draw(img)
    draw.text((10, 4), title or "refinement, one step a row", fill=(0, 0, 0), font=font)
    y = ink.height + 34
    draw.text((10, y - 2), f"cell = one SAT position, shaded by confidence (red = unsure); outlined: the "
                           f"{lowest} least confident", fill=(90, 90, 90), font=small)
    y += 20
    for k, st in enumerate(steps):
        draw.text((10, y + 7), f"step {k + 1:>2}", fill=(0, 0, 0), font=font)
        confs = [c for _, c in st["cells"]]
        low = set(sorted(range(len(confs)), key=confs.__getitem__)[:lowest])
        for j, (text, conf) in enumerate(st["cells"]):
            x = 80 + j * cell_w
            box = (x, y, x + cell_w - 3, y + row_h - 3)
            draw.rectangle(box, fill=_conf_color(conf), outline=(200, 0, 0) if j in low else (190, 190, 190),
                           width=3 if j in low else 1)
            draw.text((x + 3, y + 2), text[:8], fill=(0, 0, 0), font=small)
            draw.text((x + 3, y + 15), f"{conf:.2f}", fill=(80, 80, 80), font=small)
        y += row_h
        color = (0, 120, 0) if st["latex"] == reference else (0, 0, 0)
        draw.text((80, y), st["latex"], fill=color, font=small)
        y += text_h
    draw.text((10, y + 4), f"reference: {reference}", fill=(0, 0, 160), font=font)
    out_png = Path(out_png)
    img.save(out_png)
    return out_png
