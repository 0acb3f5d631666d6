"""A unidirectional LSTM decoder with coverage attention (WAP / DWAP style) over an encoder's grid.

Each step reads the previous token and the previous context (input feeding), updates the LSTM, then
attends over the memory with an additive score that also sees the *coverage*: the sum of every earlier
attention map, passed through a 2D convolution over the memory's grid. A region already read scores
differently from one not yet read, which is what curbs reading a symbol twice (over-parsing) or
never (under-parsing). The convolution is 2D because the memory is a 2D feature grid: a symbol spans
rows and columns, and a 1D convolution over the flattened grid would join the end of one row to the
start of the next and keep vertical neighbours a whole row apart.

Greedy decoding is batched (model.search over `lstm_step`); beam search is model.search's, one image
at a time over `image_rows` (so a beam of width 1 is greedy decoding).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from tokenizer.vocab import TokenVocab

from ..search import Step, with_reorder

PAD, BOS, EOS = TokenVocab.PAD, TokenVocab.BOS, TokenVocab.EOS


class Memory(NamedTuple):
    """What attention reads, computed once per image: the memory [B, N, D] and its keys [B, N, A]."""

    values: torch.Tensor
    keys: torch.Tensor

    def expand(self, k: int) -> "Memory":
        """One image's memory shared by k hypotheses (a view, no copy)."""
        return Memory(self.values.expand(k, -1, -1), self.keys.expand(k, -1, -1))


class State(NamedTuple):
    """The decoder's state between steps: LSTM (h, c) [B, H], last context [B, D], coverage [B, N]."""

    h: torch.Tensor
    c: torch.Tensor
    context: torch.Tensor
    coverage: torch.Tensor

    def select(self, index: torch.Tensor) -> "State":
        return State(*(t[index] for t in self))


