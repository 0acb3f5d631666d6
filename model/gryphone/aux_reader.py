"""An auxiliary left-to-right reader over SAT positions, trained beside the diffusion decoder.

Why: a masked-diffusion decoder trained from scratch gives the encoder a weak signal (with every
position masked, position i must find "the i-th symbol" by its index alone), while a causal decoder
is told where it is by the symbols before it and teaches the encoder glyphs quickly
(docs/model.md). This reader shares GryphOne's encoder, predicts position i's (symbol, modifier)
from the image and positions < i, and is used for the training loss only: `recognize` never calls
it, and its weights can be dropped from a deployed checkpoint.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tokenizer.vocab import SATVocab

from ..layers import DecoderBlock, position_table

PAD, MASK = SATVocab.PAD, SATVocab.MASK  # MASK doubles as the start token


class SATCausalReader(nn.Module):
    def __init__(self, num_symbols: int, num_modifiers: int, max_len: int, dim: int, depth: int, heads: int,
                 mem_dim: int, dropout: float = 0.0):
        super().__init__()
        self.sym_emb = nn.Embedding(num_symbols, dim)
        self.mod_emb = nn.Embedding(num_modifiers, dim)
        self.pos_emb = nn.Parameter(position_table(max_len, dim, "random"))
        nn.init.normal_(self.sym_emb.weight, std=0.02)
        nn.init.normal_(self.mod_emb.weight, std=0.02)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads, mem_dim, dropout=dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.sym_head = nn.Linear(dim, num_symbols)
        self.mod_head = nn.Linear(dim, num_modifiers)

    def forward(self, memory: torch.Tensor, symbols: torch.Tensor, modifiers: torch.Tensor) -> dict[str, torch.Tensor]:
        """Teacher-forced logits for every position: input i is target i-1 (a start token at 0)."""
        start = symbols.new_full((symbols.shape[0], 1), MASK)
        in_sym = torch.cat([start, symbols[:, :-1]], 1)
        in_mod = torch.cat([start, modifiers[:, :-1]], 1)
        x = self.sym_emb(in_sym) + self.mod_emb(in_mod) + self.pos_emb[:, : symbols.shape[1]]
        for block in self.blocks:
            x = block(x, block.cross_attn.project_kv(memory), causal=True)
        x = self.norm(x)
        return {"sym": self.sym_head(x), "mod": self.mod_head(x)}


def reader_loss(reader: SATCausalReader, memory: torch.Tensor, symbols: torch.Tensor,
                modifiers: torch.Tensor) -> torch.Tensor:
    """CE of both heads over the label's positions and the first PAD (its end mark); later PADs ignored."""
    out = reader(memory, symbols, modifiers)
    pads_before = (symbols == PAD).long().cumsum(1) - (symbols == PAD).long()
    scored = pads_before == 0  # real positions and the first PAD
    tgt_sym = symbols.masked_fill(~scored, -100)
    tgt_mod = modifiers.masked_fill(~scored, -100)
    return (F.cross_entropy(out["sym"].float().transpose(1, 2), tgt_sym, ignore_index=-100)
            + F.cross_entropy(out["mod"].float().transpose(1, 2), tgt_mod, ignore_index=-100))
