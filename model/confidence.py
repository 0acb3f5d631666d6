"""How sure a recognizer was of one output, as a number in [0, 1]: what batch recognition reports
beside each LaTeX string, so a caller can send the unsure ones to a person.

A sequence decoder's confidence is the mean probability of the tokens it wrote (up to and including
its EOS), and 0 when it never wrote its EOS: an output cut at the decoder's window is not a reading of
the whole formula, however sure each token was (a noise image read as one symbol 160 times would
otherwise score 0.66). GryphOne's is the mean, over the label's positions and the PAD that ends it, of
the final refinement step's largest p(symbol) x p(modifier). Both read plain arrays, so the PyTorch and the
ONNX Runtime paths compute them alike.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def token_confidence(ids: Sequence[int], probs: Sequence[float], eos: int) -> float:
    """ids: one decoded row (BOS first); probs[j]: the probability of ids[j + 1]."""
    ids = list(ids)
    end = next((j for j in range(1, len(ids)) if ids[j] == eos), None)
    if end is None:
        return 0.0  # cut at the window: no EOS was written
    kept = np.asarray(probs, dtype=np.float64)[:end]
    return float(kept.mean()) if kept.size else float("nan")


def sat_confidence(symbols: Sequence[int], sym_logp: np.ndarray, mod_logp: np.ndarray, pad: int) -> float:
    """symbols: one row's symbol ids [L]; *_logp: the final step's log-probabilities [L, V] of that row."""
    symbols = list(symbols)
    length = next((i for i, s in enumerate(symbols) if s == pad), len(symbols))
    span = min(length + 1, len(symbols))
    best = np.exp(np.asarray(sym_logp, dtype=np.float64)[:span].max(-1) + np.asarray(mod_logp, dtype=np.float64)[:span].max(-1))
    return float(best.mean()) if span else float("nan")
