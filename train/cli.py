"""The `gryphone` command: one entry point for what users do, each subcommand the very code of its
`python -m` form (those stay the documented entry points; `gryphone SUB --help` shows its options).

    gryphone recognize formula.png scans/ inks.zip      # the shipped model, no checkpoint needed
    gryphone serve                                      # the drawing page on http://127.0.0.1:8000
    gryphone train --config crohme-cpu
"""
from __future__ import annotations

import importlib
import sys

# subcommand -> (module whose main(argv) runs it, one line for the listing)
COMMANDS: dict[str, tuple[str, str]] = {
    "recognize": ("train.predict", "read images, InkML, folders, archives or shard folders (python -m train.predict)"),
    "serve": ("train.serve.__main__", "the local page: draw a formula, watch it refine (python -m train.serve)"),
    "export-onnx": ("train.export_onnx", "a checkpoint -> ONNX graphs + a decoder folder (python -m train.export_onnx)"),
    "train": ("train.run", "train a recognizer: presets, stages, eval, model card (python -m train.run)"),
    "eval": ("train.eval", "ExpRate, <=1, <=2, CER, ... on shard splits (python -m train.eval)"),
    "check": ("tokenizer.check", "audit a LaTeX corpus with the SAT tokenizer (python -m tokenizer.check)"),
    "convert": ("datasets_prep.inkml", "InkML datasets -> Arrow shards (python -m datasets_prep.inkml)"),
    "convert-images": ("datasets_prep.images", "image datasets -> Arrow shards (python -m datasets_prep.images)"),
    "export-dataset": ("datasets_prep.export", "shards -> CoMER / TAMER layouts (python -m datasets_prep.export)"),
    "holdout": ("datasets_prep.holdout", "a validation split cut from a training split by writer"),
    "synth": ("datasets_prep.synth.__main__", "synthetic ink or printed formulas from LaTeX (python -m datasets_prep.synth)"),
    "bank": ("datasets_prep.synth.bank", "a glyph bank of real handwritten symbols (python -m datasets_prep.synth.bank)"),
    "compare": ("train.compare", "several runs' quick evals against training minutes: a table and a picture"),
    "ensemble": ("train.ensemble", "join trained token recognizers into one reader (python -m train.ensemble)"),
    "ship": ("train.ship", "place a trained checkpoint among the shipped weights (python -m train.ship)"),
}


PACKAGES = ("tokenizer", "datasets_prep", "model", "train")
# a file each of gryphone's packages has, and another distribution of the same name would not
MARKERS = {"tokenizer": "sat.py", "datasets_prep": "shards.py", "model": "shipped.py", "train": "cli.py"}


def shadowed() -> str | None:
    """One line naming the first of gryphone's top-level packages that resolves to something else (a
    `model.py` in the working folder, a `tokenizer` distribution from PyPI), else None."""
    import importlib.util
    from pathlib import Path

    home = Path(__file__).resolve().parent.parent
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError) as exc:
            return f"gryphone: cannot import its package {name!r} ({exc})"
        where = Path(spec.origin).resolve() if spec and spec.origin else None
        folder = where.parent if where else None
        if folder is None or folder != home / name or not (folder / MARKERS[name]).is_file():
            return (f"gryphone: {name!r} resolves to {where or 'a namespace package'}, not gryphone's "
                    f"{home / name}; rename or remove it (or install gryphone into its own virtual environment)")
    return None


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    return ("usage: gryphone COMMAND [options]   (gryphone COMMAND --help for its options)\n\n"
            "handwritten mathematical expression recognition\n\ncommands:\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0 if argv else 2
    if argv[0] == "--version":
        from importlib.metadata import PackageNotFoundError, version
        try:
            print(f"gryphone {version('gryphone')}")
        except PackageNotFoundError:
            print("gryphone (not installed as a distribution)")
        return 0
    name, rest = argv[0], argv[1:]
    problem = shadowed()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if name not in COMMANDS:
        print(f"gryphone: unknown command {name!r}\n\n{usage()}", file=sys.stderr, end="")
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    sys.argv = [f"gryphone {name}", *rest]
    try:
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
