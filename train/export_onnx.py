"""Export a trained checkpoint as ONNX graphs that ONNX Runtime decodes without PyTorch's model code.

    python -m train.export_onnx --ckpt runs/demo/ckpt.pt --out runs/demo/onnx [--int8]
    python -m train.predict --ckpt runs/demo/onnx formula.png      # any --ckpt takes the folder

Writes encoder.onnx (images -> what the decoder reads: memory keys/values, and HVT's initial LSTM
state), decoder.onnx (GryphOne: one refinement step of the SAT decoder; the AR baseline and
PosFormer: one cached token step, PosFormer's carrying its coverage; HVT: one LSTM step with coverage
attention) and gryphone-onnx.json (render and label specs with the vocabularies, model kind and
config, sampler settings). The token recognizers decode greedily from the export, the AR baseline and HVT also by beam search.
An ensemble file (model/ensemble_spec.py) exports as one folder per member (m1, m2, ...) beside a
gryphone-ensemble.json; the folder loads as the ensemble. --int8 adds dynamically quantized copies (encoder.int8.onnx, decoder.int8.onnx) and makes
them the folder's default. --check decodes a few random images with both PyTorch and ONNX Runtime and
reports whether they agree. Needs the `onnx` extra.

Exit status: 0 exported; 1 an unusable checkpoint or a missing extra; 2 bad command line.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from model import CheckpointError, DecodeSpec, load
from model.onnx_export import export_onnx
from model.onnx_ensemble import read_any_export
from model.onnx_runtime import EXTRA_HINT
from model.shipped import help_line


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m train.export_onnx", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=None,
                    help=f"checkpoint written by train.run, or a shipped model's name ({help_line('read')})")
    ap.add_argument("--out", required=True, type=Path, help="folder for the graphs and gryphone-onnx.json")
    ap.add_argument("--int8", action="store_true",
                    help="also write dynamically int8-quantized graphs (read only when asked for: precision='int8')")
    ap.add_argument("--no-ema", action="store_true", help="export the raw weights even when the run kept an EMA")
    ap.add_argument("--check", action="store_true", help="compare PyTorch and ONNX Runtime outputs on random images")
    return ap


def check_parity(ckpt: str | None, out: Path, use_ema: bool, n: int = 4, precisions=("fp32",)) -> str:
    """One line per precision written: how many of n random images decode to the same string as the
    checkpoint (fp32 should be all of them; int8 is approximate)."""
    loaded = load(ckpt, use_ema=use_ema)
    images = torch.rand(n, 1, *loaded.render.size).pow(8)  # sparse bright strokes, roughly ink-like
    spec = DecodeSpec(loaded.recognizer.default_sampler, T=10)
    want = loaded.recognizer.recognize(images, spec)
    lines = []
    for precision in precisions:
        got = read_any_export(out, precision=precision).recognize(images, spec)
        same = sum(x == y for x, y in zip(want, got))
        lines.append(f"check: {same} of {n} random images decode identically ({spec.name}, {precision})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        loaded = load(args.ckpt, use_ema=not args.no_ema)
        import onnx  # noqa: F401  (torch.onnx.export needs it)
        spec_path = export_onnx(loaded, args.out, int8=args.int8, used_ema=not args.no_ema)
        print(f"wrote {args.out}: {', '.join(sorted(p.name for p in args.out.iterdir()))}")
        if args.check:
            print(check_parity(args.ckpt, args.out, not args.no_ema,
                               precisions=("fp32", "int8") if args.int8 else ("fp32",)))
    except ImportError:
        print(f"error: ONNX export needs onnx and onnxruntime: {EXTRA_HINT}", file=sys.stderr)
        return 1
    except (CheckpointError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"read it with: python -m train.predict --ckpt {args.out} FILE...   ({spec_path.name} holds the specs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
