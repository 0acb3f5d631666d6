"""Batch-1 decoding speed on one encoder: diffusion T=1/10/50 (re-mask and mask-predict) vs AR greedy.

docs/training.md's FPS protocol: batch size 1, warm-up, synchronize around each image, no data loading;
per-image ms and the per-step cost. With checkpoints (--ckpt, --ar-ckpt) real test images are decoded
and the AR decoder stops at its own EOS; without, random weights are used and the AR decoder is run
for exactly --ar-tokens steps (the mean label length of the test set), so both sides do the work a
trained model would. The diffusion side is timed through GryphOne's raw sampler (`decode_sat`), the
AR side through `decode_ids`: ids out, no LaTeX decoding or repair.

    python benchmarks/bench_decode.py --config crohme-cpu --canvas 96x384 --ar-tokens 22
    python benchmarks/bench_decode.py --ckpt runs/crohme-cpu/ckpt.pt --ar-ckpt runs/crohme-cpu-ar/ckpt.pt --data shards/crohme-96x384 --split test2014
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datasets_prep.render import parse_size  # noqa: E402
from datasets_prep.render_spec import RenderSpec  # noqa: E402
from datasets_prep.shards import load_split  # noqa: E402
from model import DecodeSpec, GryphOne, Recognizer, build, load, switch_kind  # noqa: E402
from model.ar.decoder import BOS  # noqa: E402
from tokenizer.label_spec import LabelSpec  # noqa: E402
from tokenizer.vocab import EMPTY_MODIFIER, SATVocab, TokenVocab  # noqa: E402
from train.config import preset  # noqa: E402
from train.data import image_to_tensor  # noqa: E402


def sat_labels(num_symbols: int, num_modifiers: int) -> LabelSpec:
    """A SAT label space of a given size (placeholder names): what a random-weight GryphOne is built with."""
    symbols = list(SATVocab.SPECIAL_SYMBOLS) + [f"s{i}" for i in range(num_symbols - 3)]
    extra = [((), (f"^{i}",)) for i in range(num_modifiers - 4)]
    modifiers = list(SATVocab.SPECIAL_MODIFIERS) + [EMPTY_MODIFIER] + extra
    return LabelSpec("sat", SATVocab(symbols, modifiers))


def token_labels(num_tokens: int) -> LabelSpec:
    """A LaTeX-token label space of a given size (placeholder names), for the AR family."""
    return LabelSpec("token", TokenVocab(list(TokenVocab.SPECIALS) + [f"t{i}" for i in range(num_tokens - 4)]))


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def ar_fixed_steps(model, image, steps: int) -> torch.Tensor:
    """Greedy decoding forced to `steps` tokens (KV-cached), for random-weight timing."""
    mem_kv = model.decoder.memory_kv(model.encoder(image))
    caches = [{} for _ in model.decoder.blocks]
    tok = torch.full((1, 1), BOS, dtype=torch.long, device=image.device)
    for pos in range(steps):
        tok = model.decoder(tok, mem_kv, caches, start=pos)[:, -1:].argmax(-1)
    return tok


def time_per_image(fn, images, warmup: int, device) -> list[float]:
    for im in images[:warmup]:
        fn(im)
    _sync(device)
    times = []
    for im in images:
        _sync(device)
        t0 = time.perf_counter()
        fn(im)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return times


def ar_beside(diff: GryphOne, ar_tokens: int, num_tokens: int = 120) -> Recognizer:
    """A same-shape AR baseline on `diff`'s encoder weights (eval mode, on its device), its token
    window long enough for `ar_tokens` steps."""
    acfg = switch_kind(diff.cfg, "ar")
    acfg.max_len = max(acfg.max_len, ar_tokens + 2)
    ar = build(acfg, diff.render, token_labels(num_tokens))
    ar.encoder.load_state_dict(diff.encoder.state_dict())
    return ar.to(next(diff.parameters()).device).eval()


def random_gryphone(config: str, canvas: tuple[int, int], device, num_symbols: int = 120,
                    num_modifiers: int = 60) -> GryphOne:
    """The GryphOne of preset `config` with random weights on `canvas` (eval mode)."""
    cfg = preset(config).model
    if not isinstance(cfg, GryphOne.config_class):
        raise SystemExit(f"--config {config} is a {cfg.kind} preset; this benchmark times GryphOne's sampler")
    return build(cfg, RenderSpec(canvas), sat_labels(num_symbols, num_modifiers)).to(device).eval()


def load_kind(path: str, kind: str, device) -> Recognizer:
    rec = load(path, device).recognizer
    if getattr(rec, "kind", None) != kind:
        raise SystemExit(f"{path}: a {getattr(rec, 'kind', 'exported')} model; expected a PyTorch {kind} checkpoint")
    return rec


def shard_images(split_dir: Path, size: tuple[int, int], n: int, device) -> list[torch.Tensor]:
    """The first `n` images of a shard split as [1, 1, H, W] tensors (ink = 1)."""
    column = load_split(split_dir).column("image")
    images = []
    for i in range(min(n, len(column))):
        cell = column[i].as_py()
        images.append(image_to_tensor(cell["bytes"] if isinstance(cell, dict) else cell, size)[None].to(device))
    return images


def pick_canvas(args) -> tuple[int, int]:
    """--canvas, else the shards' (--data) RenderSpec, else crohme-cpu's 96x384."""
    if args.canvas:
        return parse_size(args.canvas)
    spec = RenderSpec.from_shards(args.data) if args.data else None
    return spec.size if spec is not None else (96, 384)


def decoders(diff: GryphOne, ar: Recognizer, Ts: list[int], ar_tokens: int | None) -> dict:
    """{name: image -> output}: the encoder alone, each sampler at each T, and AR greedy (to its own
    EOS, or for exactly `ar_tokens` steps)."""
    out = {"encoder only": lambda im: diff.encoder(im)}
    for T in Ts:
        for sampler in ("remask", "mask-predict"):
            spec = DecodeSpec(sampler, T=T, seed=0)
            out[f"diffusion {sampler} T={T}"] = lambda im, spec=spec: diff.decode_sat(im, spec)
    if ar_tokens is None:
        out["AR greedy (own EOS)"] = lambda im: ar.decode_ids(im, DecodeSpec("greedy"))
    else:
        out[f"AR greedy ({ar_tokens} tokens)"] = lambda im: ar_fixed_steps(ar, im, ar_tokens)
    return out


def print_table(results: dict, diff: GryphOne, device, threads: int) -> dict:
    ar_key = [k for k in results if k.startswith("AR")][0]
    ar_ms = 1000 * statistics.median(results[ar_key])
    c, (h, w) = diff.cfg, diff.render.size
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, device {device}, "
          f"threads {threads}, model {h}x{w} patch {c.patch} enc {c.enc_dim}x{c.enc_depth} "
          f"dec {c.dec_dim}x{c.dec_depth} len {c.max_len}")
    print(f"{'decoder':<32} {'ms/img (median)':>16} {'FPS':>8} {'speed vs AR':>12}")
    table = {}
    for name, ts in results.items():
        ms = 1000 * statistics.median(ts)
        table[name] = {"ms": ms, "fps": 1000 / ms, "speed_vs_ar": ar_ms / ms}
        print(f"{name:<32} {ms:>16.2f} {1000 / ms:>8.1f} {ar_ms / ms:>11.2f}x")
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="crohme-cpu", help="GryphOne preset whose model shape to time (random weights)")
    ap.add_argument("--canvas", default=None, metavar="HxW",
                    help="canvas of the random-weight model (default: the --data shards', else 96x384)")
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--ar-ckpt", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default="test2014")
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ar-tokens", type=int, default=22)
    ap.add_argument("--Ts", default="1,10,50")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    diff = (load_kind(args.ckpt, "diffusion", device) if args.ckpt
            else random_gryphone(args.config, pick_canvas(args), device))
    ar = load_kind(args.ar_ckpt, "ar", device) if args.ar_ckpt else ar_beside(diff, args.ar_tokens)
    size = diff.render.size
    images = (shard_images(Path(args.data) / args.split, size, args.images, device) if args.data
              else [torch.rand(1, 1, *size, device=device) for _ in range(args.images)])
    with torch.no_grad():
        fns = decoders(diff, ar, [int(t) for t in args.Ts.split(",")], None if args.ar_ckpt else args.ar_tokens)
        results = {name: time_per_image(fn, images, args.warmup, device) for name, fn in fns.items()}
    table = print_table(results, diff, device, args.threads)
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
