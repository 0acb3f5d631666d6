"""Load a trained recognizer from its checkpoint and turn images into LaTeX.

Shared by evaluation, prediction, the demo and the benchmarks, so every path decodes the same way:
ids -> LaTeX through the vocabulary saved in the checkpoint (scores are computed on decoded LaTeX,
never on raw modifier ids, as docs/sat.md requires).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from model import ModelConfig, build_model
from model.diffusion import final_log_probs
from tokenizer import SATVocab, TokenVocab

from .checkpoint import CheckpointError, load_checkpoint
from .valid_decode import delete_until_valid, is_valid, repair_ids


@dataclass(frozen=True)
class DecoderSpec:
    """How to decode: the diffusion samplers with T steps, or the AR baseline with a beam width."""

    sampler: str = "remask"   # remask | remask-keep | mask-predict | greedy | beam
    T: int = 10
    beam: int = 1
    seed: int = 0
    valid: bool = True        # repair outputs that do not parse (train/valid_decode.py)

    @property
    def name(self) -> str:
        if self.sampler in ("greedy", "beam"):
            return "ar-greedy" if self.beam <= 1 else f"ar-beam{self.beam}"
        return f"{self.sampler}-T{self.T}"


def vocab_from_dict(d: dict) -> SATVocab | TokenVocab:
    kind = d.get("kind")
    if kind == "token":
        return TokenVocab.from_dict(d["data"])
    if kind == "sat":
        return SATVocab.from_dict(d["data"])
    raise ValueError(f"unknown vocabulary kind {kind!r}")


def vocab_to_dict(vocab: SATVocab | TokenVocab) -> dict:
    return {"kind": "token" if isinstance(vocab, TokenVocab) else "sat", "data": vocab.to_dict()}


def load_model(path, device: str = "cpu", use_ema: bool = True):
    """(model in eval mode, vocabulary, ModelConfig, checkpoint dict); CheckpointError on any mismatch."""
    state = load_checkpoint(path)
    try:
        mcfg = ModelConfig.from_dict(state["train_config"]["model"])
        vocab = vocab_from_dict(state["vocab"])
        model = build_model(mcfg)
        weights = state.get("ema") if use_ema and state.get("ema") else state["model"]
        model.load_state_dict(weights)
    except (KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{path}: checkpoint does not match this version of the model: {exc}") from None
    return model.to(device).eval(), vocab, mcfg, state


def ids_to_latex(vocab, out) -> list[str]:
    if isinstance(vocab, TokenVocab):
        return [vocab.decode(row) for row in out.tolist()]
    sym, mod = out
    return [vocab.decode(s, m) for s, m in zip(sym.tolist(), mod.tolist())]


@torch.no_grad()
def recognize(model, vocab, images: torch.Tensor, spec: DecoderSpec, history: list | None = None,
              stats: Counter | None = None) -> list[str]:
    """images [B, 1, H, W] (ink = 1) -> LaTeX strings; with spec.valid every string parses.

    stats (a Counter) accumulates "outputs", "raw_invalid", "repaired", "last_resort"."""
    stats = stats if stats is not None else Counter()
    dev = next(model.parameters()).device
    images = images.to(dev)
    stats["outputs"] += images.shape[0]
    if isinstance(vocab, TokenVocab):  # no per-position alternatives: the deletion repair only
        texts = ids_to_latex(vocab, model.recognize(images, beam=spec.beam))
        out = []
        for text in texts:
            if is_valid(text):
                out.append(text)
                continue
            stats["raw_invalid"] += 1
            if spec.valid:
                stats["last_resort"] += 1
                text = delete_until_valid(text)
            out.append(text)
        return out
    gen = torch.Generator(device=dev).manual_seed(spec.seed)
    final: dict = {}
    sym, mod = model.recognize(images, T=spec.T, sampler=spec.sampler, generator=gen, history=history, final=final)
    if not spec.valid:
        texts = ids_to_latex(vocab, (sym, mod))
        stats["raw_invalid"] += sum(not is_valid(t) for t in texts)
        return texts
    s_log, m_log = (t.cpu() for t in final_log_probs(final))
    return [repair_ids(vocab, s, m, s_log[i], m_log[i], stats)
            for i, (s, m) in enumerate(zip(sym.tolist(), mod.tolist()))]
