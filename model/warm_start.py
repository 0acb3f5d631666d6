"""Starting weights from files: an encoder from any ViT weight file, GryphOne's decoder from an AR
baseline checkpoint. Both refuse what does not fit with a message naming the file."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from .checkpoint import CheckpointError, load_checkpoint, read_specs
from .encoder import ViTEncoder
from .encoder_init import init_encoder


def encoder_from_file(encoder: ViTEncoder, path: str | Path, log: Callable[[str], None] = print) -> dict:
    info = init_encoder(encoder, path)
    log(f"[train] encoder starts from {path} ({info['kind']}: {info['loaded']} tensors"
        + (f", {len(info['unused'])} unused" if info["unused"] else "") + ")")
    return info


def decoder_from_ar(model, path: str | Path, log: Callable[[str], None] = print) -> dict:
    """Start GryphOne's decoder (and its auxiliary reader) from a trained AR baseline's decoder.

    The blocks have the same shape (self-attention, cross-attention to the same memory, MLP), so the
    AR decoder's knowledge of where to look in the image carries over; symbol embeddings and head rows
    are copied by token string (a SAT symbol is a LaTeX token; PAD takes EOS's head row, as both end
    the label), a modifier's embedding is the sum of its brace/script tokens'. Returns counts of what
    was copied; raises CheckpointError/ValueError naming the file when it cannot."""
    dec = model.decoder
    if dec.shared_table or dec.pos_kind != "learned" or dec.block_kind != "prenorm":
        raise ValueError(f"{path}: model.decoder_init copies an AR decoder into ours, which needs dec_pos=learned, "
                         "dec_shared_table=false and dec_block=prenorm (the official layout has no AR counterpart)")
    state = load_checkpoint(path)
    kind, _, _, labels = read_specs(state, path)
    if kind != "ar":
        raise CheckpointError(f"{path}: model.decoder_init needs an AR baseline checkpoint (this one is {kind!r})")
    copied = _copy_decoder(model, labels.vocab, state.get("ema") or state["model"], path)
    log(f"[train] decoder starts from {path}'s AR decoder ({copied['blocks']} block tensors, "
        f"{copied['symbols']} symbols, {copied['modifiers']} modifiers)")
    return copied


def _copy_decoder(model, ar_vocab, weights: dict, path) -> dict:
    vocab = model.labels.vocab
    tok = weights["decoder.tok_emb.weight"]
    head_w, head_b = weights["decoder.head.weight"], weights["decoder.head.bias"]
    token_id = {t: i for i, t in enumerate(ar_vocab.tokens)}
    copied = {"blocks": 0, "symbols": 0, "modifiers": 0}
    targets = [model.decoder] + ([model.reader] if getattr(model, "reader", None) is not None else [])
    blocks = {k[len("decoder."):]: v for k, v in weights.items() if k.startswith(("decoder.blocks.", "decoder.norm."))}
    with torch.no_grad():
        for dec in targets:
            own = dec.state_dict()
            bad = [k for k, v in blocks.items() if k not in own or own[k].shape != v.shape]
            if bad:
                raise CheckpointError(f"{path}: its decoder does not fit this one ({bad[:3]}; check dec_dim, "
                                      f"dec_depth, enc_dim)")
            dec.load_state_dict(blocks, strict=False)
            copied["blocks"] = len(blocks)
            n = min(dec.pos_emb.shape[1], weights["decoder.pos_emb"].shape[1])
            dec.pos_emb[:, :n] = weights["decoder.pos_emb"][:, :n]
            for i, sym in enumerate(vocab.symbols):
                j = token_id.get(sym) if i >= 3 else (ar_vocab.EOS if i == vocab.PAD else None)
                if j is None:
                    continue
                dec.sym_emb.weight[i] = tok[j]
                dec.sym_head.weight[i], dec.sym_head.bias[i] = head_w[j], head_b[j]
                copied["symbols"] += 1
            for i, (pre, post) in enumerate(vocab.modifiers[3:], start=3):
                ids = [token_id[t] for t in (*pre, *post) if t in token_id]
                if ids:
                    dec.mod_emb.weight[i] = tok[ids].sum(0)
                    copied["modifiers"] += 1
    return copied
