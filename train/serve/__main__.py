"""Serve a checkpoint on a local web page: draw a formula (mouse, pen or touch) or drop an image, and
read the LaTeX, the rendered formula and GryphOne's refinement step by step.

    python -m train.serve --ckpt runs/demo/ckpt.pt            # then open http://127.0.0.1:8000/
    python -m train.serve --ckpt runs/demo/ckpt.pt --port 0   # any free port (printed)

The API the page uses (docs/serving.md): POST /api/recognize with JSON {"strokes": [[[x, y], ...], ...],
"T": 10} or an image body -> {"latex", "confidence", "steps": [{"tokens", "confidence"}, ...], "ms"}.
Drawn strokes are rasterized exactly as the checkpoint's training shards were (its stored render
settings), images go through the same intake as train.predict.

The server binds 127.0.0.1 unless --host says otherwise; it has no authentication, so give --host
0.0.0.0 only on a network you trust.

Exit status: 0 stopped with Ctrl-C; 1 the checkpoint could not be loaded or the address could not be
bound; 2 bad command line.
"""
from __future__ import annotations

import argparse
import sys

from .intake import MAX_T


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m train.serve", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    from model.shipped import help_line

    ap.add_argument("--ckpt", default=None,
                    help="checkpoint written by train.run (loaded without running code), a train.export_onnx folder, "
                         f"or a shipped model's name ({help_line('page')})")
    ap.add_argument("--printed-ckpt", default=None, metavar="CKPT",
                    help="the model for images sent as printed formulas (the page's 'printed' box), a checkpoint or a "
                         f"shipped name; 'none' for none (default: {help_line('printed').replace('default: ', '')}, "
                         "when one ships)")
    ap.add_argument("--port", type=int, default=8000, help="TCP port, 0 = any free one (default: %(default)s)")
    ap.add_argument("--host", default=None,
                    help="address to bind (default: 127.0.0.1, this machine only; 0.0.0.0 serves every interface)")
    ap.add_argument("--T", type=int, default=10, help=f"default diffusion steps, 1..{MAX_T} (default: %(default)s); "
                                                      "a request may ask for another")
    from train.threads import default_threads

    ap.add_argument("--threads", type=int, default=default_threads(),
                    help="CPU threads for the model (default: half the cores, %(default)s here)")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--quiet", action="store_true", help="do not log each request on stderr")
    return ap


def _printed_backend(ckpt: str | None, device: str):
    """The printed-formula model: the named one (an error if it cannot load), else the shipped
    default when the install carries one, else none."""
    from model.shipped import ShippedWeightsError, default_name

    from .backend import Backend

    if ckpt is not None:
        return None if ckpt.lower() == "none" else Backend.load(ckpt, device, use="printed")
    try:
        default_name("printed")
    except ShippedWeightsError:
        return None
    return Backend.load(None, device, use="printed")


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not 0 <= args.port <= 65535:
        ap.error("--port must be 0..65535")
    if not 1 <= args.T <= MAX_T:
        ap.error(f"--T must be 1..{MAX_T}")
    import torch

    from .app import is_loopback, make_server
    from .backend import Backend, BackendError

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        backend = Backend.load(args.ckpt, device)
        printed = _printed_backend(args.printed_ckpt, device)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    host = args.host or "127.0.0.1"
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        server = make_server(backend, host, args.port, allow_remote=args.host is not None, default_T=args.T, log=log,
                             printed=printed)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if not is_loopback(host):
        print(f"warning: serving on {host}, reachable from other machines; the server has no authentication",
              file=sys.stderr)
    what = f"GryphOne, {backend.sampler} sampler" if backend.has_steps else f"{backend.kind}, greedy"
    if printed is not None:
        what += f"; printed formulas: {printed.source}"
    print(f"serving {backend.source} ({what}, step {backend.step}) on {server.url}  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
