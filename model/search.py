"""Greedy and beam search over a step function: one of each for every token recognizer.

A recognizer decodes by handing `greedy` a step (CoMER's `DecodeModel` form): `step(last, pos)` takes
the token each row emitted last ([B] ids, BOS at pos 0) and returns the next token's scores [B, V]
(logits or log-probabilities: only their argmax is read), carrying whatever it needs between calls
(the AR baseline's key/value cache, PosFormer's cache and coverage, HVT's LSTM state and coverage).
model/onnx_samplers.greedy is the same loop in NumPy over the exported step graphs.

Stopping: a row that has emitted EOS writes PAD from then on; the loop ends when every row has ended
(one value read back from the device per step) or after max_len - 1 tokens.

Beam search takes the same step over `width` rows of one image, plus `step.reorder(src)`, which keeps
the carried state of rows `src` (the source hypothesis of each survivor; `with_reorder` attaches it).
Its rule is CoMER's: each step ranks the 2 x width best continuations; a stop token ends a hypothesis
only when it ranks within the top `width`, the others fill the beam; the search ends once `width`
hypotheses have ended (so width 1 is exactly greedy) or at max_len, where the open hypotheses are
scored as they are. Score = log p / (tokens after start) ** length_penalty.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from tokenizer.vocab import TokenVocab

PAD, BOS, EOS = TokenVocab.PAD, TokenVocab.BOS, TokenVocab.EOS
Step = Callable[[torch.Tensor, int], torch.Tensor]
Hyp = tuple[float, torch.Tensor]   # (length-normalized log-probability, ids from start to stop)


@dataclass(frozen=True)
class TokenSteps:
    """A token recognizer's decoding hook over one batch of encoded images (`Recognizer.token_steps`):
    `rows()` is a step over every image, one row each (greedy); `image(i, width)` is image i's step over
    `width` rows with `reorder` attached (beam). The encoder has run once when this is made, so a
    caller that combines several recognizers' steps (model/ensemble.py) pays for each encoder once.
    `forced(i, ids)`, where a decoder has it, is image i's log p of each next token of `ids` [N, L] in one
    teacher-forced pass ([N, L - 1]; what `sequence_logp` otherwise reads step by step). `r2l` is the
    same reading right to left (EOS ... BOS), for a bidirectional reader."""
    images: int
    rows: Callable[[], Step]
    image: Callable[[int, int], Step]
    max_len: int
    device: torch.device | str
    forced: Callable[[int, torch.Tensor], torch.Tensor] | None = None
    r2l: TokenSteps | None = None


def search_ids(steps: TokenSteps, beam_width: int = 1, length_penalty: float = 1.0,
               bidirectional: bool = True) -> torch.Tensor:
    """Greedy (width 1) or beam search over a TokenSteps: ids [B, <=max_len] (BOS ... EOS PAD). A beam
    over steps that can also read right to left (`steps.r2l`) reranks both directions' candidates
    (`bidirectional_best`) unless `bidirectional` is False."""
    if beam_width <= 1:
        return greedy(steps.rows(), steps.images, steps.max_len, steps.device)
    if bidirectional and steps.r2l is not None:
        return pad_rows([bidirectional_best(steps, i, beam_width, length_penalty) for i in range(steps.images)],
                        steps.device)
    return beam_per_image(steps.images, lambda i: steps.image(i, beam_width), beam_width, steps.max_len,
                          steps.device, length_penalty)


@torch.no_grad()
def bidirectional_best(steps: TokenSteps, i: int, width: int, length_penalty: float = 1.0) -> torch.Tensor:
    """CoMER's approximate joint search for image i: the candidates of a beam each way (`both_ways`), the
    best mean length-normalized log p of both readings wins. Why: a left-to-right beam commits to its
    prefix; the reversed reading judges each candidate's end as firmly as its start, and its own beam
    adds candidates the first one pruned."""
    cands, _, ahead, back = both_ways(steps, i, width, length_penalty)
    lengths = ((cands != PAD).sum(1) - 1).float()
    return cands[int(((ahead + back) / (2 * lengths ** length_penalty)).argmax())]


@torch.no_grad()
def both_ways(steps: TokenSteps, i: int, width: int, length_penalty: float = 1.0
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Image i's beam left to right (BOS ... EOS) and right to left (EOS ... BOS, `steps.r2l`, flipped
    back): the distinct candidates [N, L] (one cut off by the length limit ends with EOS), whether the
    left-to-right beam found each [N], and each one's summed log p read left to right and right to left [N]."""
    back = steps.r2l
    assert back is not None
    l2r = [h[1] for h in beam(steps.image(i, width), width, steps.max_len, steps.device,
                              length_penalty=length_penalty)]
    r2l = [flip_r2l(h[1]) for h in beam(back.image(i, width), width, steps.max_len, steps.device, start=EOS,
                                         stop=BOS, length_penalty=length_penalty)]
    rows = end_with_eos(pad_rows(l2r + r2l, steps.device))
    keep = unique_rows(rows)
    cands = rows[keep]
    found_l2r = torch.tensor([k < len(l2r) for k in keep], device=steps.device)  # the first copy of each is kept
    return cands, found_l2r, sequence_logp(steps, i, cands), sequence_logp(back, i, reverse_ids(cands))


