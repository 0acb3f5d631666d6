"""Autoregressive baseline: a causal transformer decoder over plain LaTeX tokens.

Same encoder as GryphOne, so "diffusion vs autoregressive" compares decoders alone. Ids come from
`tokenizer.TokenVocab` (PAD 0, BOS 1, EOS 2). Greedy and beam search decode with a key/value cache
for self-attention and cached cross-attention keys/values of the encoder memory: greedy through
model.search with `cached_step` (or `static_step`, its fixed-shape form), beam search here.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tokenizer.vocab import TokenVocab

from ..layers import DecoderBlock, position_table
from ..search import Step, with_reorder

PAD, BOS, EOS = TokenVocab.PAD, TokenVocab.BOS, TokenVocab.EOS


class ARDecoder(nn.Module):
    def __init__(self, num_tokens: int, max_len: int, dim: int, depth: int, heads: int, mem_dim: int,
                 dropout: float = 0.0, pos_init: str = "random"):
        super().__init__()
        self.max_len = max_len
        self.tok_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Parameter(position_table(max_len, dim, pos_init))
        nn.init.normal_(self.tok_emb.weight, std=0.02)  # same scale as the positions
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads, mem_dim, dropout=dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_tokens)

    def memory_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [block.cross_attn.project_kv(memory) for block in self.blocks]

    def forward(self, tokens: torch.Tensor, mem_kv, caches: list[dict] | None = None,
                start: int | torch.Tensor = 0) -> torch.Tensor:
        """Teacher-forced logits [B, L, V]; with `caches`, `tokens` are the new positions from `start`
        (a tensor of positions with static_step's preallocated caches)."""
        pos = self.pos_emb[:, start] if isinstance(start, torch.Tensor) else self.pos_emb[:, start: start + tokens.shape[1]]
        x = self.tok_emb(tokens) + pos
        x = self.drop(x)
        for i, (block, kv) in enumerate(zip(self.blocks, mem_kv)):
            x = block(x, kv, causal=True, self_cache=None if caches is None else caches[i])
        return self.head(self.norm(x))


def ar_loss(decoder: ARDecoder, mem_kv, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Next-token CE; ids [B, L] = BOS tokens EOS PAD...; PAD targets ignored."""
    logits = decoder(ids[:, :-1], mem_kv)
    target = ids[:, 1:].masked_fill(ids[:, 1:] == PAD, -100)
    ce = F.cross_entropy(logits.float().transpose(1, 2), target, ignore_index=-100)
    return {"loss": ce, "ce": ce.detach()}


def cached_step(decoder: ARDecoder, mem_kv) -> Step:
    """model.search's step for this decoder: one new token per call, self-attention keys/values cached
    (the cache grows by one position per step)."""
    caches: list[dict] = [{} for _ in decoder.blocks]

    def step(last: torch.Tensor, pos: int) -> torch.Tensor:
        return decoder(last[:, None], mem_kv, caches, start=pos)[:, -1]

    def reorder(src: torch.Tensor) -> None:
        for c in caches:
            c["k"], c["v"] = c["k"][src], c["v"][src]
    return with_reorder(step, reorder)


def static_step(decoder: ARDecoder, mem_kv) -> Step:
    """The same step on fixed shapes: every layer's cache preallocated to max_len positions, each new
    key/value written at its position, later positions masked, the position a tensor. Every call is
    then the same graph (compiled once, replayable as a CUDA graph); the scores equal cached_step's to
    float rounding."""
    k0 = mem_kv[0][0]
    b, heads, _, head_dim = k0.shape
    n = decoder.max_len
    caches = [{"k": k0.new_zeros(b, heads, n, head_dim), "v": k0.new_zeros(b, heads, n, head_dim)}
              for _ in decoder.blocks]
    positions = torch.arange(n, device=k0.device)

    def step(last: torch.Tensor, pos: int) -> torch.Tensor:
        at = positions[pos: pos + 1]
        ignore = (positions > at)[None].expand(b, n)
        for c in caches:
            c["pos"], c["ignore"] = at, ignore
        return decoder(last[:, None], mem_kv, caches, start=at)[:, -1]
    return step


@torch.no_grad()
def token_logp(decoder: ARDecoder, mem_kv, ids: torch.Tensor) -> torch.Tensor:
    """log p(ids[:, j + 1] | image, ids[:, :j + 1]) [B, L - 1] in one teacher-forced pass (either reading
    direction: the first token says which)."""
    logits = decoder(ids[:, :-1], mem_kv)
    return logits.float().log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]


def token_probs(decoder: ARDecoder, mem_kv, ids: torch.Tensor) -> torch.Tensor:
    """p(ids[:, j + 1] | image, ids[:, :j + 1]) [B, L - 1] in one teacher-forced pass: what a decoded
    sequence's confidence is read from, for greedy and beam outputs alike."""
    return token_logp(decoder, mem_kv, ids).exp()
