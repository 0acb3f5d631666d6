"""An ensemble of exported recognizers (model/ensemble.py's and model/sat_ensemble.py's rule, torch-free):
each member's ONNX graphs run as in model/onnx_runtime.py, and at every step their log-probabilities
are averaged. For token recognizers the state carried between steps is the tuple of the members'
states, so greedy and beam search are the same NumPy loops (onnx_runtime.decode_tokens) as for one
model; for GryphOne members each refinement step is the average of theirs (onnx_runtime.decode_sat)."""
from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np

from .decoding import DecodeSpec, check_decode_spec
from .ensemble_spec import SAT_SAMPLERS, TOKEN_SAMPLERS, EnsembleSpec, check_members, ensemble_title
from .onnx_runtime import ExportedRecognizer, decode_sat, decode_tokens
from .onnx_samplers import log_softmax, no_mask


class TokenHooks:
    """decode_tokens' hook over several exported token recognizers: each member's, over a list of their
    memories / a tuple of their states, their log-probabilities averaged at every step."""

    def __init__(self, members: list[ExportedRecognizer]):
        self.members = members

    def memory(self, images: np.ndarray) -> list[dict[str, np.ndarray]]:
        return [m.memory(images) for m in self.members]

    def initial_state(self, mem: list) -> tuple:
        return tuple(m.initial_state(x) for m, x in zip(self.members, mem))

    def image_rows(self, mem: list, i: int, width: int) -> list:
        return [m.image_rows(x, i, width) for m, x in zip(self.members, mem)]

    def reorder(self, state: tuple, src: np.ndarray) -> tuple:
        return tuple(m.reorder(s, src) for m, s in zip(self.members, state))

    def right_to_left(self, mem: list):
        """(the members that read right to left as one ensemble, their memories), or None: a reranking
        reads backwards only with the bidirectional members (model/ensemble.py's rule)."""
        both = [j for j, (m, x) in enumerate(zip(self.members, mem)) if m.right_to_left(x) is not None]
        if not both:
            return None
        return TokenHooks([self.members[j] for j in both]), [mem[j] for j in both]

    def token_step(self, mem: list):
        steps = [m.token_step(x) for m, x in zip(self.members, mem)]

        def step(token: np.ndarray, position: np.ndarray, state: tuple):
            outs = [s(token, position, st) for s, st in zip(steps, state)]
            logp = np.mean([log_softmax(o[0].astype(np.float32)) for o in outs], axis=0)
            return logp, tuple(o[1] for o in outs)
        return step


class ExportedEnsemble(TokenHooks):
    """The seam's decoding half over several ExportedRecognizers, as EnsembleRecognizer (token
    recognizers) or SATEnsemble (GryphOne) over checkpoints."""

    kind = "ensemble"

    def __init__(self, members: list[ExportedRecognizer], spec: EnsembleSpec, names: list[str]):
        check_members(members, names)
        super().__init__(members)
        self.title = ensemble_title([m.kind for m in members])
        self.render, self.labels = members[0].render, members[0].labels
        self.label_kind = members[0].label_kind
        self.cfg = SimpleNamespace(kind="ensemble", max_len=min(m.cfg.max_len for m in members),
                                   member_kinds=tuple(m.kind for m in members))
        own = SAT_SAMPLERS if self.label_kind == "sat" else TOKEN_SAMPLERS
        self.samplers = tuple(s for s in own if all(s in m.samplers for m in members))
        self.step_samplers = self.samplers if self.label_kind == "sat" else ()
        if spec.sampler not in own:
            raise ValueError(f"sampler {spec.sampler!r}: its members decode with {', '.join(self.samplers)}")
        # an export without beam search (PosFormer's) falls back to greedy
        self.default_sampler = spec.sampler if spec.sampler in self.samplers else self.samplers[0]
        self.default_beam, self.default_T = spec.beam, spec.T
        self.precision = members[0].precision

    def targets(self, latex: str) -> dict[str, np.ndarray]:
        if self.label_kind == "sat":
            return self.members[0].targets(latex)
        return {"tokens": self.labels.vocab.encode(latex, self.cfg.max_len)}

    def check_spec(self, spec: DecodeSpec) -> None:
        check_decode_spec("ensemble (ONNX export)", self.samplers, spec)

    def recognize(self, images, spec: DecodeSpec | None = None, history: list | None = None,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
        spec = spec or DecodeSpec(self.default_sampler, T=self.default_T)
        self.check_spec(spec)
        if hasattr(images, "detach"):
            images = images.detach().cpu().numpy()
        images = np.ascontiguousarray(images, dtype=np.float32)
        if self.label_kind == "sat":
            return decode_sat(self, self.memory(images), images.shape[0], spec, stats, confidences)
        return decode_tokens(self, self.memory(images), images.shape[0], spec, stats, confidences)

    def sat_step(self, mem: list):
        steps = [m.sat_step(x) for m, x in zip(self.members, mem)]

        def step(sym: np.ndarray, mod: np.ndarray):
            outs = [s(sym, mod) for s in steps]
            return tuple(np.mean([log_softmax(no_mask(o[k])) for o in outs], axis=0) for k in (0, 1))
        return step

def read_any_export(folder, device: str = "cpu", precision: str | None = None, threads: int = 0):
    """model.onnx_runtime.read_export for a train.export_onnx folder of either sort: one model's, or an
    ensemble's (its members read at `precision` with `threads` each)."""
    from .ensemble_spec import ensemble_file, read_ensemble
    from .onnx_runtime import read_export

    spec_file = ensemble_file(folder)
    if spec_file is None:
        return read_export(folder, device, precision, threads)
    spec = read_ensemble(spec_file)
    members = [read_export(m, device, precision, threads) for m in spec.members]
    try:
        return ExportedEnsemble(members, spec, list(spec.names))
    except ValueError as exc:
        from .errors import CheckpointError
        raise CheckpointError(f"{spec_file}: {exc}") from None
