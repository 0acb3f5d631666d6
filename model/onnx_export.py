"""Write a trained recognizer as ONNX graphs plus one JSON of everything else a reader needs.

The folder holds `encoder.onnx` (images -> memory keys/values), `decoder.onnx` (one decoder step,
model/onnx_graphs.py), optionally their dynamically int8-quantized copies, and `gryphone-onnx.json`:
the recognizer's kind and config, its RenderSpec and LabelSpec (vocabularies included), the train
config and step, and the sampler settings. `model.load(folder)` reads it back as a recognizer with
the same `recognize` as a checkpoint's (model/onnx_runtime.py). Needs the `onnx` extra.
"""
from __future__ import annotations

import json
import logging
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from .load import Loaded
from .onnx_graphs import MemoryGraph, decoder_graph
from .onnx_runtime import EXPORT_FORMAT, EXTRA_HINT, GRAPHS, SPEC_FILE

OPSET = 17


def _export(module: torch.nn.Module, args: tuple, path: Path, names: tuple[list[str], list[str]],
            dynamic: dict[str, dict[int, str]]) -> None:
    with warnings.catch_warnings():  # the TorchScript exporter says it is the legacy one; it is the one that
        warnings.simplefilter("ignore")  # needs no onnxscript, and its graphs are what ONNX Runtime reads
        torch.onnx.export(module, args, str(path), dynamo=False, input_names=names[0], output_names=names[1],
                          dynamic_axes=dynamic, opset_version=OPSET, do_constant_folding=True)


def _export_graphs(loaded: Loaded, out: Path) -> str:
    """encoder.onnx and decoder.onnx; returns the decoder graph's kind."""
    rec = loaded.recognizer
    step = decoder_graph(rec)  # refuses the kinds it cannot export before anything is written
    memory = MemoryGraph(rec).eval()
    images = torch.rand(2, 1, *loaded.render.size)
    mem_axes = {1: "batch", 3: "memory"}
    _export(memory, (images,), out / GRAPHS["fp32"]["encoder"], (["images"], ["mem_k", "mem_v"]),
            {"images": {0: "batch"}, "mem_k": mem_axes, "mem_v": mem_axes})
    with torch.no_grad():
        mem_k, mem_v = memory(images)
    if rec.kind == "diffusion":
        n = rec.cfg.max_len
        ids = torch.full((2, n), 1, dtype=torch.long)
        _export(step, (ids, ids.clone(), mem_k, mem_v), out / GRAPHS["fp32"]["decoder"],
                (["symbols", "modifiers", "mem_k", "mem_v"], ["sym_logits", "mod_logits"]),
                {"symbols": {0: "batch"}, "modifiers": {0: "batch"}, "mem_k": mem_axes, "mem_v": mem_axes,
                 "sym_logits": {0: "batch"}, "mod_logits": {0: "batch"}})
        return "sat-step"
    depth, _, heads, _, head_dim = mem_k.shape
    past = torch.zeros(depth, 2, heads, 1, head_dim)
    cache_axes = {1: "batch", 3: "past"}
    new_axes = {1: "batch", 3: "past_plus_one"}
    _export(step, (torch.ones(2, 1, dtype=torch.long), torch.tensor([1]), past, past.clone(), mem_k, mem_v),
            out / GRAPHS["fp32"]["decoder"],
            (["token", "position", "past_k", "past_v", "mem_k", "mem_v"], ["logits", "new_k", "new_v"]),
            {"token": {0: "batch"}, "past_k": cache_axes, "past_v": cache_axes, "mem_k": mem_axes, "mem_v": mem_axes,
             "logits": {0: "batch"}, "new_k": new_axes, "new_v": new_axes})
    return "ar-cached-step"


def quantize_int8(out: Path) -> None:
    """Dynamic int8 quantization of both graphs (weights int8, activations quantized per batch)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise ImportError(f"int8 quantization needs onnxruntime: {EXTRA_HINT}") from None
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process first is for static quantization
    for part in ("encoder", "decoder"):
        quantize_dynamic(str(out / GRAPHS["fp32"][part]), str(out / GRAPHS["int8"][part]),
                         weight_type=QuantType.QInt8)


def export_onnx(loaded: Loaded, out: str | Path, int8: bool = False, used_ema: bool = True) -> Path:
    """Export `loaded` (model.load) into folder `out`; returns the spec file's path. ValueError for a
    recognizer kind that cannot be exported yet."""
    rec = loaded.recognizer
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    decoder_kind = _export_graphs(loaded, out)
    if int8:
        quantize_int8(out)
    spec = {
        "format": EXPORT_FORMAT, "kind": rec.kind, "decoder_graph": decoder_kind,
        "model_config": asdict(rec.cfg), "render": loaded.render.to_dict(), "labels": loaded.labels.to_dict(),
        "train_config": loaded.state.get("train_config", {}), "step": loaded.step, "weights": "ema" if used_ema and loaded.state.get("ema") else "raw",
        "samplers": {"available": list(exported_samplers(rec.kind)), "default": rec.default_sampler, "T": 10, "seed": 0},
        "graphs": {p: g for p, g in GRAPHS.items() if p == "fp32" or int8},
        "precision": "int8" if int8 else "fp32", "opset": OPSET, "torch": str(torch.__version__),
    }
    path = out / SPEC_FILE
    path.write_text(json.dumps(spec, indent=1))
    return path


def exported_samplers(kind: str) -> tuple[str, ...]:
    """What the NumPy loops decode with: every GryphOne sampler; greedy for the AR baseline (no beam yet)."""
    return ("remask", "remask-keep", "mask-predict") if kind == "diffusion" else ("greedy",)
