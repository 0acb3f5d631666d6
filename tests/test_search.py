"""model.search.greedy over each token recognizer's step function reads what a decoder that recomputes
the whole prefix at every step (no cache, no carried state: the teacher-forced pass) reads; the AR
baseline's fixed-shape step (preallocated cache) reads what its growing cache reads."""
from __future__ import annotations

import pytest
import torch

from builders import tiny_model, token_labels
from model import DecodeSpec
from model.ar.decoder import cached_step, static_step
from model.search import BOS, EOS, PAD, beam, best, greedy, with_reorder

B, MAX_LEN = 6, 12


def model_of(kind: str, **kw):
    torch.manual_seed(0)
    model = tiny_model(kind, canvas=(32, 64), labels=token_labels(15), max_len=MAX_LEN, **kw).eval()
    with torch.no_grad():  # a sharper random head (outputs vary) and a likelier EOS (some rows end early)
        model.decoder.head.weight.mul_(8)
        model.decoder.head.bias[EOS] += 1.5
    return model


def images() -> torch.Tensor:
    return torch.rand(B, 1, 32, 64, generator=torch.Generator().manual_seed(3))


def recompute_greedy(next_scores) -> torch.Tensor:
    """Greedy by rescoring the whole prefix each step: next_scores(prefix [B, p]) -> [B, V]."""
    out = torch.full((B, 1), BOS, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(MAX_LEN - 1):
        nxt = next_scores(out).argmax(-1).masked_fill(done, PAD)
        out = torch.cat([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    return out


def prefix_scorer(model):
    """The recognizer's teacher-forced pass over a prefix, last position's scores."""
    with torch.no_grad():
        if model.kind == "ar":
            kv = model.decoder.memory_kv(model.encoder(images()))
            return lambda prefix: model.decoder(prefix, kv)[:, -1]
        if model.kind == "posformer":
            kv = model.decoder.stack.memory_kv(model.encode(images()))

            def posformer(prefix):  # keep: whether each emitted token counts (the last one's is not read yet)
                keep = torch.cat([model.keep[prefix[:, 1:]], torch.ones(B, 1, dtype=torch.bool)], 1)
                return model.decoder(prefix, kv, keep)[:, -1]
            return posformer
        memory, state = model.start(images())
        dummy = torch.full((B, 1), PAD, dtype=torch.long)
        return lambda prefix: model.decoder.teacher_forced(torch.cat([prefix, dummy], 1), state, memory)[0][:, -1]


@pytest.mark.parametrize("kind,kw", [("ar", {}), ("posformer", {}), ("posformer", {"encoder": "vit"}),
                                     ("posformer", {"attn_correction": "none"}), ("hvt", {})])
def test_greedy_over_the_step_reads_what_recomputing_the_prefix_reads(kind, kw):
    model = model_of(kind, **kw)
    with torch.no_grad():
        fast = model.decode_ids(images(), DecodeSpec("greedy"))
        slow = recompute_greedy(prefix_scorer(model))
    assert torch.equal(fast, slow), (fast, slow)
    assert (fast[:, -1] == EOS).any() or fast.shape[1] == MAX_LEN
    for row in fast.tolist():  # PAD, and only PAD, after a row's EOS
        if EOS in row:
            assert set(row[row.index(EOS) + 1:]) <= {PAD}


def test_the_fixed_shape_ar_step_reads_what_the_growing_cache_reads():
    model = model_of("ar")
    with torch.no_grad():
        kv = model.decoder.memory_kv(model.encoder(images()))
        grown, fixed = cached_step(model.decoder, kv), static_step(model.decoder, kv)
        last = torch.full((B,), BOS, dtype=torch.long)
        for pos in range(MAX_LEN - 1):
            a, b = grown(last, pos), fixed(last, pos)
            assert torch.allclose(a, b, atol=1e-5), pos
            last = a.argmax(-1)
        assert torch.equal(greedy(cached_step(model.decoder, kv), B, MAX_LEN, "cpu"),
                           greedy(static_step(model.decoder, kv), B, MAX_LEN, "cpu"))
        eager = model.decode_ids(images(), DecodeSpec("greedy"))
        model.static_decoding = True  # what train.compiled.compile_for_decoding switches on
        assert torch.equal(model.decode_ids(images(), DecodeSpec("greedy")), eager)


def prefix_step(score_rows, width: int):
    """A beam step with no carried state: it keeps every row's whole prefix and rescores it each call,
    so its `reorder` only reorders prefixes (what a carried cache or coverage must reproduce)."""
    rows = [torch.full((width, 0), 0, dtype=torch.long)]

    def step(last, pos):
        rows[0] = torch.cat([rows[0], last[:, None]], 1)
        return score_rows(rows[0])

    def reorder(src):
        rows[0] = rows[0][src]
    return with_reorder(step, reorder)


def one_image_scorer(model, i: int, width: int):
    """The teacher-forced pass of image i over `width` prefixes: last position's log-probabilities."""
    img = images()[i: i + 1]
    if model.kind == "ar":
        kv = [(k.expand(width, -1, -1, -1), v.expand(width, -1, -1, -1))
              for k, v in model.decoder.memory_kv(model.encoder(img))]
        return lambda prefix: model.decoder(prefix, kv)[:, -1].float().log_softmax(-1)
    if model.kind == "posformer":
        kv = [(k.expand(width, -1, -1, -1), v.expand(width, -1, -1, -1))
              for k, v in model.decoder.stack.memory_kv(model.encode(img))]

        def posformer(prefix):
            keep = torch.cat([model.keep[prefix[:, 1:]], torch.ones(width, 1, dtype=torch.bool)], 1)
            return model.decoder(prefix, kv, keep)[:, -1].float().log_softmax(-1)
        return posformer
    memory, state = model.start(img)
    memory, state = memory.expand(width), state.select(torch.zeros(width, dtype=torch.long))
    dummy = torch.full((width, 1), PAD, dtype=torch.long)
    return lambda prefix: model.decoder.teacher_forced(torch.cat([prefix, dummy], 1), state, memory)[0][:, -1]


@pytest.mark.parametrize("kind,kw", [("ar", {}), ("posformer", {}), ("posformer", {"encoder": "vit"}),
                                     ("hvt", {})])
def test_beam_over_the_carried_state_reads_what_recomputing_the_prefix_reads(kind, kw):
    """One beam search for every token recognizer: its carried state (cache, coverage, LSTM), reordered
    with the survivors, gives the hypotheses that rescoring whole prefixes gives; width 1 is greedy."""
    model = model_of(kind, **kw)
    width = 3
    with torch.no_grad():
        fast = model.decode_ids(images(), DecodeSpec("beam", beam=width))
        for i in range(B):
            ref = best(beam(prefix_step(one_image_scorer(model, i, width), width), width, MAX_LEN, "cpu"))
            row = fast[i][: len(ref)]
            assert torch.equal(row, ref) and set(fast[i][len(ref):].tolist()) <= {PAD}, (i, fast[i], ref)
        greedy_rows = model.decode_ids(images(), DecodeSpec("greedy"))
        for i in range(B):  # the search itself at width 1 (decode_ids sends beam 1 to greedy)
            one = best(beam(prefix_step(one_image_scorer(model, i, 1), 1), 1, MAX_LEN, "cpu"))
            assert torch.equal(greedy_rows[i][: len(one)], one), (i, greedy_rows[i], one)
