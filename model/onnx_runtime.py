"""An exported folder (model/onnx_export.py) read back as a recognizer: ONNX Runtime runs the graphs,
NumPy runs the decoding loop (model/onnx_samplers.py), and the ending (repair, confidences, counts)
is the PyTorch path's own, so `recognize(images, spec, ...)` answers as a checkpoint's does.

`model.load(folder)` returns it inside the same `Loaded` as a checkpoint, so evaluation and
prediction take either without branching. The folder is untrusted input like a checkpoint: the
JSON is type-checked, graph names must be plain file names inside the folder, and a graph that
points at external data files is refused (ONNX Runtime would read whatever path it names).
Needs the `onnx` extra (onnxruntime, onnx).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from datasets_prep.local_files import FileRefused, read_capped
from datasets_prep.render_spec import RenderSpec, RenderSpecError
from tokenizer.label_spec import LabelSpec, LabelSpecError

from .decoding import DecodeSpec, check_decode_spec, finish_sat, finish_tokens
from .errors import CheckpointError
from .onnx_samplers import beam, bidirectional_beam, greedy, log_softmax, mask_predict, no_mask, remask
from .spec_files import read_spec_json

EXPORT_FORMAT = "gryphone-onnx-1"
SPEC_FILE = "gryphone-onnx.json"
GRAPHS = {"fp32": {"encoder": "encoder.onnx", "decoder": "decoder.onnx"},
          "int8": {"encoder": "encoder.int8.onnx", "decoder": "decoder.int8.onnx"}}
ENCODER_OUTPUTS = {"sat-step": ("mem_k", "mem_v"), "ar-cached-step": ("mem_k", "mem_v"),
                   "posformer-step": ("mem_k", "mem_v"), "hvt-step": ("mem_values", "mem_keys", "h", "c")}
STEP_STATE = {"ar-cached-step": ("past_k", "past_v"), "posformer-step": ("past_k", "past_v", "coverage", "pending"),
              "hvt-step": ("h", "c", "context", "coverage")}
BATCH_AXIS = {"ar-cached-step": 1, "posformer-step": 1, "hvt-step": 0}  # caches are [layers, batch, ...]
MAX_GRAPH_BYTES = 2 * 1024 ** 3   # protobuf's own limit for a graph with its weights inside
EXTRA_HINT = "pip install onnx onnxruntime (in a checkout: pip install -e '.[onnx]')"


def is_export(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / SPEC_FILE).is_file()


class ExportedRecognizer:
    """The seam's decoding half (model/recognizer.py) over two ONNX Runtime sessions."""

    default_beam = 1   # as Recognizer's: an export's default sampler is greedy or a step sampler

    def __init__(self, spec: dict, cfg: SimpleNamespace, render: RenderSpec, labels: LabelSpec, sessions: tuple):
        self.kind, self.cfg, self.render, self.labels = spec["kind"], cfg, render, labels
        self.label_kind = labels.kind
        self.samplers = tuple(spec["samplers"]["available"])
        self.default_sampler = spec["samplers"]["default"]
        self.state = {"format": EXPORT_FORMAT, "step": spec["step"], "train_config": spec["train_config"]}
        self.precision = spec["precision"]
        self.encoder, self.decoder = sessions
        self.graph = spec["decoder_graph"]
        self.step_samplers = self.samplers if self.graph == "sat-step" else ()  # its loops refine over T steps
        self.decoder_inputs = {i.name for i in self.decoder.get_inputs()}

    def targets(self, latex: str) -> dict[str, np.ndarray]:
        """As the recognizer class encodes labels (evaluation reads them; the method uses cfg and labels only).
        Imports the recognizer classes, and so torch: decoding alone never calls it."""
        from .registry import recognizer_class

        return recognizer_class(self.kind).targets(self, latex)

    def check_spec(self, spec: DecodeSpec) -> None:
        check_decode_spec(f"{self.kind} (ONNX export)", self.samplers, spec)

    def memory(self, images: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(ENCODER_OUTPUTS[self.graph], self.encoder.run(None, {"images": images})))

    def recognize(self, images, spec: DecodeSpec | None = None, history: list | None = None,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
        """images [B, 1, H, W] (tensor or array) -> LaTeX, as Recognizer.recognize (no `history`)."""
        spec = spec or DecodeSpec(self.default_sampler)
        self.check_spec(spec)
        if hasattr(images, "detach"):  # a torch tensor (torch itself is never imported here)
            images = images.detach().cpu().numpy()
        images = np.ascontiguousarray(images, dtype=np.float32)
        mem = self.memory(images)
        b = images.shape[0]
        if self.label_kind == "sat":
            return decode_sat(self, mem, b, spec, stats, confidences)
        return decode_tokens(self, mem, b, spec, stats, confidences)

    # the refinement hook decode_sat runs on (model/onnx_ensemble.py averages its members')
    def sat_step(self, mem: dict[str, np.ndarray]):
        """One refinement step of the decoder graph over `mem`: (symbols, modifiers) -> their logits."""
        def step(sym: np.ndarray, mod: np.ndarray):
            return self.decoder.run(None, {"symbols": sym, "modifiers": mod, **mem})
        return step

    # the token-decoding hook decode_tokens runs on (model/onnx_ensemble.py composes its members')
    def initial_state(self, mem: dict[str, np.ndarray]) -> tuple:
        return initial_state(self.graph, mem)

    def image_rows(self, mem: dict[str, np.ndarray], i: int, width: int) -> dict[str, np.ndarray]:
        return {k: np.repeat(rows_of(v, [i], self.graph), width, axis=BATCH_AXIS[self.graph]) for k, v in mem.items()}

    def reorder(self, state: tuple, src: np.ndarray) -> tuple:
        return tuple(rows_of(x, src, self.graph) for x in state)

    def right_to_left(self, mem: dict[str, np.ndarray]):
        """(the hook that reads right to left, its memory): a bidirectional reader's own graphs, started
        at EOS; None for a reader that learned one direction."""
        return (self, mem) if getattr(self.cfg, "bidirectional", False) else None

    def token_step(self, mem: dict[str, np.ndarray]):
        """One token step of the decoder graph over the rows of `mem` (the encoder's outputs)."""
        names = STEP_STATE[self.graph]
        feeds = {k: v for k, v in mem.items() if k.startswith("mem_")}
        takes_position = "position" in self.decoder_inputs

        def token_step(token: np.ndarray, position: np.ndarray, state: tuple):
            inputs = {"token": token, **dict(zip(names, state)), **feeds}
            if takes_position:
                inputs["position"] = position
            logits, *rest = self.decoder.run(None, inputs)
            return logits, tuple(rest)
        return token_step


def decode_sat(rec, mem, images: int, spec: DecodeSpec, stats: Counter | None, confidences: list | None) -> list[str]:
    """A GryphOne export's sampler over its hook `sat_step(mem)` (what `memory` gave for `images` images)."""
    step = rec.sat_step(mem)
    if spec.sampler == "mask-predict":
        sym, mod, logits = mask_predict(step, images, rec.cfg.max_len, spec.T)
    else:
        sym, mod, logits = remask(step, images, rec.cfg.max_len, spec.T, spec.seed, spec.sampler == "remask-keep")
    s_log, m_log = log_softmax(no_mask(logits[0])), log_softmax(no_mask(logits[1]))
    return finish_sat(rec.labels.vocab, sym.tolist(), mod.tolist(), s_log, m_log, spec, stats, confidences)


def decode_tokens(rec, mem, images: int, spec: DecodeSpec, stats: Counter | None,
                  confidences: list | None) -> list[str]:
    """Greedy or beam decoding of a token recognizer's export through its hook: `token_step(mem)`,
    `initial_state(mem)`, `image_rows(mem, i, width)` (beam search runs one image at a time over `width`
    rows, as model.search.beam_per_image) and `reorder(state, src)`; `mem` is what `memory` gave for
    `images` images."""
    width = spec.beam if spec.sampler == "beam" else 1
    length_penalty = getattr(rec.cfg, "length_penalty", 1.0)
    if width <= 1:
        ids, probs = greedy(rec.token_step(mem), images, rec.cfg.max_len, rec.initial_state(mem))
        return finish_tokens(rec.labels.vocab, ids.tolist(), probs.tolist(), spec, stats, confidences)
    back = rec.right_to_left(mem) if spec.bidirectional else None
    rows, row_probs = [], []
    for i in range(images):
        if back is not None:  # model.search.search_ids' rule: rerank both directions' candidates
            _, ids, probs = bidirectional_beam(image_reader(rec, mem, i), image_reader(*back, i), width,
                                               rec.cfg.max_len, length_penalty)
        else:
            step, state, reorder = image_reader(rec, mem, i)(width)
            hyps = beam(step, width, rec.cfg.max_len, state, reorder, length_penalty)
            _, ids, probs = max(hyps, key=lambda h: h[0])  # the first of equals, as model.search.best
        rows.append(ids), row_probs.append(probs)
    return finish_tokens(rec.labels.vocab, rows, row_probs, spec, stats, confidences)


def image_reader(rec, mem, i: int):
    """onnx_samplers' Reader for image i of a token hook: rows -> (step, start state, reorder)."""
    def reader(rows: int):
        one = rec.image_rows(mem, i, rows)
        return rec.token_step(one), rec.initial_state(one), rec.reorder
    return reader


def rows_of(x: np.ndarray, rows, graph: str) -> np.ndarray:
    """Rows `rows` of one memory or state array of a token graph (its batch axis: BATCH_AXIS)."""
    return np.take(x, np.asarray(rows, dtype=np.int64), axis=BATCH_AXIS[graph])


def initial_state(graph: str, mem: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The decoder state before the first token: empty caches and zero coverage; HVT's (h0, c0) come
    from the encoder graph, its context and coverage start at zero."""
    if graph == "hvt-step":
        values = mem["mem_values"]
        zeros = np.zeros((values.shape[0], values.shape[1]), dtype=np.float32)
        return mem["h"], mem["c"], np.zeros((values.shape[0], values.shape[2]), dtype=np.float32), zeros
    layers, batch, heads, n, head_dim = mem["mem_k"].shape
    past = np.zeros((layers, batch, heads, 0, head_dim), dtype=np.float32)
    if graph == "ar-cached-step":
        return past, past.copy()
    cover = np.zeros((layers, batch, 2 * heads, n), dtype=np.float32)
    return past, past.copy(), cover, cover.copy()


def read_export(folder: str | Path, device: str = "cpu", precision: str | None = None,
                threads: int = 0) -> ExportedRecognizer:
    """The recognizer an export folder holds; CheckpointError naming the file on anything unusable.
    precision: "fp32" (the default: it decodes exactly what the checkpoint decodes) or "int8" (read only
    when asked for: it changes some outputs); threads: ONNX Runtime's intra-op threads (0: its default)."""
    folder = Path(folder)
    spec, cfg, render, labels = _read_spec(folder / SPEC_FILE)
    precision = precision or "fp32"
    graphs = spec["graphs"].get(precision)
    if not isinstance(graphs, dict):
        raise CheckpointError(f"{folder / SPEC_FILE}: the export has no {precision} graphs "
                              f"(it has {', '.join(spec['graphs'])})")
    sessions = tuple(_session(folder, graphs.get(part), device, threads) for part in ("encoder", "decoder"))
    spec["precision"] = precision
    return ExportedRecognizer(spec, cfg, render, labels, sessions)


def _config(model_config: object) -> SimpleNamespace:
    """The recognizer's config as the export stored it, read without the recognizer classes (which
    need torch): decoding uses its kind and label window; both are checked."""
    if not isinstance(model_config, dict) or not all(isinstance(k, str) for k in model_config):
        raise ValueError("model_config must be an object")
    if not isinstance(model_config.get("kind"), str) or not model_config["kind"]:
        raise ValueError(f"model_config kind {model_config.get('kind')!r} is not a recognizer's name")
    max_len = model_config.get("max_len")
    if not isinstance(max_len, int) or isinstance(max_len, bool) or not 1 <= max_len <= 100_000:
        raise ValueError(f"model_config max_len {max_len!r} is not a window length")
    return SimpleNamespace(**model_config)


def _read_spec(path: Path) -> tuple[dict, SimpleNamespace, RenderSpec, LabelSpec]:
    spec = read_spec_json(path, 64 * 1024 * 1024, EXPORT_FORMAT, "ONNX export")
    try:
        if spec["decoder_graph"] not in ENCODER_OUTPUTS:
            raise ValueError(f"decoder graph {spec['decoder_graph']!r} is not one of {', '.join(ENCODER_OUTPUTS)}")
        cfg = _config(spec["model_config"])
        render, labels = RenderSpec.from_dict(spec["render"]), LabelSpec.from_dict(spec["labels"])
        samplers = spec["samplers"]
        if not (isinstance(samplers.get("available"), list) and samplers.get("default") in samplers["available"]):
            raise ValueError("samplers: 'available' must list the 'default'")
        if not isinstance(spec["graphs"], dict) or spec.get("precision") not in spec["graphs"]:
            raise ValueError("graphs must map each precision (fp32, int8) to its encoder and decoder")
        int(spec["step"]), dict(spec["train_config"])
    except (KeyError, TypeError, AttributeError, ValueError, RenderSpecError,
            LabelSpecError) as exc:
        raise CheckpointError(f"{path}: cannot read the export's specs: {exc}") from None
    return spec, cfg, render, labels


def _session(folder: Path, name: object, device: str, threads: int):
    """An ONNX Runtime session of one graph file of the folder, checked before it is handed over."""
    where = folder / str(name)
    if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith("."):
        raise CheckpointError(f"{folder / SPEC_FILE}: graph name {ascii(name)[:60]} is not a plain file name")
    try:
        import onnx
        import onnxruntime as ort
        from onnx.external_data_helper import uses_external_data
    except ImportError:
        raise CheckpointError(f"{folder}: reading an ONNX export needs onnxruntime and onnx: {EXTRA_HINT}") from None
    try:
        data = read_capped(where, MAX_GRAPH_BYTES, root=folder)
        graph = onnx.load_from_string(data)
    except FileRefused as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    except Exception as exc:  # protobuf's decode errors have no common base
        raise CheckpointError(f"{where}: not an ONNX graph: {type(exc).__name__}: {exc}") from None
    if any(uses_external_data(t) for t in graph.graph.initializer):
        raise CheckpointError(f"{where}: refused: the graph keeps weights in external files")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    providers = ["CPUExecutionProvider"]
    if device == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    try:
        return ort.InferenceSession(data, options, providers=providers)
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise CheckpointError(f"{where}: ONNX Runtime cannot load it: {str(exc).splitlines()[0][:200]}") from None
