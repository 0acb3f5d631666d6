"""`python -m train.compare RUN [RUN ...]`: several runs' quick evaluations against training minutes
(or steps), as one picture and one table.

Why: recognizers are compared at a budget of minutes, not of steps (a step of HVT's LSTM costs three
of the AR baseline's), and a run's metrics.jsonl counts steps. Each quick evaluation is placed at the
minutes its step was reached (interpolated between the training rows' `elapsed_s`; a two-stage run's
second stage starts where its first ended), the final evaluation (eval.json, on the same split, every
sample) at the run's last minute. Variants of one recognizer that ran beside different jobs are
compared at equal steps instead (`--x steps`): their minutes measure the neighbours as much as the
variant. The table is Markdown, for BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from .plots import read_metrics


@dataclass
class Curve:
    """One run's points: (minutes, step, value) of the quick evals, and the final evaluation's."""

    name: str
    split: str
    quick: str = ""                     # what the quick evals read, e.g. valid[:150]
    decoder: str = ""
    points: list[tuple[float, int, float]] = field(default_factory=list)
    final: tuple[float, int, float] | None = None
    minutes: float = 0.0


class RunError(ValueError):
    """A folder that is not a training run (no metrics.jsonl), named in the message."""


def _clock(rows: list[dict], offset_s: float) -> tuple[list[int], list[float]]:
    steps, seconds = [0], [offset_s]
    for r in rows:
        if "elapsed_s" in r and isinstance(r.get("step"), int) and r["step"] > steps[-1]:
            steps.append(r["step"]), seconds.append(offset_s + float(r["elapsed_s"]))
    return steps, seconds


def _minutes_at(step: int, steps: list[int], seconds: list[float]) -> float:
    """Seconds of training at `step` / 60, interpolated between logged steps (the last rate beyond them)."""
    i = bisect_left(steps, step)
    if i < len(steps) and steps[i] == step:
        return seconds[i] / 60
    if i == 0 or len(steps) < 2:
        return seconds[0] / 60
    lo = min(i - 1, len(steps) - 2)
    frac = (step - steps[lo]) / (steps[lo + 1] - steps[lo])
    return (seconds[lo] + frac * (seconds[lo + 1] - seconds[lo])) / 60


def read_curve(run: Path, metric: str, name: str | None = None) -> Curve:
    """The quick evals of `run` (its first decoder), and its final evaluation, for `metric`."""
    run = Path(run)
    if not (run / "metrics.jsonl").is_file():
        raise RunError(f"{run}: no metrics.jsonl (not a training run folder)")
    config = json.loads((run / "config.json").read_text()) if (run / "config.json").is_file() else {}
    evals = config.get("eval") or {}
    splits = evals.get("splits") or config.get("eval_splits") or ["valid"]
    limit = evals.get("limit") or config.get("eval_limit")
    curve = Curve(name or run.name, splits[0], quick=f"{splits[0]}[:{limit}]" if limit else splits[0])
    offset = 0.0
    first = run / "pretrain" / "metrics.jsonl"
    if first.is_file():
        offset = _clock(read_metrics(first), 0.0)[1][-1]
    rows = read_metrics(run / "metrics.jsonl")
    steps, seconds = _clock(rows, offset)
    curve.minutes = seconds[-1] / 60
    for r in rows:
        if "eval" not in r or not r["eval"]:
            continue
        decoder, m = next(iter(r["eval"].items()))
        if metric in m:
            curve.decoder = curve.decoder or decoder
            curve.points.append((_minutes_at(r["step"], steps, seconds), r["step"], float(m[metric])))
    final = run / "eval.json"
    if final.is_file():
        data = json.loads(final.read_text())
        results = (data.get("results") or {}).get(curve.split, {}).get("metrics", {})
        m = results.get(curve.decoder) or next(iter(results.values()), {})
        if metric in m:
            curve.final = (curve.minutes, int(data.get("step", steps[-1])), float(m[metric]))
    return curve


AXES = {"minutes": (0, "training minutes"), "steps": (1, "training steps")}  # x -> (index in a point, label)


def table(curves: list[Curve], metric: str, x: str = "minutes") -> str:
    """Markdown: one row per run, the metric (percent) at each quick eval as `minutes: value` (or
    `step: value`)."""
    at, label = AXES[x]
    lines = [f"| run | quick evals | {metric} (%) at {label} | final (all of the split) |",
             "| --- | --- | --- | ---: |"]
    for c in curves:
        pts = ", ".join(f"{p[at]:.0f}: {100 * p[2]:.1f}" for p in c.points) or "—"
        final = f"{100 * c.final[2]:.2f} ({c.final[0]:.0f} min, step {c.final[1]})" if c.final else "—"
        lines.append(f"| {c.name} | {c.quick or c.split} | {pts} | {final} |")
    return "\n".join(lines)


def plot(curves: list[Curve], metric: str, out_png: Path, x: str = "minutes") -> Path | None:
    """The curves on one axis (matplotlib, the `plots` extra), or None without it."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at, label = AXES[x]
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for i, c in enumerate(curves):
        if c.points:
            ax.plot([p[at] for p in c.points], [100 * p[2] for p in c.points], marker="o", ms=3, color=f"C{i}",
                    label=f"{c.name} (quick eval, {c.quick or c.split})")
        if c.final:
            ax.plot([c.final[at]], [100 * c.final[2]], marker="*", ms=12, ls="", color=f"C{i}",
                    label=f"{c.name} (final, all of {c.split})")
    ax.set_xlabel(label)
    ax.set_ylabel(f"{metric} (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return Path(out_png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.compare", description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders (each with metrics.jsonl; NAME=FOLDER names its line)")
    ap.add_argument("--metric", default="markup_bleu4",
                    help="a quick-eval metric: markup_bleu4 (printed sets), em (ExpRate), cer ... (default markup_bleu4)")
    ap.add_argument("--x", choices=sorted(AXES), default="minutes",
                    help="place the evals at training minutes (default; recognizers at one budget) or steps "
                         "(variants of one recognizer that ran beside different jobs)")
    ap.add_argument("--out", type=Path, default=None, help="write the picture here (PNG)")
    args = ap.parse_args(argv)
    curves = []
    for spec in args.runs:
        name, _, folder = spec.rpartition("=") if "=" in spec else (None, "", spec)
        try:
            curves.append(read_curve(Path(folder), args.metric, name or None))
        except (RunError, OSError, json.JSONDecodeError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    if not any(c.points or c.final for c in curves):
        print(f"error: no run recorded {args.metric!r} (the quick evals of a printed run record markup_bleu4; "
              "of a handwriting run, em and cer)", file=sys.stderr)
        return 1
    print(table(curves, args.metric, args.x))
    if args.out is not None:
        written = plot(curves, args.metric, args.out, args.x)
        print(f"wrote {written}" if written else "no picture: matplotlib is not installed (pip install '.[plots]')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