@torch.no_grad()
def sequence_logp(steps: TokenSteps, i: int, ids: torch.Tensor) -> torch.Tensor:
    """Image i's sum of log p of ids[:, 1:] (PAD ignored) [N]: one teacher-forced pass where the decoder
    has one (`steps.forced`), else `ids` fed through a fresh step one position at a time."""
    return token_logp(steps, i, ids).masked_fill(ids[:, 1:] == PAD, 0.0).sum(1)


@torch.no_grad()
def token_logp(steps: TokenSteps, i: int, ids: torch.Tensor) -> torch.Tensor:
    """log p of ids[:, j + 1] given ids[:, :j + 1] [N, L - 1] for image i (see `sequence_logp`)."""
    if steps.forced is not None:
        return steps.forced(i, ids).float()
    return replay_logp(steps.image(i, ids.shape[0]), ids)


def unique_rows(rows: torch.Tensor) -> list[int]:
    """The indices of `rows` without repeats, the first of each kept in order (both beams often find the
    same answer)."""
    seen, keep = set(), []
    for j, r in enumerate(rows.tolist()):
        if tuple(r) not in seen:
            seen.add(tuple(r)), keep.append(j)
    return keep


@torch.no_grad()
def replay_logp(step: Step, ids: torch.Tensor) -> torch.Tensor:
    """log p(ids[:, j + 1] | ids[:, :j + 1]) [B, L - 1] read by feeding `ids` through a fresh step one
    position at a time: teacher forcing for a decoder that has no such pass of its own."""
    out = []
    for pos in range(ids.shape[1] - 1):
        out.append(step(ids[:, pos], pos).float().log_softmax(-1).gather(-1, ids[:, pos + 1, None])[:, 0])
    return torch.stack(out, 1) if out else ids.new_zeros((ids.shape[0], 0), dtype=torch.float)


def replay_probs(step: Step, ids: torch.Tensor) -> torch.Tensor:
    """p(ids[:, j + 1] | ids[:, :j + 1]) [B, L - 1] by `replay_logp`: the confidences of such a decoder."""
    return replay_logp(step, ids).exp()


def with_reorder(step: Step, reorder: Callable[[torch.Tensor], None]) -> Step:
    """`step` made usable by `beam`: reorder(src [R]) keeps the carried state of rows src."""
    step.reorder = reorder  # type: ignore[attr-defined]
    return step


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


