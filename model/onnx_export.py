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
from .onnx_graphs import decoder_graph, memory_graph
from .onnx_runtime import ENCODER_OUTPUTS, EXPORT_FORMAT, EXPORTABLE, EXTRA_HINT, GRAPHS, SPEC_FILE

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
    memory = memory_graph(rec)
    images = torch.rand(2, 1, *loaded.render.size)
    kind = EXPORTABLE[rec.kind]
    names = ENCODER_OUTPUTS[kind]
    with torch.no_grad():
        mem = dict(zip(names, memory(images)))
    out_axes = {name: MEM_AXES if name in ("mem_k", "mem_v") else {0: "batch"} for name in names}
    _export(memory, (images,), out / GRAPHS["fp32"]["encoder"], (["images"], list(names)),
            {"images": {0: "batch"}, **out_axes})
    args, inputs, outputs, axes = _STEP_EXAMPLES[kind](rec, mem)
    _export(step, args, out / GRAPHS["fp32"]["decoder"], (inputs, outputs), axes)
    return kind


MEM_AXES = {1: "batch", 3: "memory"}


def _sat_step(rec, mem: dict) -> tuple:
    ids = torch.full((2, rec.cfg.max_len), 1, dtype=torch.long)
    return ((ids, ids.clone(), mem["mem_k"], mem["mem_v"]), ["symbols", "modifiers", "mem_k", "mem_v"],
            ["sym_logits", "mod_logits"],
            {"symbols": {0: "batch"}, "modifiers": {0: "batch"}, "mem_k": MEM_AXES, "mem_v": MEM_AXES,
             "sym_logits": {0: "batch"}, "mod_logits": {0: "batch"}})


def _cached_step(rec, mem: dict) -> tuple:
    """The AR baseline's and PosFormer's step: token, position, the self-attention cache (and
    PosFormer's coverage and pending maps)."""
    depth, _, heads, n, head_dim = mem["mem_k"].shape
    past = torch.zeros(depth, 2, heads, 1, head_dim)
    cache, grown = {1: "batch", 3: "past"}, {1: "batch", 3: "past_plus_one"}
    args = [torch.ones(2, 1, dtype=torch.long), torch.tensor([1]), past, past.clone()]
    inputs, outputs = ["token", "position", "past_k", "past_v"], ["logits", "new_k", "new_v"]
    axes = {"token": {0: "batch"}, "past_k": cache, "past_v": cache, "logits": {0: "batch"}, "new_k": grown,
            "new_v": grown}
    if rec.kind == "posformer":
        cover = torch.zeros(depth, 2, 2 * heads, n)
        args += [cover, cover.clone()]
        inputs += ["coverage", "pending"]
        outputs += ["new_coverage", "new_pending"]
        axes.update({k: {1: "batch", 3: "memory"} for k in ("coverage", "pending", "new_coverage", "new_pending")})
    axes.update({"mem_k": MEM_AXES, "mem_v": MEM_AXES})
    return tuple(args + [mem["mem_k"], mem["mem_v"]]), inputs + ["mem_k", "mem_v"], outputs, axes


def _lstm_step(rec, mem: dict) -> tuple:
    b, n, d = mem["mem_values"].shape
    state = (mem["h"], mem["c"], torch.zeros(b, d), torch.zeros(b, n))
    inputs = ["token", "h", "c", "context", "coverage", "mem_values", "mem_keys"]
    outputs = ["logits", "new_h", "new_c", "new_context", "new_coverage"]
    return ((torch.ones(b, 1, dtype=torch.long), *state, mem["mem_values"], mem["mem_keys"]), inputs, outputs,
            {name: {0: "batch"} for name in inputs + outputs})


_STEP_EXAMPLES = {"sat-step": _sat_step, "ar-cached-step": _cached_step, "posformer-step": _cached_step,
                  "hvt-step": _lstm_step}


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
        "train_config": loaded.state.get("train_config", {}), "step": loaded.step, "weights": "ema" if (used_ema and loaded.state.get("ema")) or loaded.state.get("weights") == "ema" else "raw",
        "samplers": {"available": list(exported_samplers(rec.kind)), "default": rec.default_sampler, "T": 10, "seed": 0,
                     "steps": [s for s in exported_samplers(rec.kind) if s in rec.step_samplers]},
        "graphs": {p: g for p, g in GRAPHS.items() if p == "fp32" or int8},
        "precision": "int8" if int8 else "fp32", "opset": OPSET, "torch": str(torch.__version__),
    }
    stamp_metadata(out, spec)
    path = out / SPEC_FILE
    path.write_text(json.dumps(spec, indent=1))
    (out / "README.md").write_text(folder_readme(spec))
    return path


def stamp_metadata(out: Path, spec: dict) -> None:
    """Each graph carries what reading it needs (ONNX metadata_props, `gryphone.*`): the recognizer kind,
    its part, the vocabulary, the render spec and the samplers, so a graph copied out of its folder still
    says what it is and how its input is drawn."""
    import onnx

    props = {"gryphone.format": spec["format"], "gryphone.kind": spec["kind"],
             "gryphone.decoder_graph": spec["decoder_graph"], "gryphone.step": str(spec["step"]),
             "gryphone.labels": json.dumps(spec["labels"]), "gryphone.render": json.dumps(spec["render"]),
             "gryphone.samplers": json.dumps(spec["samplers"])}
    for precision, graphs in spec["graphs"].items():
        for part, name in graphs.items():
            model = onnx.load(str(out / name))
            onnx.helper.set_model_props(model, {**props, "gryphone.part": part, "gryphone.precision": precision})
            onnx.save(model, str(out / name))


def folder_readme(spec: dict) -> str:
    """How to read the folder without torch: gryphone's `model` package reads it with ONNX Runtime and
    NumPy (model/onnx_runtime.py; torch is never imported on that path), `datasets_prep.canvas` turns
    an image or strokes into the model's input."""
    samplers = ", ".join(spec["samplers"]["available"])
    h, w = spec["render"]["size"] if "size" in spec["render"] else ("H", "W")
    return f"""# A gryphone recognizer exported to ONNX

`{spec['kind']}` recognizer, step {spec['step']}, {spec['weights']} weights; graphs: {', '.join(spec['graphs'])}
(`{SPEC_FILE}` holds the render spec, the vocabulary and the samplers: {samplers}).

Decoding needs ONNX Runtime, `onnx`, NumPy and Pillow (cairo only to draw strokes), and gryphone's
own `model`, `tokenizer` and `datasets_prep` packages, **not torch**:

```bash
pip install onnxruntime onnx numpy pillow pylatexenc && pip install --no-deps gryphone
```

```python
from model import load, DecodeSpec                 # torch is not imported on this path
from datasets_prep.canvas import fit_image, draw_ink

loaded = load("THIS_FOLDER")
image = fit_image(loaded.render, open("formula.png", "rb").read())[None, None]   # 1 x 1 x {h} x {w}
print(loaded.recognizer.recognize(image, DecodeSpec("{spec['samplers']['default']}", T=10))[0])
```

Or from the command line, with gryphone installed: `gryphone recognize --ckpt THIS_FOLDER formula.png`.
The fp32 graphs decode exactly what the checkpoint decodes; int8 graphs, where present, are read only
when asked for (`read_export(folder, precision="int8")`).
"""


def exported_samplers(kind: str) -> tuple[str, ...]:
    """What the NumPy loops decode with: every GryphOne sampler; greedy for the token recognizers (no
    beam search yet)."""
    return ("remask", "remask-keep", "mask-predict") if kind == "diffusion" else ("greedy",)
