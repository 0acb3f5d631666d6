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
from .onnx_graphs import MEM_AXES, OnnxGraphs
from .onnx_runtime import ENCODER_OUTPUTS, EXPORT_FORMAT, EXTRA_HINT, GRAPHS, SPEC_FILE

OPSET = 17


def _export(module: torch.nn.Module, args: tuple, path: Path, names: tuple[list[str], list[str]],
            dynamic: dict[str, dict[int, str]]) -> None:
    with warnings.catch_warnings():  # the TorchScript exporter says it is the legacy one; it is the one that
        warnings.simplefilter("ignore")  # needs no onnxscript, and its graphs are what ONNX Runtime reads
        torch.onnx.export(module, args, str(path), dynamo=False, input_names=names[0], output_names=names[1],
                          dynamic_axes=dynamic, opset_version=OPSET, do_constant_folding=True)


def _export_graphs(loaded: Loaded, out: Path) -> OnnxGraphs:
    """encoder.onnx and decoder.onnx, from the recognizer's export hook (which refuses a recognizer
    without one before anything is written)."""
    rec = loaded.recognizer
    plan = rec.onnx_graphs()
    images = torch.rand(2, 1, *loaded.render.size)
    names = ENCODER_OUTPUTS[plan.graph]  # what the reader's loop for this graph reads
    with torch.no_grad():
        mem = dict(zip(names, plan.memory(images)))
    out_axes = {name: MEM_AXES if name in ("mem_k", "mem_v") else {0: "batch"} for name in names}
    _export(plan.memory, (images,), out / GRAPHS["fp32"]["encoder"], (["images"], list(names)),
            {"images": {0: "batch"}, **out_axes})
    args, inputs, outputs, axes = plan.examples(rec, mem)
    _export(plan.step, args, out / GRAPHS["fp32"]["decoder"], (inputs, outputs), axes)
    return plan


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
    recognizer without an export hook (Recognizer.onnx_graphs). An ensemble (model/ensemble.py) exports
    each member into its own subfolder (m1, m2, ...) beside a gryphone-ensemble.json naming them."""
    if loaded.members:
        return export_ensemble(loaded, Path(out), int8, used_ema)
    rec = loaded.recognizer
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plan = _export_graphs(loaded, out)
    if int8:
        quantize_int8(out)
    spec = {
        "format": EXPORT_FORMAT, "kind": rec.kind, "decoder_graph": plan.graph,
        "model_config": asdict(rec.cfg), "render": loaded.render.to_dict(), "labels": loaded.labels.to_dict(),
        "train_config": loaded.state.get("train_config", {}), "step": loaded.step, "weights": "ema" if (used_ema and loaded.state.get("ema")) or loaded.state.get("weights") == "ema" else "raw",
        "samplers": {"available": list(plan.samplers), "T": 10, "seed": 0,
                     "default": rec.default_sampler if rec.default_sampler in plan.samplers else plan.samplers[0]},
        "graphs": {p: g for p, g in GRAPHS.items() if p == "fp32" or int8},
        "precision": "int8" if int8 else "fp32", "opset": OPSET, "torch": str(torch.__version__),
    }
    stamp_metadata(out, spec)
    path = out / SPEC_FILE
    path.write_text(json.dumps(spec, indent=1))
    (out / "README.md").write_text(folder_readme(spec))
    return path


def export_ensemble(loaded: Loaded, out: Path, int8: bool = False, used_ema: bool = True) -> Path:
    """Each member's export in out/mK, and the ensemble file that lists them (its default decoder kept)."""
    from .ensemble_spec import ENSEMBLE_FILE, write_ensemble

    out.mkdir(parents=True, exist_ok=True)
    names = []
    for k, member in enumerate(loaded.members or [], 1):
        export_onnx(member, out / f"m{k}", int8, used_ema)
        names.append(f"m{k}")
    rec = loaded.recognizer
    return write_ensemble(out / ENSEMBLE_FILE, names, rec.default_sampler, rec.default_beam,
                          T=getattr(rec, "default_T", 10))


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
