"""Place a trained checkpoint among the weights gryphone ships (model/weights/), as the shipped
models were placed:

    python -m train.ship --ckpt runs/crohme-ship/ckpt.pt --name crohme-gryphone --sampler mask-predict --T 10 \\
        --summary "GryphOne, CROHME 2014 train, ..." --default read,page

    python -m train.ship --members crohme-ar,crohme-ar-2 --name crohme-ar-ens --sampler greedy \\
        --summary "two AR readers, ..." --default read

Writes `NAME.pt` (the EMA weights, or the raw ones with --no-ema, and the specs: no optimizer, no RNG
state; a fraction of the run's checkpoint), `NAME-onnx/` (train.export_onnx's folder, fp32; skipped
with --no-onnx or without the onnx extra) and the model's entry in `manifest.json` (its SHA-256, its
decoder, its one-line summary, the data's terms), refusing a file over the repository's 16 MB cap.
With --members (models already shipped: token recognizers, or GryphOne models with a GryphOne
--sampler and --T), it writes an ensemble instead (model/ensemble_spec.py):
`NAME.json` listing the members' checkpoints with their SHA-256, `NAME-onnx.json` listing their ONNX
folders, and the entry; no weights are copied.
The model card beside them (MODEL_CARD.md) is written by people: it quotes measured figures.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from model import CheckpointError, load_checkpoint, save_checkpoint
from model.checkpoint import FORMAT, REQUIRED
from model.ensemble_spec import SAT_SAMPLERS, TOKEN_SAMPLERS
from model.spec_files import sha256_file
from model.shipped import MANIFEST, MANIFEST_FORMAT, USES, WEIGHTS_DIR
from tokenizer.files import atomic_write_json

MAX_FILE_BYTES = 16 * 1024 * 1024
CROHME_TERMS = "CROHME: free for research use only, not for commercial use (TC11 terms)"


def slim_state(state: dict, use_ema: bool = True) -> dict:
    """What reading needs of a training checkpoint: the specs and one set of weights."""
    ema = bool(use_ema and state.get("ema"))
    slim = {k: state[k] for k in REQUIRED[FORMAT] if k not in ("format", "model")}
    return {**slim, "model": state["ema"] if ema else state["model"], "weights": "ema" if ema else "raw"}


def place(ckpt: Path, name: str, sampler: str, T: int, summary: str, defaults: list[str], folder: Path = WEIGHTS_DIR,
          use_ema: bool = True, onnx: bool = True, terms: str = CROHME_TERMS, beam: int = 1) -> dict:
    """Write NAME.pt (+ NAME-onnx/) into `folder` and its manifest entry; returns the entry."""
    _check_name(name)
    state = load_checkpoint(ckpt)
    if state.get("format") != FORMAT:
        raise CheckpointError(f"{ckpt}: format {state.get('format')!r}; only {FORMAT} checkpoints ship")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.pt"
    save_checkpoint(target, slim_state(state, use_ema))
    if target.stat().st_size > MAX_FILE_BYTES:
        target.unlink()
        raise ValueError(f"{ckpt}: {name}.pt would be over 16 MB; ship a smaller model")
    from model import load
    samplers = load(target).recognizer.samplers
    if sampler not in samplers:
        target.unlink()
        raise ValueError(f"--sampler {sampler}: a {state['model_config']['kind']} model decodes with {', '.join(samplers)}")
    entry = {"checkpoint": target.name, "onnx": None, "kind": state["model_config"]["kind"], "sampler": sampler,
             "T": int(T), "beam": int(beam), "sha256": sha256_file(target), "summary": summary,
             "step": int(state["step"]), "data_terms": terms}
    if onnx:
        entry["onnx"] = _export(target, folder / f"{name}-onnx")
    path = folder / MANIFEST
    manifest = json.loads(path.read_text()) if path.is_file() else {"format": MANIFEST_FORMAT, "default": {},
                                                                    "models": {}}
    manifest["models"][name] = entry
    for use in defaults:
        manifest["default"][use] = name
    atomic_write_json(path, manifest)
    return entry


def place_ensemble(name: str, members: list[str], sampler: str, beam: int, summary: str, defaults: list[str],
                   folder: Path = WEIGHTS_DIR, T: int = 10) -> dict:
    """Write NAME.json (+ NAME-onnx.json where every member has an ONNX folder) over shipped members and
    its manifest entry; returns the entry."""
    from model import load
    from model.ensemble_spec import write_ensemble

    _check_name(name)
    path = folder / MANIFEST
    manifest = json.loads(path.read_text()) if path.is_file() else {}
    shipped = manifest.get("models", {})
    missing = [m for m in members if m not in shipped]
    if missing or not members:
        raise ValueError(f"--members: {', '.join(missing) or 'none given'} not shipped in {folder} "
                         "(ship each with --ckpt first)")
    entries = [shipped[m] for m in members]
    if any(e["kind"] == "ensemble" for e in entries):
        raise ValueError("--members: an ensemble cannot be a member; list its members")
    target = write_ensemble(folder / f"{name}.json", [e["checkpoint"] for e in entries], sampler, beam,
                            [e["sha256"] for e in entries], T=T)
    try:
        load(target)  # the members join (one sort, one vocabulary, one canvas) and decode with `sampler`
    except (CheckpointError, ValueError):
        target.unlink()
        raise
    onnx = None
    if all(e.get("onnx") for e in entries):
        onnx = write_ensemble(folder / f"{name}-onnx.json", [e["onnx"] for e in entries], sampler, beam, T=T).name
    terms = sorted({e.get("data_terms", "") for e in entries})
    entry = {"checkpoint": target.name, "onnx": onnx, "kind": "ensemble", "sampler": sampler,
             "T": int(T) if sampler in SAT_SAMPLERS else 1, "beam": int(beam),
             "sha256": sha256_file(target), "summary": summary,
             "step": sum(int(e.get("step", 0)) for e in entries), "data_terms": "; ".join(t for t in terms if t),
             "members": list(members)}
    manifest["models"][name] = entry
    for use in defaults:
        manifest["default"][use] = name
    atomic_write_json(path, manifest)
    return entry


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"--name {name!r}: letters, digits, '-' and '_' only")


def _export(ckpt: Path, out: Path) -> str | None:
    from model import load
    from model.onnx_export import export_onnx
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("note: onnx is not installed; no ONNX folder written (pip install -e '.[onnx]')", file=sys.stderr)
        return None
    if out.exists():
        shutil.rmtree(out)
    export_onnx(load(ckpt), out, int8=False, used_ema=True)
    too_big = [p.name for p in out.iterdir() if p.stat().st_size > MAX_FILE_BYTES]
    if too_big:
        raise ValueError(f"{out}: {', '.join(too_big)} over 16 MB")
    return out.name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.ship", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--ckpt", type=Path, help="a checkpoint written by train.run")
    what.add_argument("--members", help="comma-separated shipped models to ship as an ensemble of them")
    ap.add_argument("--name", required=True, help="the shipped model's name (file stem, --ckpt NAME)")
    ap.add_argument("--sampler", required=True, help="its default decoder, as chosen on a validation split")
    ap.add_argument("--T", type=int, default=10, help="its default diffusion steps (default: %(default)s)")
    ap.add_argument("--beam", type=int, default=1, help="its beam width with --sampler beam (default: %(default)s)")
    ap.add_argument("--summary", required=True, help="one line: what it reads, on what, at what cost")
    ap.add_argument("--default", default="", help=f"comma-separated uses it becomes the default for ({', '.join(USES)})")
    ap.add_argument("--terms", default=CROHME_TERMS, help="the training data's terms, for the manifest and the card "
                                                          "(default: CROHME's)")
    ap.add_argument("--folder", type=Path, default=WEIGHTS_DIR, help="the weights folder (default: model/weights)")
    ap.add_argument("--no-ema", action="store_true", help="ship the raw weights even when the run kept an EMA")
    ap.add_argument("--no-onnx", action="store_true", help="do not write the ONNX folder")
    args = ap.parse_args(argv)
    defaults = [u for u in args.default.split(",") if u]
    bad = [u for u in defaults if u not in USES]
    if bad:
        ap.error(f"--default {bad[0]!r}: one of {', '.join(USES)}")
    try:
        if args.members:
            if args.sampler not in TOKEN_SAMPLERS + SAT_SAMPLERS:
                ap.error(f"--sampler {args.sampler}: an ensemble decodes with {', '.join(TOKEN_SAMPLERS + SAT_SAMPLERS)}")
            entry = place_ensemble(args.name, [m for m in args.members.split(",") if m], args.sampler, args.beam,
                                   args.summary, defaults, args.folder, T=args.T)
        else:
            entry = place(args.ckpt, args.name, args.sampler, args.T, args.summary, defaults, args.folder,
                          not args.no_ema, not args.no_onnx, terms=args.terms, beam=args.beam)
    except (CheckpointError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.folder / entry['checkpoint']}: step {entry['step']}, sha256 {entry['sha256'][:12]}...; "
          f"onnx: {entry['onnx']}; defaults: {', '.join(defaults) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
