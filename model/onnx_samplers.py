"""GryphOne's samplers and the token recognizers' greedy loop in NumPy, around one decoder-step function.

They mirror model/gryphone/diffusion.py and the recognizers' greedy searches step for step, so an exported model
decodes what the PyTorch one does: the same argmax, PAD truncation and re-mask rules, and for the
random re-mask sampler the same positions (diffusion.remask_noise: NumPy's PCG64 from the seed alone,
the same row for every sample).

`step(symbols, modifiers) -> (symbol logits, modifier logits)` [B, L, V] is one refinement step;
`step(token [B, 1], position [1], state) -> (logits [B, V], next state)` one token step of a token
recognizer, its state a tuple of arrays the loop only carries (beam search also picks rows of it:
`reorder(state, src)`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tokenizer.vocab import SATVocab, TokenVocab

from .sampler_noise import remask_noise

PAD, MASK = SATVocab.PAD, SATVocab.MASK
assert PAD == TokenVocab.PAD  # both label kinds pad with 0
BOS, EOS = TokenVocab.BOS, TokenVocab.EOS

SATStep = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
StateStep = Callable[[np.ndarray, np.ndarray, tuple], tuple[np.ndarray, tuple]]
Reorder = Callable[[tuple, np.ndarray], tuple]
BeamHyp = tuple[float, list[int], list[float]]   # (normalized log p, ids from BOS to EOS, each token's p)


def no_mask(logits: np.ndarray) -> np.ndarray:
    """MASK is an input-only token: never predicted."""
    out = logits.astype(np.float32, copy=True)
    out[..., MASK] = -np.inf
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """As torch's log_softmax over the last axis (the repair ranks its edits by these)."""
    m = logits.max(-1, keepdims=True)
    return logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))