class CoverageAttention(nn.Module):
    """score_i = v . tanh(W q + U m_i + V conv(coverage)_i); coverage off drops the last term."""

    def __init__(self, query_dim: int, mem_dim: int, attn_dim: int, grid: tuple[int, int], kernel: int,
                 channels: int, coverage: bool):
        super().__init__()
        self.grid = grid
        self.query = nn.Linear(query_dim, attn_dim)
        self.key = nn.Linear(mem_dim, attn_dim, bias=False)
        self.cov_conv = nn.Conv2d(1, channels, kernel, padding=kernel // 2) if coverage else None
        self.cov_proj = nn.Linear(channels, attn_dim, bias=False) if coverage else None
        self.score = nn.Linear(attn_dim, 1)

    def coverage_term(self, coverage: torch.Tensor) -> torch.Tensor:
        """V conv(coverage) [B, N, A] for the coverage [B, N], computed as one product.

        The convolution (1 -> C channels) and the projection (C -> A) are both linear, so their weights
        are composed first ([A, k*k], a few thousand multiply-adds) and applied to the coverage's k x k
        neighbourhoods (unfold) in one matmul. The parameters and the function are those of conv then
        projection (equal to 1e-6, tests/test_hvt.py); what changes is the cost, at every LSTM step:
        k*k*A multiply-adds per grid cell instead of C*(k*k + A), and no one-channel convolution, whose
        backward is slow in oneDNN (the term forward and backward: 1.19x at `print-cpu`'s sizes, 1.71x
        at `hvt-paper`'s; benchmarks/bench_coverage.py, BENCHMARKS.md)."""
        conv = self.cov_conv
        weight = self.cov_proj.weight @ conv.weight.flatten(1)                        # [A, k*k]
        bias = self.cov_proj.weight @ conv.bias                                       # [A]
        cols = F.unfold(coverage.view(-1, 1, *self.grid), conv.kernel_size, padding=conv.padding)  # [B, k*k, N]
        return torch.matmul(cols.transpose(1, 2), weight.t()) + bias

    def forward(self, query: torch.Tensor, memory: Memory, coverage: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(context [B, D], attention [B, N]) for queries [B, Q] and the coverage so far [B, N]."""
        e = self.query(query)[:, None] + memory.keys
        if self.cov_conv is not None:
            e = e + self.coverage_term(coverage)
        alpha = self.score(torch.tanh(e)).squeeze(-1).float().softmax(-1).to(memory.values.dtype)
        return torch.bmm(alpha[:, None], memory.values).squeeze(1), alpha


class CoverageLSTMDecoder(nn.Module):
    def __init__(self, num_tokens: int, emb_dim: int, dec_dim: int, mem_dim: int, attn_dim: int,
                 grid: tuple[int, int], cov_kernel: int, cov_channels: int, coverage: bool, dropout: float):
        super().__init__()
        self.dec_dim, self.grid = dec_dim, grid
        self.embed = nn.Embedding(num_tokens, emb_dim)
        self.cell = nn.LSTMCell(emb_dim + mem_dim, dec_dim)
        self.attn = CoverageAttention(dec_dim, mem_dim, attn_dim, grid, cov_kernel, cov_channels, coverage)
        self.init = nn.Sequential(nn.Linear(mem_dim, dec_dim), nn.Tanh(), nn.Linear(dec_dim, 2 * dec_dim))
        self.out_h, self.out_c = nn.Linear(dec_dim, emb_dim), nn.Linear(mem_dim, emb_dim, bias=False)
        self.out_e = nn.Linear(emb_dim, emb_dim, bias=False)
        self.head = nn.Linear(emb_dim, num_tokens)
        self.drop = nn.Dropout(dropout)

    def start(self, memory: torch.Tensor, summary: torch.Tensor) -> tuple[Memory, State]:
        """Attention's memory and the first state: (h0, c0) an MLP of `summary` [B, D] (the [CLS]
        output, or the mean memory), zero context and coverage."""
        b, n, d = memory.shape
        h0, c0 = self.init(summary).chunk(2, dim=-1)
        zeros = memory.new_zeros
        return Memory(memory, self.attn.key(memory)), State(torch.tanh(h0), c0, zeros(b, d), zeros(b, n))

    def step(self, tokens: torch.Tensor, state: State, memory: Memory) -> tuple[torch.Tensor, State, torch.Tensor]:
        """Previous tokens [B] -> (logits [B, V], new state, this step's attention [B, N])."""
        e = self.drop(self.embed(tokens))
        state, alpha = self.advance(e, state, memory)
        return self.readout(state.h, state.context, e), state, alpha

    def advance(self, e: torch.Tensor, state: State, memory: Memory) -> tuple[State, torch.Tensor]:
        """The recurrent part of a step: embedded tokens [B, E] -> (new state, attention [B, N])."""
        h, c = self.cell(torch.cat([e, state.context], -1), (state.h, state.c))
        context, alpha = self.attn(h, memory, state.coverage)
        return State(h, c, context, state.coverage + alpha), alpha

    def readout(self, h: torch.Tensor, context: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """Logits from the LSTM output, the context and the input embedding (any leading shape): no
        state flows through it, so teacher forcing runs it once over every step."""
        return self.head(self.drop(torch.tanh(self.out_h(h) + self.out_c(context) + self.out_e(e))))

    def teacher_forced(self, ids: torch.Tensor, state: State, memory: Memory) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [B, L-1, V] predicting ids[:, 1:], attention maps [B, L-1, N]) from ids [B, L]: the
        recurrence step by step, then the readout over all steps at once."""
        e = self.drop(self.embed(ids[:, :-1]))
        hs, contexts, alphas = [], [], []
        for t in range(ids.shape[1] - 1):
            state, alpha = self.advance(e[:, t], state, memory)
            hs.append(state.h), contexts.append(state.context), alphas.append(alpha)
        return self.readout(torch.stack(hs, 1), torch.stack(contexts, 1), e), torch.stack(alphas, 1)

    def flops(self, steps: int, memory: int, mem_dim: int, num_tokens: int) -> float:
        """Forward FLOPs (2 per multiply-add) of `steps` decoding steps over `memory` positions,
        including the keys computed once per image."""
        h, e = self.dec_dim, self.embed.embedding_dim
        a = self.attn.query.out_features
        lstm = 2 * 4 * h * (e + mem_dim + h)
        attn = 2 * h * a + 2 * memory * a + 2 * memory * mem_dim
        conv = self.attn.cov_conv
        if conv is not None:  # CoverageAttention.coverage_term: weights composed, then one product
            k = conv.kernel_size[0] * conv.kernel_size[1]
            attn += 2 * memory * k * a + 2 * a * conv.out_channels * (k + 1)
        out = 2 * e * (h + mem_dim + e) + 2 * e * num_tokens
        once = 2 * memory * mem_dim * a + 2 * mem_dim * h + 2 * h * 2 * h
        return float(steps * (lstm + attn + out) + once)


def coverage_penalty(alphas: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Mean over valid steps of sum_i min(alpha_t,i, coverage_t-1,i) (See et al., 2017): attention
    mass put again where earlier steps already looked. alphas [B, L, N], valid bool [B, L]."""
    before = alphas.cumsum(1) - alphas
    overlap = torch.minimum(alphas, before).sum(-1)
    return (overlap * valid).sum() / valid.sum().clamp(min=1)


def teacher_forced_loss(decoder: CoverageLSTMDecoder, memory: Memory, state: State, ids: torch.Tensor,
                        cov_weight: float = 0.0) -> dict[str, torch.Tensor]:
    """Next-token CE over ids [B, L] = BOS tokens EOS PAD... (PAD targets ignored), plus
    `cov_weight` x coverage_penalty. The LSTM runs one step per column: the trainer's eager steps pass
    the window cut at the batch's longest label (Recognizer.trim_padding)."""
    logits, alphas = decoder.teacher_forced(ids, state, memory)
    target = ids[:, 1:].masked_fill(ids[:, 1:] == PAD, -100)
    ce = F.cross_entropy(logits.float().transpose(1, 2), target, ignore_index=-100)
    loss = ce
    if cov_weight:
        loss = ce + cov_weight * coverage_penalty(alphas.float(), target != -100)
    return {"loss": loss, "ce": ce.detach()}


def lstm_step(decoder: CoverageLSTMDecoder, memory: Memory, state: State) -> Step:
    """model.search's step for this decoder: the LSTM state and coverage carried between calls."""
    carried = [state]

    def step(last: torch.Tensor, pos: int) -> torch.Tensor:
        logits, carried[0], _ = decoder.step(last, carried[0], memory)
        return logits

    def reorder(src: torch.Tensor) -> None:
        carried[0] = carried[0].select(src)
    return with_reorder(step, reorder)


def image_rows(memory: Memory, state: State, i: int, rows: int) -> tuple[Memory, State]:
    """Image i's memory and starting state shared by `rows` rows (one beam's)."""
    one = Memory(memory.values[i: i + 1], memory.keys[i: i + 1]).expand(rows)
    return one, state.select(torch.full((rows,), i, dtype=torch.long, device=memory.values.device))
