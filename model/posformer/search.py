"""Greedy and beam search over PosFormer's TokenDecoder, carrying the coverage through the search, and
the bidirectional reranking of CoMER (candidates from both directions, scored by both).

A direction is its start and stop tokens: left-to-right reads BOS ... EOS, right-to-left EOS ... BOS
(the reversed label), so one decoder learns both. `keep` [V] says which emitted tokens add their
attention to the coverage (all of them for CoMER's ARM, entity symbols only for IAC).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tokenizer.vocab import TokenVocab

from ..search import Hyp, Step, end_with_eos, flip_r2l, kv_rows, pad_rows, reverse_ids, with_reorder
from ..search import beam as search_beam
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


def beam_one(dec: TokenDecoder, kv, keep: torch.Tensor, max_len: int, beam: int, length_penalty: float = 1.0,
             start: int = BOS, stop: int = EOS) -> list[Hyp]:
    """model.search.beam for one image (kv: its memory keys/values expanded to `beam` rows), in the
    direction `start` ... `stop`: the finished hypotheses."""
    return search_beam(coverage_step(dec, kv, keep), beam, max_len, kv[0][0].device, start=start, stop=stop,
                       length_penalty=length_penalty)


@torch.no_grad()
def sequence_logp(dec: TokenDecoder, mem_kv, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Sum of log p of ids[:, 1:] (PAD ignored) under teacher forcing: [B]."""
    tgt = ids[:, 1:]
    logp = F.log_softmax(dec(ids[:, :-1], mem_kv, keep[tgt]).float(), -1)
    return logp.gather(-1, tgt[..., None])[..., 0].masked_fill(tgt == PAD, 0).sum(1)


@torch.no_grad()
def token_probs(dec: TokenDecoder, mem_kv, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """p(ids[:, j + 1] | image, ids[:, :j + 1]) [B, L - 1] in one teacher-forced pass (what a decoded
    sequence's confidence is read from)."""
    tgt = ids[:, 1:]
    probs = F.softmax(dec(ids[:, :-1], mem_kv, keep[tgt]).float(), -1)
    return probs.gather(-1, tgt[..., None])[..., 0]


@torch.no_grad()
def bidirectional_search(dec: TokenDecoder, mem_kv, keep: torch.Tensor, max_len: int, beam: int,
                         length_penalty: float = 1.0) -> torch.Tensor:
    """CoMER's approximate joint search: beam search in both directions, then every candidate is scored
    by both directions (teacher-forced) and the best mean length-normalized log p wins."""
    best = []
    for i in range(mem_kv[0][0].shape[0]):
        kv = kv_rows(mem_kv, i, beam)
        l2r = [h[1] for h in beam_one(dec, kv, keep, max_len, beam, length_penalty, BOS, EOS)]
        r2l = [h[1] for h in beam_one(dec, kv, keep, max_len, beam, length_penalty, EOS, BOS)]
        cands = pad_rows(l2r + [flip_r2l(h) for h in r2l], kv[0][0].device)
        cands = end_with_eos(cands)
        one = kv_rows(mem_kv, i, cands.shape[0])
        both = sequence_logp(dec, one, cands, keep) + sequence_logp(dec, one, reverse_ids(cands), keep)
        steps = (cands != PAD).sum(1) - 1
        best.append(cands[int((both / (2 * steps.float() ** length_penalty)).argmax())])
    return pad_rows(best, mem_kv[0][0].device)