def truncate_after_pad(sym: np.ndarray, mod: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    after = np.cumsum(sym == PAD, axis=1) > 0
    return np.where(after, PAD, sym), np.where(after, PAD, mod)


def remask(step: SATStep, batch: int, length: int, T: int, seed: int,
           keep_visible: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """diffusion.sample_remask: (symbols, modifiers, the last step's logits)."""
    noise = remask_noise(seed, T, length)
    sym = np.full((batch, length), MASK, dtype=np.int64)
    mod = sym.copy()
    for t in range(T, 0, -1):
        logits = step(sym, mod)
        p_sym, p_mod = no_mask(logits[0]).argmax(-1), no_mask(logits[1]).argmax(-1)
        if keep_visible:
            p_sym, p_mod = np.where(sym == MASK, p_sym, sym), np.where(mod == MASK, p_mod, mod)
        p_sym, p_mod = truncate_after_pad(p_sym, p_mod)
        if t == 1:
            return p_sym, p_mod, logits
        drawn = np.broadcast_to(noise[T - t] < np.float32((t - 1) / T), (batch, length))
        sym, mod = np.where(drawn, MASK, p_sym), np.where(drawn, MASK, p_mod)
    raise AssertionError("unreachable")


def mask_predict(step: SATStep, batch: int, length: int,
                 T: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """diffusion.sample_mask_predict: keep confident tokens, re-mask the least confident."""
    sym = np.full((batch, length), MASK, dtype=np.int64)
    mod = sym.copy()
    conf = np.zeros((batch, length), dtype=np.float32)
    positions = np.arange(length)[None]
    for s in range(T):
        masked = sym == MASK
        logits = step(sym, mod)
        ps_all, ms_all = softmax(no_mask(logits[0])), softmax(no_mask(logits[1]))
        sym = np.where(masked, ps_all.argmax(-1), sym)
        mod = np.where(masked, ms_all.argmax(-1), mod)
        conf = np.where(masked, ps_all.max(-1) * ms_all.max(-1), conf)
        sym, mod = truncate_after_pad(sym, mod)
        has_pad = (sym == PAD).any(1)
        n_len = np.where(has_pad, (sym == PAD).argmax(1), length)
        n_mask = np.floor(n_len.astype(np.float32) * (T - 1 - s) / T).astype(np.int64)
        if (n_mask == 0).all():
            if s == T - 1:
                return sym, mod, logits
            continue
        ranked = np.where(positions < n_len[:, None], conf, np.inf)
        rank = np.empty_like(positions.repeat(batch, 0))
        np.put_along_axis(rank, ranked.argsort(1, kind="stable"), positions.repeat(batch, 0), 1)
        drawn = rank < n_mask[:, None]
        sym, mod = np.where(drawn, MASK, sym), np.where(drawn, MASK, mod)
    return sym, mod, logits


def greedy(step: StateStep, batch: int, max_len: int, state: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The token recognizers' greedy loop with their decoder state carried between steps (the AR
    baseline's and PosFormer's caches, PosFormer's coverage, HVT's LSTM state): (ids [B, <=max_len]
    BOS ... EOS PAD, each written token's probability [B, width - 1])."""
    out = np.full((batch, 1), BOS, dtype=np.int64)
    probs = np.zeros((batch, 0), dtype=np.float32)
    done = np.zeros(batch, dtype=bool)
    for pos in range(max_len - 1):
        logits, state = step(out[:, -1:], np.array([pos], dtype=np.int64), state)
        nxt = np.where(done, PAD, logits.argmax(-1))
        p = softmax(logits.astype(np.float32))
        probs = np.concatenate([probs, np.take_along_axis(p, nxt[:, None], 1)], 1)
        out = np.concatenate([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    return out, probs


def beam(step: StateStep, width: int, max_len: int, state: tuple[np.ndarray, ...], reorder: Reorder,
         length_penalty: float = 1.0, start: int = BOS, stop: int = EOS) -> list[BeamHyp]:
    """model.search.beam over one image's `width` rows, step for step (the same 2 x width candidates,
    the same stopping rule, scores in float32 as there): the finished hypotheses in the order they
    ended, each with the probability its tokens had when chosen (what the PyTorch path reads back in
    one teacher-forced pass). The best is `max(hyps, key=score)`, as model.search.best."""
    seqs = np.full((width, 1), start, dtype=np.int64)
    probs = np.zeros((width, 0), dtype=np.float32)
    scores = np.zeros(width, dtype=np.float32)
    scores[1:] = -np.inf  # all rows start identical: expand the first only
    finished: list[BeamHyp] = []
    for pos in range(max_len - 1):
        logits, state = step(seqs[:, -1:], np.array([pos], dtype=np.int64), state)
        logp = log_softmax(logits.astype(np.float32))
        vocab = logp.shape[1]
        cand = (scores[:, None] + logp).reshape(-1)
        order = np.argsort(-cand, kind="stable")[: min(2 * width, cand.size)]
        src, tok, score = [], [], []
        for rank, j in enumerate(order.tolist()):
            s = float(cand[j])
            if s == -np.inf or len(src) == width:
                break
            row, t = divmod(j, vocab)
            if t != stop:
                src.append(row), tok.append(t), score.append(s)
            elif rank < width:
                finished.append((s / (pos + 1) ** length_penalty, [*seqs[row].tolist(), stop],
                                 [*probs[row].tolist(), float(np.exp(logp[row, t]))]))
        if len(finished) >= width or not src:
            break
        while len(src) < width:  # dead copies keep the rows' shape
            src.append(src[0]), tok.append(tok[0]), score.append(-np.inf)
        rows, toks = np.array(src), np.array(tok)
        state = reorder(state, rows)
        chosen = np.exp(logp[rows, toks]).astype(np.float32)
        seqs = np.concatenate([seqs[rows], toks[:, None]], 1)
        probs = np.concatenate([probs[rows], chosen[:, None]], 1)
        scores = np.array(score, dtype=np.float32)
    if not finished:  # out of length: the best open hypothesis
        b = int(scores.argmax())
        finished.append((float(scores[b]) / (seqs.shape[1] - 1) ** length_penalty, seqs[b].tolist(),
                         probs[b].tolist()))
    return finished


# (step, its start state, reorder) over `rows` rows of one image, in one reading direction
Reader = Callable[[int], tuple[StateStep, tuple, Reorder]]


def bidirectional_beam(forward: Reader, backward: Reader, width: int, max_len: int,
                       length_penalty: float = 1.0) -> BeamHyp:
    """model.search.bidirectional_best in NumPy: a beam each way, every distinct candidate read again
    both ways, the best mean length-normalized log p; returned with its tokens' left-to-right
    probabilities (what the confidence is read from)."""
    step, state, reorder = forward(width)
    ahead = beam(step, width, max_len, state, reorder, length_penalty)
    step, state, reorder = backward(width)
    back = beam(step, width, max_len, state, reorder, length_penalty, start=EOS, stop=BOS)
    cands, seen = [], set()
    for ids in [h[1] for h in ahead] + [_flip(h[1]) for h in back]:
        if ids[-1] != EOS:          # cut off by the length limit: EOS in place of its last token
            ids = [*ids[:-1], EOS]
        if tuple(ids) not in seen:
            seen.add(tuple(ids)), cands.append(ids)
    rows = np.full((len(cands), max(map(len, cands))), PAD, dtype=np.int64)
    reversed_rows = np.full_like(rows, PAD)
    for j, ids in enumerate(cands):
        rows[j, : len(ids)], reversed_rows[j, : len(ids)] = ids, [EOS, *ids[-2:0:-1], BOS]
    fwd = token_logp(*forward(len(cands))[:2], rows)
    both = fwd.sum(1) + token_logp(*backward(len(cands))[:2], reversed_rows).sum(1)
    lengths = np.array([len(ids) - 1 for ids in cands], dtype=np.float32)
    scores = both / (2 * lengths ** np.float32(length_penalty))
    j = int(np.argmax(scores))
    return float(scores[j]), cands[j], np.exp(fwd[j, : len(cands[j]) - 1]).tolist()


def token_logp(step: StateStep, state: tuple, ids: np.ndarray) -> np.ndarray:
    """log p of ids[:, j + 1] given ids[:, :j + 1] [N, L - 1] (0 where PAD), fed through the step one
    position at a time (model.search.sequence_logp's teacher forcing)."""
    out = np.zeros((ids.shape[0], ids.shape[1] - 1), dtype=np.float32)
    for pos in range(ids.shape[1] - 1):
        logits, state = step(ids[:, pos: pos + 1], np.array([pos], dtype=np.int64), state)
        nxt = ids[:, pos + 1]
        out[:, pos] = np.where(nxt == PAD, 0.0, np.take_along_axis(log_softmax(logits.astype(np.float32)),
                                                                    nxt[:, None], 1)[:, 0])
    return out


def _flip(ids: list[int]) -> list[int]:
    """model.search.flip_r2l: EOS tn..t1 BOS (or cut off without BOS) as BOS t1..tn EOS."""
    body = ids[1:-1] if ids[-1] == BOS else ids[1:]
    return [BOS, *body[::-1], EOS]
