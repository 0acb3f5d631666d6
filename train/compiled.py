"""torch.compile for training and decoding: what is compiled, in one place.

Training compiles the recognizer's whole loss (forward and backward): the trainer draws the step's
random numbers outside it (`Recognizer.draws`), and batches have few shapes (every image the canvas;
labels padded to `max_len`, or for a token recognizer cut to one of `compile_windows` widths), so one
graph per width serves every step. Where the whole loss stays eager
(the CPU default), `compile_parts` compiles only the submodules a step calls many times with one shape
(`Recognizer.train_parts`: HVT's coverage attention, once per LSTM step); the eager step keeps its
trimmed window and calls the same compiled graph at every position. On the CPU a compiled step draws
dropout's random numbers with the eager kernels (`fallback_random`): inductor's in-graph generator is
slower there (0.81-0.88x eager against 1.02-1.10x, BENCHMARKS "Compiled against eager on the CPU"), and
the compiled losses then equal the eager ones with dropout on. Decoding compiles the parts a
recognizer calls with the same shapes at every step (`Recognizer.static_parts`: GryphOne's encoder and
its fixed-window decoder; the AR baseline's decoder on preallocated caches, `static_decoding`), in
place, so the state dict keeps its names.
"""
from __future__ import annotations

import argparse

import torch

from model import Recognizer


def compile_for_training(model: Recognizer, mode: str = "default") -> torch.nn.Module:
    """The compiled loss module the trainer calls (`module(images, batch)`); `model` keeps the weights.
    A recognizer that names `train_parts` (a loss with a Python loop over label columns) gets those
    parts compiled in place and is returned itself, so its step keeps the trimmed window."""
    if model.train_parts:
        compile_train_parts(model, mode)
        return model
    return torch.compile(model, dynamic=False, **training_options(model, mode))


def training_options(model: torch.nn.Module, mode: str = "default") -> dict:
    """torch.compile's keyword arguments for a training graph: `mode` as given, except that on the CPU
    dropout draws from the eager generator (inductor's `fallback_random`; torch.compile takes a mode
    or an options dict, not both, so the mode's own options are spelled out beside it)."""
    if next(model.parameters()).device.type != "cpu":
        return {"mode": mode}
    from torch._inductor import list_mode_options

    return {"options": {**list_mode_options(mode), "fallback_random": True}}


def compiler_works() -> str:
    """Empty when torch.compile can build a CPU graph here, else why not (inductor needs a C++ compiler)."""
    try:
        torch.compile(lambda x: torch.tanh(x) + 1, dynamic=False)(torch.zeros(4))
    except Exception as exc:  # noqa: BLE001 - any failure to build means: stay eager
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
    return ""


def compile_train_parts(model: Recognizer, mode: str = "default") -> tuple[str, ...]:
    """Compile `model.train_parts` in place (the state dict keeps its names); returns their names. Call
    it after any copy of the model is made (an EMA copy stays eager). dynamic=None: a second shape (an
    evaluation's batch) gets one shape-generic graph instead of a recompile per batch size."""
    for name in model.train_parts:
        model.get_submodule(name).compile(dynamic=None, **training_options(model, mode))
    return tuple(model.train_parts)


def add_compile_arg(ap: argparse.ArgumentParser, note: str = "") -> None:
    """`--compile` for the commands that decode (train.predict, train.eval); `note` ends its help."""
    ap.add_argument("--compile", action="store_true",
                    help="compile the model's fixed-shape parts first (torch.compile: tens of seconds once, then "
                         "1.1-1.4x faster decoding on a CPU, CUDA graphs on a GPU; same outputs; checkpoints only)"
                         + note)


def compile_if_asked(ap: argparse.ArgumentParser, args: argparse.Namespace, recognizer) -> None:
    """Apply `--compile` to a loaded recognizer; a usage error for an ONNX folder's (no torch modules)."""
    if not args.compile:
        return
    if not isinstance(recognizer, torch.nn.Module):
        ap.error("--compile: an ONNX export folder runs in ONNX Runtime; give a checkpoint to compile")
    compile_for_decoding(recognizer)


def compile_for_decoding(model: Recognizer, mode: str | None = None) -> Recognizer:
    """`model` with its static-shape parts compiled in place; its outputs equal the eager ones'.

    mode: torch.compile's; by default "reduce-overhead" on CUDA (the parts replay as CUDA graphs, so a
    decoding step costs no kernel launches from Python) and the plain mode on the CPU."""
    if mode is None:
        on_cuda = next(model.parameters()).device.type == "cuda"
        mode = "reduce-overhead" if on_cuda else "default"
    model.static_decoding = True
    for name in model.static_parts:
        getattr(model, name).compile(dynamic=False, mode=mode)
    return model
