"""PosFormer (Guan et al., ECCV 2024): an encoder-decoder over LaTeX tokens, trained jointly on position-
forest recognition, with implicit attention correction (IAC) in the decoder.

- Encoder: CoMER's DenseNet-B (`encoder="densenet"`, model/posformer/densenet.py) or the project's ViT
  (`encoder="vit"`, the ViTConfig fields) so every recognizer can be compared on one encoder; the
  memory is [B, N, dec_dim].
- Decoder: post-norm transformer layers whose cross-attention is corrected by the coverage of earlier
  steps (model/posformer/arm.py): `attn_correction="arm"` is CoMER's refinement, "iac" PosFormer's (structure
  tokens add nothing to the coverage), "none" a plain decoder.
- Position forest (training only, `forest_weight` > 0): every token's path over {M, L, R}
  (model/posformer/token_forest.py) gives a nesting level (capped at `forest_levels` - 1) and a relation (its
  last step). As in the official code, the position branch is a second decoder pass whose input is
  the position identifiers (one-hot steps -> Linear -> GELU -> LayerNorm, plus the same 1D positions)
  instead of the tokens; from step t it predicts the level and relation of token t + 1 with two small
  MLP heads (CE). Its stack is its own (`forest_decoder="separate"`, the official code) or the token
  decoder's (`"shared"`). Identifiers are unknown at inference, so nothing of the branch runs when
  decoding. L = CE + forest_weight * (CE_level + CE_relation); the official code uses 0.25 per term.
- `bidirectional`: the label is learned left-to-right and right-to-left (EOS ... BOS) by the same
  decoder, and beam search reranks both directions' candidates by both (CoMER); greedy reads L2R.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from datasets_prep.render_spec import RenderSpec
from tokenizer import LatexError, tokenize
from tokenizer.label_spec import LabelSpec
from tokenizer.vocab import TokenVocab

from ..encoder import ViTConfig, build_vit, vit_flops
from ..errors import RecognizerConfigError
from ..layers import decoder_flops, sincos_1d
from ..recognizer import DecodeSpec, Recognizer, RecognizerConfig
from ..search import TokenSteps, kv_rows, reverse_ids, reverse_like, search_ids
from ..warm_start import encoder_from_file
from .decoder import CoverageDecoder, TokenDecoder
from .densenet import DenseNetEncoder, densenet_flops
from .search import PAD, coverage_step, token_logp, token_probs
from .token_forest import IGNORE, RELATIONS, is_structure_token, path_code, token_forest, token_paths

CORRECTIONS = ("iac", "arm", "none")


@dataclass
class PosFormerConfig(RecognizerConfig, ViTConfig):
    kind: str = "posformer"
    encoder: str = "densenet"             # "densenet" (CoMER's DenseNet-B) | "vit" (the ViTConfig fields)
    growth_rate: int = 24                 # DenseNet-B
    dense_layers: int = 16                # bottleneck layers per dense block (3 blocks)
    dense_dropout: float = 0.2
    dec_dim: int = 256                    # d_model (also the DenseNet projection's width)
    dec_depth: int = 3
    dec_heads: int = 8
    dec_ff: int = 1024
    dropout: float = 0.3
    attn_correction: str = "iac"          # "iac" | "arm" | "none"
    arm_channels: int = 32                # the refinement conv's width (CoMER's dc)
    forest_weight: float = 0.25           # 0: no position-forest branch
    forest_levels: int = 5                # nesting-level classes 0..forest_levels-1 (official: 5)
    forest_decoder: str = "separate"      # "separate" (official) | "shared" (the token decoder's stack)
    bidirectional: bool = False           # L2R + R2L training, bidirectional beam reranking
    length_penalty: float = 1.0           # beam score = log p / length ** length_penalty


def structure_ids(vocab: TokenVocab) -> torch.Tensor:
    """bool [V]: the tokens IAC leaves out of the coverage (token_forest.is_structure_token)."""
    return torch.tensor([is_structure_token(t) for t in vocab.tokens], dtype=torch.bool)


class ForestBranch(nn.Module):
    """Training-only position recognition: identifier embeddings in, level and relation logits out."""

    def __init__(self, levels: int, dim: int, max_len: int, stack: CoverageDecoder | None):
        super().__init__()
        self.levels = levels
        self.embed = nn.Sequential(nn.Linear(4 * levels, dim), nn.GELU(), nn.LayerNorm(dim))
        self.register_buffer("pos", sincos_1d(max_len, dim)[None], persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.stack = stack   # None: the token decoder's
        self.level_head = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, levels))
        self.relation_head = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, len(RELATIONS)))

    def inputs(self, codes: torch.Tensor) -> torch.Tensor:
        """Path codes [B, T] (token_forest.path_code) -> [B, T, d]."""
        steps = (codes[..., None] // 4 ** torch.arange(self.levels, device=codes.device)) % 4
        onehot = F.one_hot(steps, 4).flatten(-2).to(self.pos.dtype)
        x = self.embed(onehot)
        return self.norm(x + self.pos[:, : codes.shape[1]].to(x.dtype))


class PosFormer(Recognizer):
    kind = "posformer"
    config_class = PosFormerConfig
    label_kind = "token"
    trims_padding = True
    """As the reference trains: its batches are padded to their longest label (PosFormer's and CoMER's
    `to_tgt_output`), and the attention refinement's BatchNorm (arm.py) takes its training statistics
    over those positions, PAD included; a fixed 160-token window would fill them with PAD. In eval
    mode the trimmed loss is the whole window's (tested)."""
    samplers = ("greedy", "beam")
    default_sampler = "greedy"
    title = "PosFormer"
    description = "PosFormer (coverage-corrected transformer decoder)"
    log_parts = ("pos_ce",)
    training_only = ("forest",)   # the position-forest branch is a training loss only

    def __init__(self, cfg: PosFormerConfig, render: RenderSpec, labels: LabelSpec):
        super().__init__(cfg, render, labels)
        _check(cfg)
        d, vocab = cfg.dec_dim, labels.vocab
        if cfg.encoder == "densenet":
            self.encoder = DenseNetEncoder(render.size, d, cfg.growth_rate, cfg.dense_layers, cfg.dense_dropout)
            grid = self.encoder.grid
            self.memory_proj = nn.Identity()
        else:
            self.encoder = build_vit(cfg, render.size)
            grid = self.encoder.grid
            self.memory_proj = nn.Sequential(nn.Linear(cfg.enc_dim, d), nn.LayerNorm(d))
        correction = cfg.attn_correction != "none"
        stack = CoverageDecoder(d, cfg.dec_depth, cfg.dec_heads, cfg.dec_ff, cfg.dropout, correction,
                                cfg.arm_channels, grid)
        self.decoder = TokenDecoder(len(vocab), cfg.max_len, d, stack)
        self.forest = None
        if cfg.forest_weight > 0:
            own = None if cfg.forest_decoder == "shared" else CoverageDecoder(
                d, cfg.dec_depth, cfg.dec_heads, cfg.dec_ff, cfg.dropout, correction, cfg.arm_channels, grid)
            self.forest = ForestBranch(cfg.forest_levels, d, cfg.max_len, own)
        keep = ~structure_ids(vocab) if cfg.attn_correction == "iac" else torch.ones(len(vocab), dtype=torch.bool)
        self.register_buffer("keep", keep, persistent=False)

    # --- training -------------------------------------------------------------------------------
    def targets(self, latex: str) -> dict[str, np.ndarray]:
        """tokens (BOS ... EOS PAD), level and relation of each token (IGNORE = -100 at BOS, EOS, PAD)
        and path (the identifier code the forest branch reads; 0 at BOS, EOS, PAD). A label the grammar
        rejects (tokenizer.validate) is still read by the recognizer and has no position targets."""
        n, levels = self.cfg.max_len, self.cfg.forest_levels
        out = {"tokens": self.labels.vocab.encode(latex, n), "level": np.full(n, IGNORE, dtype=np.int64),
               "relation": np.full(n, IGNORE, dtype=np.int64), "path": np.zeros(n, dtype=np.int64)}
        toks = tokenize(latex)
        try:
            paths = token_paths(toks)
        except LatexError:  # the grammar rejects it: still a token target, just no position targets
            return out
        level, relation = token_forest(toks, levels)
        out["level"][: len(level)], out["relation"][: len(relation)] = level, relation
        out["path"][1: len(toks) + 1] = [path_code(p, levels) for p in paths]
        return out

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        return self.memory_proj(self.encoder(images))

    def loss(self, images: torch.Tensor, batch: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
        memory = self.encode(images)
        ids, cols = batch["tokens"], {k: batch[k] for k in ("level", "relation", "path") if k in batch}
        if self.cfg.bidirectional:  # CoMER: both directions in one batch of 2B
            cols = {k: torch.cat([v, reverse_like(v, ids)]) for k, v in cols.items()}
            ids, memory = torch.cat([ids, reverse_ids(ids)]), torch.cat([memory, memory])
        inp, tgt = ids[:, :-1], ids[:, 1:]
        keep = self.keep[tgt]
        kv = self.decoder.stack.memory_kv(memory)
        logits = self.decoder(inp, kv, keep)
        ce = F.cross_entropy(logits.float().transpose(1, 2), tgt.masked_fill(tgt == PAD, IGNORE),
                             ignore_index=IGNORE)
        parts = {"loss": ce, "ce": ce.detach()}
        if self.forest is not None:
            pos_ce = self._forest_loss(memory, kv, cols, keep)
            parts["loss"] = ce + self.cfg.forest_weight * pos_ce
            parts["pos_ce"] = pos_ce.detach()
        return parts

    def _forest_loss(self, memory: torch.Tensor, kv, cols: dict, keep: torch.Tensor) -> torch.Tensor:
        stack = self.forest.stack or self.decoder.stack
        if self.forest.stack is not None:
            kv = stack.memory_kv(memory)
        h = stack(self.forest.inputs(cols["path"][:, :-1]), kv, keep)
        level = F.cross_entropy(self.forest.level_head(h).float().transpose(1, 2), cols["level"][:, 1:],
                                ignore_index=IGNORE)
        relation = F.cross_entropy(self.forest.relation_head(h).float().transpose(1, 2), cols["relation"][:, 1:],
                                   ignore_index=IGNORE)
        return level + relation

    def warm_start(self, log: Callable[[str], None] = print) -> None:
        if self.cfg.encoder_init:
            if self.cfg.encoder != "vit":
                raise RecognizerConfigError("model.encoder_init loads ViT weights; it needs model.encoder=vit")
            encoder_from_file(self.encoder, self.cfg.encoder_init, log)

    def flops_per_image(self, train: bool = True) -> float:
        cfg, size = self.cfg, self.render.size
        if cfg.encoder == "densenet":
            enc = densenet_flops(size, cfg.dec_dim, cfg.growth_rate, cfg.dense_layers)
            n = self.encoder.grid[0] * self.encoder.grid[1]
        else:
            enc, n = vit_flops(cfg, size)
            enc += 2 * n * cfg.enc_dim * cfg.dec_dim
        dec, mem_kv = decoder_flops(cfg.max_len, cfg.dec_dim, cfg.dec_depth, n, cfg.dec_dim, len(self.labels.vocab),
                                    cfg.dec_ff)
        if cfg.attn_correction != "none":  # the refinement convs, every layer but the first
            h = cfg.dec_heads
            dec += (cfg.dec_depth - 1) * 2.0 * cfg.max_len * n * (2 * h * cfg.arm_channels * 25 + cfg.arm_channels * h)
        if not train:
            return enc + dec + mem_kv
        passes = 2 if cfg.bidirectional else 1
        forest = (dec + (mem_kv if cfg.forest_decoder == "separate" else 0)) if self.forest is not None else 0
        return 3 * (enc + passes * (dec + mem_kv + forest))

    @classmethod
    def inert_keys(cls, cfg: "PosFormerConfig") -> dict[str, str]:
        """The encoder that is not chosen has keys too: the ViT's with the DenseNet and the other way."""
        vit = ("patch", "patch_w", "enc_dim", "enc_depth", "enc_heads", "conv_stem", "stem_blocks", "encoder_init")
        dense = ("growth_rate", "dense_layers", "dense_dropout")
        unused, used = (vit, dense) if cfg.encoder == "densenet" else (dense, vit)
        why = f"with model.encoder={cfg.encoder} (its keys: {', '.join(used)})"
        return {key: why for key in unused}

    def onnx_graphs(self):
        from functools import partial

        from ..onnx_graphs import OnnxGraphs, cached_step_examples
        from .onnx import PosFormerMemoryGraph, PosFormerStepGraph

        return OnnxGraphs("posformer-step", PosFormerMemoryGraph(self).eval(), PosFormerStepGraph(self).eval(),
                          partial(cached_step_examples, coverage=True), ("greedy",))

    # --- decoding -------------------------------------------------------------------------------
    @torch.no_grad()
    def decode_ids(self, images: torch.Tensor, spec: DecodeSpec, history: list | None = None) -> torch.Tensor:
        return self._decode(self.decoder.stack.memory_kv(self.encode(images)), spec)

    @torch.no_grad()
    def decode_scored(self, images: torch.Tensor, spec: DecodeSpec,
                      history: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoded ids and each decoded token's probability, read in one teacher-forced pass over
        them (the same coverage rules as the search), for greedy and beam outputs alike."""
        kv = self.decoder.stack.memory_kv(self.encode(images))
        ids = self._decode(kv, spec)
        return ids, token_probs(self.decoder, kv, ids, self.keep)

    def token_steps(self, images: torch.Tensor) -> TokenSteps:
        return self._steps(self.decoder.stack.memory_kv(self.encode(images)))

    def _steps(self, kv) -> TokenSteps:
        dec, keep = self.decoder, self.keep

        def forced(i: int, ids: torch.Tensor) -> torch.Tensor:
            return token_logp(dec, kv_rows(kv, i, ids.shape[0]), ids, keep)
        steps = TokenSteps(kv[0][0].shape[0], lambda: coverage_step(dec, kv, keep),
                           lambda i, width: coverage_step(dec, kv_rows(kv, i, width), keep), self.cfg.max_len,
                           kv[0][0].device, forced)
        # one decoder reads both ways: right to left is the same step started at EOS
        return replace(steps, r2l=steps) if self.cfg.bidirectional else steps

    def _decode(self, kv, spec: DecodeSpec) -> torch.Tensor:
        """Greedy, or a beam (reranked both ways by a bidirectional model: model.search.bidirectional_best)."""
        beam = spec.beam if spec.sampler == "beam" else 1
        return search_ids(self._steps(kv), beam, self.cfg.length_penalty, spec.bidirectional)


def _check(cfg: PosFormerConfig) -> None:
    """Clear errors for settings the registry's generic checks do not cover."""
    if cfg.encoder not in ("densenet", "vit"):
        raise RecognizerConfigError(f"model.encoder must be densenet or vit, got {cfg.encoder!r}")
    if cfg.attn_correction not in CORRECTIONS:
        raise RecognizerConfigError(f"model.attn_correction must be one of {', '.join(CORRECTIONS)}, "
                                    f"got {cfg.attn_correction!r}")
    if cfg.forest_decoder not in ("separate", "shared"):
        raise RecognizerConfigError(f"model.forest_decoder must be separate or shared, got {cfg.forest_decoder!r}")
    for name in ("growth_rate", "dense_layers", "dec_ff", "arm_channels", "forest_levels"):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RecognizerConfigError(f"model.{name} must be a positive integer, got {value!r}")
    if cfg.forest_weight < 0:
        raise RecognizerConfigError(f"model.forest_weight must be >= 0, got {cfg.forest_weight!r}")
    if cfg.encoder == "densenet" and cfg.dec_dim % 4:
        raise RecognizerConfigError(f"model.dec_dim must be a multiple of 4 for the 2D image positions, "
                                    f"got {cfg.dec_dim}")
