"""PosFormer's decoding step over its TokenDecoder, carrying the coverage through model.search's greedy
and beam searches (and, for a bidirectional model, model.search.bidirectional_best's reranking).

A direction is its start and stop tokens: left-to-right reads BOS ... EOS, right-to-left EOS ... BOS
(the reversed label), so one decoder learns both. `keep` [V] says which emitted tokens add their
attention to the coverage (all of them for CoMER's ARM, entity symbols only for IAC).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tokenizer.vocab import TokenVocab

from ..search import Step, with_reorder
from .decoder import StepState, TokenDecoder

PAD, BOS, EOS = TokenVocab.PAD, TokenVocab.BOS, TokenVocab.EOS


def coverage_step(dec: TokenDecoder, mem_kv, keep: torch.Tensor) -> Step:
    """model.search's step for PosFormer: the token emitted last first adds its attention to the
    coverage (when `keep` says it counts), then the next position is read."""
    state = StepState.empty(len(dec.stack.layers))

    def step(last: torch.Tensor, pos: int) -> torch.Tensor:
        if pos:
            state.commit(keep[last])
        return dec.step(last, pos, mem_kv, state)
    return with_reorder(step, state.reorder)


@torch.no_grad()
def token_logp(dec: TokenDecoder, mem_kv, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """log p(ids[:, j + 1] | image, ids[:, :j + 1]) [B, L - 1] in one teacher-forced pass, the coverage
    as the search builds it (either reading direction: the first token says which)."""
    tgt = ids[:, 1:]
    logp = F.log_softmax(dec(ids[:, :-1], mem_kv, keep[tgt]).float(), -1)
    return logp.gather(-1, tgt[..., None])[..., 0]


def token_probs(dec: TokenDecoder, mem_kv, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """p(ids[:, j + 1] | image, ids[:, :j + 1]) [B, L - 1]: what a decoded sequence's confidence is read from."""
    return token_logp(dec, mem_kv, ids, keep).exp()
