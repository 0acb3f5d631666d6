"""The SAT masked-diffusion decoder: forward masking, the RMML loss, and its samplers.

A label is a fixed window of `max_len` positions, each a (symbol id, modifier id) pair from
`tokenizer.SATVocab` (PAD after the label, MASK for "unknown"). Training masks each position of a
sample with probability t/T (t ~ U{1..T}), in both streams at once, and predicts every position
from the image and the visible positions. Random-masking mutual learning (RMML) draws two masked
views of the same target, runs them as one decoder batch, and adds a symmetric per-position KL.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from tokenizer.vocab import SATVocab

from ..layers import DecoderBlock, OfficialDecoderBlock, position_table, sincos_1d
from ..sampler_noise import remask_noise

PAD, MASK = SATVocab.PAD, SATVocab.MASK  # the same ids in the symbol and the modifier vocabulary


class SATDecoder(nn.Module):
    """Bidirectional decoder over (symbol, modifier) positions; input emb = E_sym + E_mod + E_pos.

    Ours by default: learned positions at the embeddings' 0.02 scale, a table per stream, pre-norm
    blocks with a 4x GELU MLP. The official implementation's choices, each one switch (docs/model.md):
    `pos="fixed"` (unit-amplitude sin-cos, N(0, 1) embeddings), `shared_table` (one table for symbols
    and modifiers, modifier ids after the symbols'), `block="official"` (post-add blocks with LayerNorm
    inside every projection, a d_model-wide ReLU feed-forward, LayerNorm -> Linear heads)."""

    def __init__(self, num_symbols: int, num_modifiers: int, max_len: int, dim: int, depth: int,
                 heads: int, mem_dim: int, dropout: float = 0.0, forest_depths: int = 0,
                 pos_init: str = "random", pos: str = "learned", shared_table: bool = False,
                 block: str = "prenorm"):
        super().__init__()
        if pos not in ("learned", "fixed") or block not in ("prenorm", "official"):
            raise ValueError(f"dec_pos must be learned|fixed and dec_block prenorm|official, got {pos!r}, {block!r}")
        self.max_len, self.num_symbols, self.shared_table = max_len, num_symbols, shared_table
        self.pos_kind, self.block_kind = pos, block
        if shared_table:
            self.table = nn.Embedding(num_symbols + num_modifiers, dim)
        else:
            self.sym_emb = nn.Embedding(num_symbols, dim)
            self.mod_emb = nn.Embedding(num_modifiers, dim)
        if pos == "fixed":
            self.register_buffer("pos_emb", sincos_1d(max_len, dim)[None], persistent=False)
        else:
            self.pos_emb = nn.Parameter(position_table(max_len, dim, pos_init))
            # same scale for all three (GPT-style 0.02): with nn.Embedding's default N(0, 1) the position
            # signal is 50x weaker than E_sym(MASK) + E_mod(MASK), every masked position looks the same,
            # and the decoder predicts one symbol everywhere
            for table in ([self.table] if shared_table else [self.sym_emb, self.mod_emb]):
                nn.init.normal_(table.weight, std=0.02)
        self.drop = nn.Dropout(dropout)
        if block == "official":
            self.blocks = nn.ModuleList(OfficialDecoderBlock(dim, heads, mem_dim, dropout) for _ in range(depth))
            self.norm = nn.Identity()
            self.sym_head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_symbols))
            self.mod_head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_modifiers))
        else:
            self.blocks = nn.ModuleList(DecoderBlock(dim, heads, mem_dim, dropout=dropout) for _ in range(depth))
            self.norm = nn.LayerNorm(dim)
            self.sym_head = nn.Linear(dim, num_symbols)
            self.mod_head = nn.Linear(dim, num_modifiers)
        # optional PosFormer-style position-forest heads: nesting level and relation (M/L/R)
        self.forest_depths = forest_depths
        if forest_depths:
            self.level_head = nn.Linear(dim, forest_depths)
            self.relation_head = nn.Linear(dim, 3)

    def memory_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each layer's cross-attention keys/values of the encoder memory: compute once, reuse every step."""
        return [block.cross_attn.project_kv(memory) for block in self.blocks]

    def forward(self, symbols: torch.Tensor, modifiers: torch.Tensor,
                mem_kv: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
        if self.shared_table:
            tokens = self.table(symbols) + self.table(modifiers + self.num_symbols)
        else:
            tokens = self.sym_emb(symbols) + self.mod_emb(modifiers)
        x = tokens + self.pos_emb[:, : symbols.shape[1]].to(tokens.dtype)
        x = self.drop(x)
        for block, kv in zip(self.blocks, mem_kv):
            x = block(x, kv)
        x = self.norm(x)
        out = {"sym": self.sym_head(x), "mod": self.mod_head(x)}
        if self.forest_depths:
            out["level"], out["relation"] = self.level_head(x), self.relation_head(x)
        return out


def repeat_kv(mem_kv: list[tuple[torch.Tensor, torch.Tensor]], n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Tile cached keys/values along the batch for `n` views of each image (views are view-major)."""
    return [(k.repeat(n, 1, 1, 1), v.repeat(n, 1, 1, 1)) for k, v in mem_kv]


def mask_draws(shape: tuple[int, int], views: int, T: int, generator: torch.Generator, mode: str = "joint",
               device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """The forward process's random numbers for `views` masked views of a [B, L] batch, drawn apart from
    their use so the loss itself is a function of tensors alone (what a compiled graph needs: no
    generator inside it). "mask_t" [V, B, 1] the per-sample masking rate, "mask_u" [V, B, L] the
    uniform draw a position is masked below, "mask_u_mod" the modifier stream's (independent mode).
    The draws come in the order the loss once made them, so the masks are the same as before."""
    if mode not in ("joint", "independent"):
        raise ValueError(f"unknown mask mode {mode!r} (joint | independent)")
    b, n = shape
    t, u, u_mod = [], [], []
    for _ in range(views):
        if mode == "joint":
            t.append(torch.randint(1, T + 1, (b, 1), generator=generator, device=device).float() / T)
            u.append(torch.rand(b, n, generator=generator, device=device))
        else:
            t.append(torch.rand(b, 1, generator=generator, device=device))
            u.append(torch.rand(b, n, generator=generator, device=device))
            u_mod.append(torch.rand(b, n, generator=generator, device=device))
    out = {"mask_t": torch.stack(t), "mask_u": torch.stack(u)}
    if u_mod:
        out["mask_u_mod"] = torch.stack(u_mod)
    return out


def loss_draws(cfg: "LossConfig", shape: tuple[int, int], generator: torch.Generator,
               device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """The draws one step of `diffusion_loss` uses: a view per RMML branch, at the config's T and mode."""
    return mask_draws(shape, 2 if cfg.rmml else 1, cfg.T, generator, cfg.mask_mode, device)


def apply_mask(symbols: torch.Tensor, modifiers: torch.Tensor, draws: dict[str, torch.Tensor],
               view: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One view of the forward process from its draws: (masked symbols, masked modifiers, bool mask
    [B, L] of the symbol stream). Positions whose draw falls below the sample's rate are masked, in both
    streams at once ("joint") or in each stream at its own positions ("independent")."""
    t = draws["mask_t"][view]
    mask = draws["mask_u"][view] < t
    mask_mod = draws["mask_u_mod"][view] < t if "mask_u_mod" in draws else mask
    return symbols.masked_fill(mask, MASK), modifiers.masked_fill(mask_mod, MASK), mask


def mask_view(symbols: torch.Tensor, modifiers: torch.Tensor, T: int, generator: torch.Generator,
              mode: str = "joint") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward process. "joint": per sample t ~ U{1..T}, each position masked with probability t/T in
    both streams at once. "independent" (the official implementation): per sample t ~ U(0, 1), the
    symbol and the modifier stream each masked at their own positions with probability t.

    Returns (masked symbols, masked modifiers, bool mask [B, L] of the symbol stream).
    """
    draws = mask_draws(tuple(symbols.shape), 1, T, generator, mode, symbols.device)
    return apply_mask(symbols, modifiers, draws)


@dataclass
class LossConfig:
    T: int = 50
    rmml: bool = True          # two masked views + symmetric KL
    kl_weight: float = 1.0
    kl_warmup_steps: int = 0   # ramp the KL weight linearly from 0 over these steps (0 = the paper: full from step 0)
    pad_weight: float = 1.0    # weight of PAD positions in the CE (real positions weigh 1)
    masked_only: bool = False  # CE on masked positions only (MDLM); the paper uses all positions
    forest_weight: float = 0.0
    mask_mode: str = "joint"   # joint (both streams, t = k/T) | independent (official: per stream, t ~ U(0, 1))
    kl_detach: bool = False    # official: KL(p_other || q_this) with p_other detached (stop-gradient)


def _kl_per_position(logits_p: torch.Tensor, logits_q: torch.Tensor, detach_p: bool = False) -> torch.Tensor:
    """KL(p || q) per position [B, L] (summed over the vocabulary only, never over positions);
    detach_p makes p a fixed target (no gradient through it)."""
    logp, logq = F.log_softmax(logits_p.float(), -1), F.log_softmax(logits_q.float(), -1)
    if detach_p:
        logp = logp.detach()
    return (logp.exp() * (logp - logq)).sum(-1)


def diffusion_loss(decoder: SATDecoder, mem_kv, symbols: torch.Tensor, modifiers: torch.Tensor,
                   cfg: LossConfig, generator: torch.Generator | dict[str, torch.Tensor],
                   forest: tuple[torch.Tensor, torch.Tensor] | None = None,
                   kl_scale: float | torch.Tensor = 1.0) -> dict[str, torch.Tensor]:
    """The training loss (CE of both heads, + KL of both heads between two views under RMML).

    `generator` draws the masks, or is the draws themselves (`mask_draws`: what a compiled step passes).
    kl_scale multiplies cfg.kl_weight (the trainer's KL warm-up; a tensor keeps it out of the graph's guards).

    Returns a dict with the scalar `loss` to optimize and detached parts for logging: CE on real
    positions and on PAD apart, and the per-position KL.
    """
    views = 2 if cfg.rmml else 1
    draws = generator if isinstance(generator, dict) else \
        loss_draws(cfg, tuple(symbols.shape), generator, symbols.device)
    masked = [apply_mask(symbols, modifiers, draws, v) for v in range(views)]
    in_sym = torch.cat([m[0] for m in masked])
    in_mod = torch.cat([m[1] for m in masked])
    mask = torch.cat([m[2] for m in masked])
    out = decoder(in_sym, in_mod, repeat_kv(mem_kv, views) if views > 1 else mem_kv)

    tgt_sym, tgt_mod = symbols.repeat(views, 1), modifiers.repeat(views, 1)
    ce_sym = F.cross_entropy(out["sym"].float().transpose(1, 2), tgt_sym, reduction="none")
    ce_mod = F.cross_entropy(out["mod"].float().transpose(1, 2), tgt_mod, reduction="none")
    real = tgt_sym != PAD
    weight = torch.where(real, 1.0, cfg.pad_weight)
    if cfg.masked_only:
        weight = weight * mask
    denom = weight.sum().clamp_min(1.0)
    ce = ((ce_sym + ce_mod) * weight).sum() / denom
    loss = ce * views  # CE(view1) + CE(view2), each a mean over its positions
    parts = {
        "ce": ce.detach(),
        "ce_sym_real": (ce_sym * real).sum().detach() / real.sum().clamp_min(1),
        "ce_sym_pad": (ce_sym * ~real).sum().detach() / (~real).sum().clamp_min(1),
        "ce_mod_real": (ce_mod * real).sum().detach() / real.sum().clamp_min(1),
        "ce_mod_pad": (ce_mod * ~real).sum().detach() / (~real).sum().clamp_min(1),
    }
    if views == 2:
        b = symbols.shape[0]
        kl = symbols.new_zeros((), dtype=torch.float32)
        for head in ("sym", "mod"):
            p, q = out[head][:b], out[head][b:]
            kl = kl + (_kl_per_position(p, q, cfg.kl_detach) + _kl_per_position(q, p, cfg.kl_detach)).mean()
        loss = loss + cfg.kl_weight * kl_scale * kl
        parts["kl"] = kl.detach()
    if forest is not None and cfg.forest_weight > 0 and "level" in out:
        level, relation = (f.repeat(views, 1) for f in forest)
        aux = F.cross_entropy(out["level"].float().transpose(1, 2), level, ignore_index=-100) + \
            F.cross_entropy(out["relation"].float().transpose(1, 2), relation, ignore_index=-100)
        loss = loss + cfg.forest_weight * aux
        parts["forest"] = aux.detach()
    parts["loss"] = loss
    return parts


def _no_mask(logits: torch.Tensor) -> torch.Tensor:
    """The MASK id is an input-only token: never predict it."""
    logits = logits.float().clone()
    logits[..., MASK] = float("-inf")
    return logits


def _truncate_after_pad(sym: torch.Tensor, mod: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Everything from the first predicted PAD on becomes PAD (variable length in a fixed window)."""
    after = (sym == PAD).cumsum(1) > 0
    return sym.masked_fill(after, PAD), mod.masked_fill(after, PAD)


def _confidence(out: dict[str, torch.Tensor], sym: torch.Tensor, mod: torch.Tensor) -> torch.Tensor:
    """p(symbol) * p(modifier) of the tokens a step holds, per position [B, L] (for the refinement plot)."""
    ps = _no_mask(out["sym"]).softmax(-1).gather(-1, sym[..., None])[..., 0]
    pm = _no_mask(out["mod"]).softmax(-1).gather(-1, mod[..., None].clamp_max(out["mod"].shape[-1] - 1))[..., 0]
    return ps * pm


def _keep_final(final: dict | None, out: dict[str, torch.Tensor]) -> None:
    """Keep a step's logits in `final` (the last call wins; no work per step): a grammar repair of the
    output ranks its alternatives by their log-probabilities, see final_log_probs."""
    if final is not None:
        final["sym"], final["mod"] = out["sym"], out["mod"]


def final_log_probs(final: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The last step's log-probabilities [B, L, V] per head (MASK excluded), from what _keep_final kept."""
    return _no_mask(final["sym"]).log_softmax(-1), _no_mask(final["mod"]).log_softmax(-1)


def batch_device(mem_kv) -> tuple[int, torch.device]:
    """The batch size and device of a step's memory: its first cached tensor's (the decoder's per-layer
    (keys, values), or an ensemble's list of its members' caches)."""
    first = mem_kv
    while not isinstance(first, torch.Tensor):
        first = first[0]
    return first.shape[0], first.device


@torch.no_grad()
def sample_remask(decoder: SATDecoder, mem_kv, T: int, seed: int = 0,
                  early_exit: bool = False, history: list | None = None,
                  keep_visible: bool = False, final: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's sampler: start all-MASK; for t = T..1 predict every position (argmax), then
    re-mask each position independently with probability (t-1)/T. Earlier tokens can still change.

    keep_visible: as the official implementation does, a position that was not masked keeps its
    token and only masked positions take the new argmax (a token can still change after it is
    re-masked at a later step).
    early_exit: stop once a step's prediction equals the previous step's for the whole batch.
    history: if a list, each step's (symbols, modifiers, confidence) is appended (for the refinement plot).
    final: if a dict, receives the last step's log-probabilities (see _keep_final).
    seed: the re-mask draws (remask_noise): one row per step, the same for every sample, so an
    image reads the same alone, in any batch and at any batch size.
    """
    b, dev = batch_device(mem_kv)
    n = decoder.max_len
    sym = torch.full((b, n), MASK, dtype=torch.long, device=dev)
    mod = torch.full_like(sym, MASK)
    noise = torch.from_numpy(remask_noise(seed, T, n)).to(dev)
    prev = None
    for t in range(T, 0, -1):
        out = decoder(sym, mod, mem_kv)
        _keep_final(final, out)
        p_sym, p_mod = _no_mask(out["sym"]).argmax(-1), _no_mask(out["mod"]).argmax(-1)
        if keep_visible:
            p_sym, p_mod = torch.where(sym == MASK, p_sym, sym), torch.where(mod == MASK, p_mod, mod)
        p_sym, p_mod = _truncate_after_pad(p_sym, p_mod)
        if history is not None:
            history.append((p_sym.clone(), p_mod.clone(), _confidence(out, p_sym, p_mod)))
        if t == 1 or (early_exit and prev is not None and torch.equal(prev, torch.stack([p_sym, p_mod]))):
            return p_sym, p_mod
        prev = torch.stack([p_sym, p_mod])
        remask = (noise[T - t] < (t - 1) / T)[None].expand(b, n)
        sym, mod = p_sym.masked_fill(remask, MASK), p_mod.masked_fill(remask, MASK)
    raise AssertionError("unreachable")


@torch.no_grad()
def sample_mask_predict(decoder: SATDecoder, mem_kv, T: int, early_exit: bool = False,
                        history: list | None = None, final: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask-predict (Ghazvininejad et al., 2019): keep confident tokens, re-mask the least confident.

    Only positions before the first predicted PAD are ranked (PAD is the most confident token and
    would otherwise be committed first); positions after it are fixed to PAD. At iteration s of T,
    floor(len * (T-1-s)/T) positions are re-masked. Deterministic. Without early_exit the loop never
    reads a value back from the device (a step that re-masks nothing masks nothing), so it can be
    captured whole (a CUDA graph, torch.compile).
    """
    b, dev = batch_device(mem_kv)
    n = decoder.max_len
    sym = torch.full((b, n), MASK, dtype=torch.long, device=dev)
    mod = torch.full_like(sym, MASK)
    conf = torch.zeros(b, n, device=dev)
    positions = torch.arange(n, device=dev)[None]
    for s in range(T):
        masked = sym == MASK
        out = decoder(sym, mod, mem_kv)
        _keep_final(final, out)
        ps, pi = _no_mask(out["sym"]).softmax(-1).max(-1)
        ms, mi = _no_mask(out["mod"]).softmax(-1).max(-1)
        sym = torch.where(masked, pi, sym)
        mod = torch.where(masked, mi, mod)
        conf = torch.where(masked, ps * ms, conf)
        sym, mod = _truncate_after_pad(sym, mod)
        length = torch.where((sym == PAD).any(1), (sym == PAD).float().argmax(1), torch.full((b,), n, device=dev))
        if history is not None:
            history.append((sym.clone(), mod.clone(), _confidence(out, sym, mod)))
        n_mask = (length.float() * (T - 1 - s) / T).floor().long()
        if s == T - 1 or early_exit and bool((n_mask == 0).all()):  # no host sync unless asked to exit early
            return sym, mod
        ranked = torch.where(positions < length[:, None], conf, torch.full_like(conf, float("inf")))
        order = ranked.argsort(1)  # least confident first
        rank = torch.empty_like(order)
        rank.scatter_(1, order, positions.expand(b, n).contiguous())
        remask = rank < n_mask[:, None]
        sym, mod = sym.masked_fill(remask, MASK), mod.masked_fill(remask, MASK)
    return sym, mod
