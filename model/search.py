"""Greedy search over a step function: one loop for every token recognizer.

A recognizer decodes by handing `greedy` a step (CoMER's `DecodeModel` form): `step(last, pos)` takes
the token each row emitted last ([B] ids, BOS at pos 0) and returns the next token's scores [B, V]
(logits or log-probabilities: only their argmax is read), carrying whatever it needs between calls
(the AR baseline's key/value cache, PosFormer's cache and coverage, HVT's LSTM state and coverage).
model/onnx_samplers.greedy is the same loop in NumPy over the exported step graphs.

Stopping: a row that has emitted EOS writes PAD from then on; the loop ends when every row has ended
(one value read back from the device per step) or after max_len - 1 tokens.
"""
from __future__ import annotations

from typing import Callable

import torch

from tokenizer.vocab import TokenVocab

PAD, BOS, EOS = TokenVocab.PAD, TokenVocab.BOS, TokenVocab.EOS
Step = Callable[[torch.Tensor, int], torch.Tensor]


@torch.no_grad()
def greedy(step: Step, batch: int, max_len: int, device: torch.device | str) -> torch.Tensor:
    """ids [B, <=max_len]: BOS, the argmax token of each step, PAD after EOS."""
    out = torch.full((batch, max_len), PAD, dtype=torch.long, device=device)
    out[:, 0] = BOS
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    for pos in range(max_len - 1):
        nxt = step(out[:, pos], pos).argmax(-1).masked_fill(done, PAD)
        out[:, pos + 1] = nxt
        done |= nxt == EOS
        if done.all():
            return out[:, : pos + 2]
    return out
