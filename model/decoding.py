"""How a recognizer's raw decoding becomes LaTeX, written once for the PyTorch path and the exported
(ONNX Runtime) path: the decoder settings (`DecodeSpec`), their check, and the ending that repairs
outputs that do not parse and computes confidences. NumPy only, so an exported model decodes without
torch.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tokenizer.vocab import SATVocab, TokenVocab

from .confidence import sat_confidence, token_confidence
from .repair import delete_until_valid, is_valid, repair_ids


@dataclass(frozen=True)
class DecodeSpec:
    """How to decode: a diffusion sampler with T steps, or an autoregressive one with a beam width."""

    sampler: str = "remask"   # remask | remask-keep | mask-predict (GryphOne); greedy | beam (AR family)
    T: int = 10
    beam: int = 1
    seed: int = 0
    valid: bool = True        # repair outputs that do not parse (model/repair.py)
    bidirectional: bool = True  # a beam reranked by a bidirectional reader's right-to-left reading, where it has one

    @property
    def name(self) -> str:
        if self.sampler in ("greedy", "beam"):  # every token recognizer's: the decoder, not whose it is
            return "greedy" if self.beam <= 1 else f"beam{self.beam}" + ("" if self.bidirectional else "-l2r")
        return f"{self.sampler}-T{self.T}"


def eval_specs(step_samplers: tuple[str, ...], Ts: tuple[int, ...], samplers: tuple[str, ...], seeds: int,
               beams: tuple[int, ...], valid: bool = True) -> list[DecodeSpec]:
    """The decoders an evaluation scores. A recognizer with step samplers (GryphOne's): each of
    `samplers` at each T, the random re-mask ones over `seeds` seeds where T > 1; any other: greedy and
    each beam width."""
    if not step_samplers:
        return [DecodeSpec("greedy" if b <= 1 else "beam", beam=b, valid=valid) for b in beams]
    specs = []
    for sampler in samplers:
        for T in Ts:
            n = seeds if (sampler.startswith("remask") and T > 1) else 1
            specs += [DecodeSpec(sampler, T=T, seed=s, valid=valid) for s in range(n)]
    return specs


def check_decode_spec(kind: str, samplers: tuple[str, ...], spec: DecodeSpec) -> None:
    """A clear error for a decoder a recognizer does not have, or impossible settings."""
    if spec.sampler not in samplers:
        raise ValueError(f"{kind} decodes with {', '.join(samplers)}; got sampler {spec.sampler!r}")
    if spec.T < 1 or spec.beam < 1:
        raise ValueError(f"T and beam must be >= 1, got T={spec.T}, beam={spec.beam}")

def finish_tokens(vocab: TokenVocab, ids: list[list[int]], probs: list[list[float]] | None, spec: DecodeSpec,
                  stats: Counter | None = None, confidences: list | None = None) -> list[str]:
    """Decoded token rows -> LaTeX (repaired by deletion when spec.valid), counting into `stats` and
    appending each row's confidence (None without `probs`) to `confidences`: the one ending that the
    PyTorch and the ONNX Runtime paths share."""
    stats = stats if stats is not None else Counter()
    stats["outputs"] += len(ids)
    out = []
    for i, row in enumerate(ids):
        text = vocab.decode(row)
        if not is_valid(text):  # no per-position alternatives here: the deletion repair only
            stats["raw_invalid"] += 1
            if spec.valid:
                stats["last_resort"] += 1
                text = delete_until_valid(text)
        out.append(text)
        if confidences is not None:
            confidences.append(None if probs is None else token_confidence(row, probs[i], vocab.EOS))
    return out

def finish_sat(vocab: SATVocab, sym: list[list[int]], mod: list[list[int]], s_log: np.ndarray, m_log: np.ndarray,
               spec: DecodeSpec, stats: Counter | None = None, confidences: list | None = None) -> list[str]:
    """Decoded SAT rows and the last step's log-probabilities [B, L, V] -> LaTeX (repaired when
    spec.valid), counts into `stats`, confidences appended: shared by the PyTorch and ONNX paths."""
    stats = stats if stats is not None else Counter()
    stats["outputs"] += len(sym)
    s_log, m_log = np.asarray(s_log, dtype=np.float32), np.asarray(m_log, dtype=np.float32)
    if confidences is not None:
        confidences += [sat_confidence(s, s_log[i], m_log[i], vocab.PAD) for i, s in enumerate(sym)]
    if not spec.valid:
        texts = [vocab.decode(s, m) for s, m in zip(sym, mod)]
        stats["raw_invalid"] += sum(not is_valid(t) for t in texts)
        return texts
    return [repair_ids(vocab, s, m, s_log[i], m_log[i], stats) for i, (s, m) in enumerate(zip(sym, mod))]