@torch.no_grad()
def beam(step: Step, width: int, max_len: int, device: torch.device | str, *, start: int = BOS, stop: int = EOS,
         length_penalty: float = 1.0) -> list[Hyp]:
    """The finished hypotheses of one image whose step runs over `width` rows (see the module doc)."""
    seqs = torch.full((width, 1), start, dtype=torch.long, device=device)
    scores = torch.zeros(width, device=device)
    scores[1:] = float("-inf")  # all rows start identical: expand the first only
    finished: list[Hyp] = []
    for pos in range(max_len - 1):
        logp = step(seqs[:, -1], pos).float().log_softmax(-1)
        cand = (scores[:, None] + logp).view(-1)
        top, idx = cand.topk(min(2 * width, cand.numel()))
        src, tok, score = [], [], []
        for rank, (s, j) in enumerate(zip(top.tolist(), idx.tolist())):
            if s == float("-inf") or len(src) == width:
                break
            row, t = divmod(j, logp.shape[1])
            if t != stop:
                src.append(row), tok.append(t), score.append(s)
            elif rank < width:
                finished.append((s / (pos + 1) ** length_penalty, torch.cat([seqs[row], seqs.new_tensor([stop])])))
        if len(finished) >= width or not src:
            break
        while len(src) < width:  # dead copies keep the rows' shape
            src.append(src[0]), tok.append(tok[0]), score.append(float("-inf"))
        src_t, tok_t = torch.tensor(src, device=device), torch.tensor(tok, device=device)
        step.reorder(src_t)  # type: ignore[attr-defined]
        seqs = torch.cat([seqs[src_t], tok_t[:, None]], 1)
        scores = torch.tensor(score, device=device)
    if not finished:  # out of length: the best open hypothesis
        best = int(scores.argmax())
        finished.append((scores[best].item() / (seqs.shape[1] - 1) ** length_penalty, seqs[best]))
    return finished


def beam_per_image(images: int, step_for: Callable[[int], Step], width: int, max_len: int,
                   device: torch.device | str, length_penalty: float = 1.0) -> torch.Tensor:
    """The best `beam` hypothesis of each image (step_for(i): image i's step over `width` rows), padded."""
    return pad_rows([best(beam(step_for(i), width, max_len, device, length_penalty=length_penalty))
                     for i in range(images)], device)


def kv_rows(mem_kv, i: int, rows: int):
    """Image i's cross-attention keys/values ([(k, v)] per layer, [B, ...]) shared by `rows` rows (views)."""
    return [(k[i: i + 1].expand(rows, -1, -1, -1), v[i: i + 1].expand(rows, -1, -1, -1)) for k, v in mem_kv]


def best(hyps: list[Hyp]) -> torch.Tensor:
    return max(hyps, key=lambda h: h[0])[1]


def pad_rows(rows: list[torch.Tensor], device: torch.device | str) -> torch.Tensor:
    """Variable-length id rows -> [B, longest], PAD after each."""
    out = torch.full((len(rows), max(len(r) for r in rows)), PAD, dtype=torch.long, device=device)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


# --- right to left: the reversed reading a bidirectional decoder also learns ---------------------
def reverse_ids(ids: torch.Tensor) -> torch.Tensor:
    """BOS t1..tn EOS PAD... -> EOS tn..t1 BOS PAD... per row: the right-to-left reading."""
    return reverse_like(ids, ids, EOS, BOS)


def reverse_like(column: torch.Tensor, ids: torch.Tensor, first=None, last=None) -> torch.Tensor:
    """`column` [B, L] aligned with `ids`, its label positions 1..n reversed in place; `first`/`last`,
    when given, replace the values at position 0 and n + 1."""
    n = (ids != PAD).sum(1, keepdim=True) - 2                      # label tokens per row
    j = torch.arange(ids.shape[1], device=ids.device)[None]
    inside = (j >= 1) & (j <= n)
    out = column.gather(1, torch.where(inside, n + 1 - j, j))
    if first is not None:
        out[:, 0] = first
        out = out.scatter(1, n + 1, torch.full_like(n, last))
    return out


def flip_r2l(h: torch.Tensor) -> torch.Tensor:
    """A right-to-left hypothesis EOS tn..t1 BOS (or cut off without BOS) as BOS t1..tn EOS."""
    body = h[1:-1] if h[-1] == BOS else h[1:]
    return torch.cat([h.new_tensor([BOS]), body.flip(0), h.new_tensor([EOS])])


def end_with_eos(cands: torch.Tensor) -> torch.Tensor:
    """A hypothesis cut off by the length limit gets EOS in place of its last token, so both
    directions can score it."""
    n = (cands != PAD).sum(1)
    last = cands.gather(1, (n - 1)[:, None])[:, 0]
    fix = last != EOS
    cands = cands.clone()
    cands[fix, (n - 1)[fix]] = EOS
    return cands
